"""Random weights of a build seeded by the line that draws them (seeding.py), through
`build_target.build` on files: what must stay the same between two versions of a file,
and what must not change for the user's own seeding (review of the first version)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import torch

from torchscope.build_target import build


def weights(path: Path, name: str = "Net") -> dict[str, torch.Tensor]:
    torch.manual_seed(0)  # (as the runner and the CLI seed before a build)
    return {k: v.clone() for k, v in build(f"{path}:{name}").model.state_dict().items()}


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def differing(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], keys: list[str]) -> list[str]:
    """The keys among `keys` whose tensors differ."""
    return [k for k in keys if not torch.equal(a[k], b[k])]


NET = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            EXTRA
            self.fc1 = nn.Linear(8,16)
            self.head = nn.Linear(16, 4)
"""


def test_a_formatter_s_or_a_comment_s_edit_draws_the_same_weights(tmp_path):
    # (review: the key was the line's raw text: `nn.Linear(8,16)` → `nn.Linear(8, 16)` or a
    # comment added changed those layers' weights and every value after them)
    a = write(tmp_path / "a", "net.py", NET.replace("EXTRA", "pass"))
    b = write(
        tmp_path / "b",
        "net.py",
        NET.replace("EXTRA", "pass")
        .replace("nn.Linear(8,16)", "nn.Linear( 8, 16 )")
        .replace("nn.Linear(16, 4)", "nn.Linear(16, 4)  # the classifier"),
    )
    wa, wb = weights(a), weights(b)
    assert differing(wa, wb, list(wa)) == []


def test_a_layer_s_call_wrapped_over_lines_draws_the_weights_of_its_one_line(tmp_path):
    # (QA: `nn.Linear(\n    8, 16\n)`, as black wraps a long line, was keyed by its first
    # line alone, `nn.Linear(`: a formatter's edit, and other weights everywhere after it)
    one_line = NET.replace("EXTRA", "pass")
    wrapped = one_line.replace(
        "self.fc1 = nn.Linear(8,16)",
        "self.fc1 = nn.Linear(\n                8,\n                16,\n            )",
    )
    other = one_line.replace("nn.Linear(8,16)", "nn.Linear(\n                8, 16, bias=False)")
    wa = weights(write(tmp_path / "a", "net.py", one_line))
    assert differing(wa, weights(write(tmp_path / "b", "net.py", wrapped)), list(wa)) == []
    wc = weights(write(tmp_path / "c", "net.py", other))
    assert differing(wa, wc, ["fc1.weight"]) == ["fc1.weight"]  # (another call: other weights)


def test_an_init_helper_line_keys_each_shape_apart(tmp_path):
    # (review: nn.init calls pass the tensor as a keyword: no shape in the key, so a layer
    # of another shape inserted before shifted the count of one shared key)
    text = """
        from torch import nn

        def conv_bn(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3), nn.BatchNorm2d(o))

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                EXTRA
                self.body = conv_bn(16, 32)
                self.head = conv_bn(32, 8)
    """
    a = write(tmp_path / "a", "net.py", text.replace("EXTRA", "pass"))
    b = write(tmp_path / "b", "net.py", text.replace("EXTRA", "self.stem = conv_bn(16, 16)"))
    wa, wb = weights(a), weights(b)
    assert differing(wa, wb, [k for k in wa if k.startswith(("body.", "head."))]) == []


def test_an_rng_state_put_back_inside_the_build_is_no_seed_of_the_user_s(tmp_path):
    # (review: `torch.set_rng_state` puts back `initial_seed()` too: it was taken for the
    # user's own seed, and the layers after it were keyed by whatever ran before)
    text = """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(4, WIDTH)
                with torch.random.fork_rng():
                    torch.rand(3)
                self.b = nn.Linear(4, 4)
    """
    a = write(tmp_path / "a", "net.py", text.replace("WIDTH", "4"))
    b = write(tmp_path / "b", "net.py", text.replace("WIDTH", "5"))
    assert differing(weights(a), weights(b), ["b.weight", "b.bias"]) == []


def test_a_build_that_seeds_again_for_an_identical_copy_gets_one(tmp_path):
    # (review: the counts went on after the user's `torch.manual_seed(0)`: twins that must
    # start equal (RL, BYOL, teacher and student) differed, and such a build raised)
    path = write(
        tmp_path,
        "twin.py",
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(0)
                self.online = nn.Linear(8, 8)
                torch.manual_seed(0)
                self.target = nn.Linear(8, 8)
                assert torch.equal(self.online.weight, self.target.weight), "twins differ"
        """,
    )
    w = weights(path)
    assert torch.equal(w["online.weight"], w["target.weight"])


def test_an_imported_file_saved_since_the_last_build_is_keyed_by_its_new_text(tmp_path):
    # (review: linecache kept the text of the first build in a warm process: a comment
    # added on top of an imported file changed every weight it drew)
    layers = write(
        tmp_path,
        "seed_layers.py",
        "from torch import nn\n\ndef block():\n    return nn.Linear(4, 4)\n",
    )
    net = write(
        tmp_path,
        "net.py",
        """
        from torch import nn
        from seed_layers import block

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = block()
        """,
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        first = weights(net)
        layers.write_text("# a comment on top\n" + layers.read_text())
        sys.modules.pop("seed_layers", None)
        again = weights(net)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("seed_layers", None)
    assert differing(first, again, list(first)) == []


def test_a_mode_the_user_s_code_never_left_takes_this_one_out_with_it(tmp_path):
    # (review: a function mode entered at build and never left was popped in this mode's
    # place, and this one stayed on: every draw of the trace after it was reseeded)
    from torch.overrides import _get_current_function_mode_stack

    path = write(
        tmp_path,
        "pushy.py",
        """
        import torch
        from torch import nn

        class Pushy(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        def build():
            Pushy().__enter__()  # (a library that enters a mode and never leaves it)
            return nn.Linear(4, 4)
        """,
    )
    before = len(_get_current_function_mode_stack())
    build(f"{path}:build")
    assert len(_get_current_function_mode_stack()) == before


def test_two_keys_never_share_the_32_bits_the_generator_reads():
    # (review: the CPU generator reads 32 bits of a seed: two keys whose hashes agree there
    # drew the same numbers, ~1% of builds of 10,000 draws)
    from torchscope.seeding import SeedByLine

    mode = SeedByLine()
    seeds = {mode._seed_of(f"key {i}") for i in range(100_000)}
    assert len(seeds) == 100_000 and max(seeds) < 2**32
    assert mode._seed_of("key 7") == mode._seed_of("key 7")  # one key, one seed


def test_a_line_that_ends_in_a_comma_keeps_its_key():
    # (review: the rule that drops a formatter's trailing comma before a bracket dropped
    # the comma ending a line too: every `nn.Linear(8, 16),` line of an nn.Sequential got
    # other weights than before)
    from torchscope.seeding import _code

    assert _code("    nn.Linear(8, 16),\n") == "nn . Linear ( 8 , 16 ) ,"
    assert _code("nn.Linear(\n 8,\n 16,\n)") == "nn . Linear ( 8 , 16 )"
