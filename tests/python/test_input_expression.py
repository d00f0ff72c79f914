"""An expression for an input the trace was given as a value (a factory's example,
`example_input_array`): what the editor's input box starts with, to edit."""

from __future__ import annotations

import pytest
import torch

from torchscope.inputs import input_expression


def test_tensors_become_expressions_of_their_shape_and_kind() -> None:
    assert input_expression(torch.zeros(2, 16)) == "torch.randn(2, 16)"
    assert input_expression(torch.zeros(3)) == "torch.randn(3)"
    assert input_expression(torch.zeros(2, 3, dtype=torch.float16)) == (
        "torch.randn(2, 3, dtype=torch.float16)"
    )
    ids = torch.tensor([[5, 1, 7]])
    assert input_expression(ids) == "torch.randint(0, 8, (1, 3))"
    assert input_expression(torch.ones(2, dtype=torch.bool)) == "torch.ones(2, dtype=torch.bool)"
    assert input_expression(torch.tensor(1.5)) == "torch.randn(())"


def test_positionals_and_keywords_as_the_box_reads_them() -> None:
    x, ids = torch.zeros(4, 8), torch.zeros(1, 5, dtype=torch.long)
    assert input_expression((x, ids)) == "(torch.randn(4, 8), torch.randint(0, 1, (1, 5)))"
    assert input_expression([x]) == "(torch.randn(4, 8),)"
    assert input_expression({"input_ids": ids}) == "{'input_ids': torch.randint(0, 1, (1, 5))}"


def test_anything_else_has_none_and_nothing_raises() -> None:
    # (a review found a factory's uint16 or nested example failing the whole trace)
    assert input_expression(torch.zeros(3, dtype=torch.uint16)) is None
    jagged = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)
    assert input_expression(jagged) is None and input_expression((jagged,)) is None
    q = torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)
    assert input_expression(q) is None
    assert input_expression(torch.ones(2).to_sparse()) is None
    assert input_expression(object()) is None
    assert input_expression((torch.zeros(1), object())) is None
    assert input_expression(torch.zeros(2, dtype=torch.complex64)) is None
    assert input_expression(torch.zeros(2, device="meta")) == "torch.randn(2)"


def test_a_factory_or_example_input_no_expression_fits_still_traces(tmp_path) -> None:
    import subprocess
    import sys

    (tmp_path / "odd.py").write_text(
        "import torch\n"
        "from torch import nn\n"
        "class U16(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.example_input_array = torch.zeros(3, dtype=torch.uint16)\n"
        "    def forward(self, x):\n"
        "        return x.float() * 2\n"
        "class Ident(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.sin()\n"
        "def build():\n"
        "    return Ident(), torch.nested.nested_tensor(\n"
        "        [torch.ones(2), torch.ones(3)], layout=torch.jagged\n"
        "    )\n"
    )
    for target in ("U16", "build"):
        run = subprocess.run(
            [sys.executable, "-m", "torchscope", "summary", f"odd.py:{target}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr


def test_keyword_only_arguments_are_asked_for_as_a_dict() -> None:
    # (QA: the template was a tuple, which such a forward refuses: "takes 1 positional argument")
    import pytest
    from torch import nn

    from torchscope.inputs import GuessError, guess

    class KeywordsOnly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 2)

        def forward(self, *, x, y):
            return self.fc(x) + self.fc(y)

    with pytest.raises(GuessError) as raised:
        guess(KeywordsOnly())
    assert "give them as a dict of keywords" in str(raised.value)
    template = raised.value.guess
    assert template == "{'x': torch.randn(1, 6), 'y': torch.randn(1, 6)}", template
    KeywordsOnly()(**eval(template, {"torch": torch}))  # the template is a call that works


def test_a_positional_argument_and_a_keyword_only_one_are_asked_for_as_a_dict() -> None:
    # (QA: `forward(self, x, *, temperature)` got a tuple, which it refuses: "takes 2
    # positional arguments but 3 were given")
    import pytest
    from torch import nn

    from torchscope.inputs import GuessError, guess

    class Tempered(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 2)

        def forward(self, x, *, temperature):
            return self.fc(x / temperature)

    with pytest.raises(GuessError) as raised:
        guess(Tempered())
    template = raised.value.guess
    assert template == "{'x': torch.randn(1, 6), 'temperature': torch.randn(1, 6)}", template
    Tempered()(**eval(template, {"torch": torch}))  # a call that works


def test_a_dict_names_positional_only_arguments_too(tmp_path) -> None:
    # (review: `forward(self, x, /, *, t)` was asked for a dict, which its positional-only
    # `x` refused: "got some positional-only arguments passed as keyword arguments"; a tuple
    # failed as well. A dict's key naming a positional-only parameter gives it by position.)
    import subprocess
    import sys

    import pytest

    from torchscope.build_target import as_call
    from torchscope.inputs import GuessError, guess

    (tmp_path / "slashed.py").write_text(
        "import torch\n"
        "from torch import nn\n"
        "class Slashed(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(6, 2)\n"
        "    def forward(self, x, /, *, t):\n"
        "        return self.fc(x) * t\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        from slashed import Slashed  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    model = Slashed()
    with pytest.raises(GuessError) as raised:
        guess(model)
    template = raised.value.guess
    args, kwargs = as_call(eval(template, {"torch": torch}), model)
    assert len(args) == 1 and list(kwargs) == ["t"]
    model(*args, **kwargs)  # the guessed template, given as the input box gives it, runs
    run = subprocess.run(
        [sys.executable, "-m", "torchscope", "summary", "slashed.py:Slashed", "--input", template],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "Linear" in run.stdout


def test_positional_only_names_beside_kwargs_and_defaults() -> None:
    # (review: with `**extra` beside them every key stayed a keyword, and `x` was missing;
    # naming only `y` of `forward(self, x=None, y=None, /)` passed y as a keyword)
    from torch import nn

    from torchscope.build_target import as_call

    class Extra(nn.Module):
        def forward(self, x, /, *, t, **extra):
            return x * t + len(extra)

    class Defaults(nn.Module):
        def forward(self, x=None, y=None, /, *, t=1):
            return (y if x is None else x) * t

    one = torch.ones(2)
    args, kwargs = as_call({"x": one, "t": one, "other": 3}, Extra())
    assert len(args) == 1 and args[0] is one and list(kwargs) == ["t", "other"]
    assert torch.equal(Extra()(*args, **kwargs), one + 1)
    args, kwargs = as_call({"y": one}, Defaults())
    assert args == (None, one) and kwargs == {}
    assert torch.equal(Defaults()(*args, **kwargs), one)


def test_a_list_is_spread_only_over_as_many_arguments_as_the_forward_takes() -> None:
    # (QA: `--input "[torch.randn(1, 4), torch.randn(1, 4)]"` for `forward(self, xs)` was
    # spread: "takes 2 positional arguments but 3 were given"; `model([a, b])` works)
    from torch import nn

    from torchscope.build_target import as_call

    class Sums(nn.Module):
        def forward(self, xs):
            return sum(xs)

    class Two(nn.Module):
        def forward(self, a, b):
            return a + b

    class Many(nn.Module):
        def forward(self, *xs):
            return sum(xs)

    a, b = torch.ones(1, 4), torch.ones(1, 4)
    args, kwargs = as_call([a, b], Sums())
    assert len(args) == 1 and args[0] == [a, b] and kwargs == {}
    assert torch.equal(Sums()(*args), a + b)
    assert as_call([a, b], Two()) == ((a, b), {})  # (as example_input_array: spread)
    assert as_call([a, b, a], Many()) == ((a, b, a), {})


def test_each_key_of_a_batch_dict_gets_the_input_of_the_layer_that_reads_it() -> None:
    # (QA: `self.conv(batch["image"])` and `self.fc(batch["meta"])` both got the image
    # tensor the first layer takes, and the guess could never run)
    from torch import nn

    from torchscope.inputs import guess

    class DictNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.head = nn.Sequential(nn.Linear(5, 8), nn.ReLU())

        def forward(self, batch):
            img = self.conv(batch["image"]).mean(dim=(2, 3))
            return img + self.head(batch["meta"])

    g = guess(DictNet())
    assert "'meta': torch.randn(1, 5)" in g.expr, g.expr
    assert "'image': torch.randn(1, 3," in g.expr, g.expr
    (batch,) = eval(g.expr, {"torch": torch})
    DictNet()(batch)  # a guess that runs


def test_a_batch_dict_key_gets_its_layers_input_whatever_the_forward_calls_self() -> None:
    # (QA: `def forward(s, batch)` and `s.emb(batch["ids"])`: `ids` got the first layer's
    # float input and the Embedding raised; written with `self` it traced)
    from torch import nn

    from torchscope.inputs import guess

    class WithS(nn.Module):
        def __init__(s) -> None:  # noqa: N805 - as some code is written
            super().__init__()
            s.fc = nn.Linear(8, 8)
            s.emb = nn.Embedding(10, 8)

        def forward(s, batch):  # noqa: N805
            return s.fc(batch["x"]) + s.emb(batch["ids"])

    g = guess(WithS())
    assert "'ids': torch.randint(" in g.expr, g.expr
    (batch,) = eval(g.expr, {"torch": torch})
    WithS()(batch)


def test_the_other_inputs_tried_for_a_batch_dict_keep_each_key_s_own_input() -> None:
    # (review: when the guess failed, every alternative gave every key the first layer's
    # other sizes: `'meta': torch.randn(1, 3, 32, 32)`, none could run)
    from torch import nn

    from torchscope.inputs import alternatives

    class Fixed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.head = nn.Linear(4 * 30 * 30 + 8, 2)  # the image is 32 x 32
            self.meta = nn.Linear(5, 8)

        def forward(self, batch):
            img = self.conv(batch["image"]).flatten(1)
            return self.head(torch.cat([img, self.meta(batch["meta"])], 1))

    ran = []
    for expr in alternatives(Fixed()):
        assert "'meta': torch.randn(1, 5)" in expr or "'meta': torch.randn(2, 5)" in expr, expr
        try:
            Fixed()(*eval(expr, {"torch": torch}))
            ran.append(expr)
        except RuntimeError:
            pass
    assert any("torch.randn(1, 3, 32, 32)" in e for e in ran), ran


def test_the_other_inputs_for_a_forward_of_several_arguments_read_no_source(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (a batch dict is one argument: the source of a forward of several was parsed for none)
    from torch import nn

    from torchscope import inputs

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x, y):
            return self.conv(x) + y

    read = []
    real = inputs._forward_tree
    monkeypatch.setattr(inputs, "_forward_tree", lambda m: read.append(m) or real(m))
    assert inputs.alternatives(Two())  # the image sizes to try
    assert read == []
