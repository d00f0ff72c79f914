"""`site` and `defn` point at real lines, and at the right ones (checked against the source)."""

from __future__ import annotations

import inspect
import linecache
import os
import warnings

import pytest
import torch
import zoo
from conftest import get_traced

import torchscope

ZOO_FILE = os.path.abspath(zoo.__file__)
TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_SHOW_BEFORE = warnings._showwarnmsg

# Python operators reach a TorchFunctionMode as the Tensor method (`a * b` → Tensor.mul)
OPERATOR_TOKENS = {
    "mul": ("*",),
    "add": ("+",),
    "sub": ("-",),
    "div": ("/",),
    "truediv": ("/",),
    "matmul": ("@",),
    "getitem": ("[",),
    "setitem": ("[", "="),
    "gt": (">",),
    "lt": ("<",),
    "ge": (">=",),
    "le": ("<=",),
    "eq": ("==",),
    "ne": ("!=",),
    "neg": ("-",),
    "pow": ("**",),
    "iadd": ("+=",),
    "imul": ("*=",),
    "bool": ("if ", "while ", " and ", " or ", "not "),
    "add_": ("+=",),
    "sub_": ("-=",),
    "mul_": ("*=",),
    "div_": ("/=",),
    "floordiv": ("//",),
}
# callables that transformers stores under another attribute name (`self.act = F.gelu`)
ALIASES = {"gelu": ("act",), "silu": ("act",), "relu": ("act",)}


def _line(site) -> str:
    return linecache.getline(site.file, site.line)


def _error_graphs():
    out = []
    for name, exc_type in zoo.ERRORS.items():
        model, args, kwargs = zoo.build(name)
        with pytest.raises(exc_type) as info:
            torchscope.trace(model, *args, **kwargs)
        out.append(info.value.torchscope_graph)
    return out


def test_every_site_is_a_real_line(traced):
    for n in traced.graph.nodes:
        for where, site in (("site", n.site), ("defn", n.defn)):
            if site is None:
                continue
            assert os.path.isabs(site.file), (n.name, where, site)
            assert os.path.isfile(site.file), (n.name, where, site)
            lines = linecache.getlines(site.file)
            assert 1 <= site.line <= len(lines), (n.name, where, site, len(lines))
            assert lines[site.line - 1].strip(), (n.name, where, site, "blank line")


def test_every_op_and_module_has_a_site(traced):
    missing = [
        (n.kind, n.name)
        for n in traced.graph.nodes
        if n.kind in ("op", "module") and n.site is None
    ]
    assert not missing


def test_sites_never_point_into_torchscope_or_call_machinery(traced):
    pkg = os.path.dirname(os.path.abspath(torchscope.__file__)) + os.sep
    machinery = [
        TORCH_DIR + p for p in ("nn/modules/module.py", "overrides.py", "nn/functional.py")
    ]
    for n in traced.graph.nodes:
        if n.site is None:
            continue
        assert not n.site.file.startswith(pkg), (n.kind, n.name, n.site)
        assert not any(n.site.file.startswith(m) for m in machinery), (n.kind, n.name, n.site)


def test_module_defn_is_its_class_statement(traced):
    bad = {}
    for n in zoo.module_nodes(traced.graph):
        assert n.defn is not None, n.path
        text = _line(n.defn)
        if f"class {n.name}" not in text:
            bad[n.name] = f"{os.path.basename(n.defn.file)}:{n.defn.line}: {text.strip()!r}"
    assert not bad, f"defn does not point at the class statement: {bad}"


def _token_ok(name: str, text: str) -> bool:
    if name in text:
        return True
    return any(tok in text for tok in OPERATOR_TOKENS.get(name, ()) + ALIASES.get(name, ()))


def test_zoo_op_sites_point_at_the_calling_line(traced):
    """An op written in a zoo model's forward points at the zoo line that contains the call."""
    checked = 0
    for n in traced.graph.nodes:
        if n.kind not in ("op", "constant") or n.site is None or n.site.file != ZOO_FILE:
            continue
        text = _line(n.site)
        assert n.site.func == "forward", (n.name, n.site)
        assert _token_ok(n.name, text), (
            f"{n.kind} {n.name!r} points at zoo.py:{n.site.line}: {text.strip()!r}"
        )
        checked += 1
    if traced.name in ("mlp", "cnn_bn_eval", "inplace_view", "param_direct", "nested_inputs"):
        assert checked >= 1, "no op of this zoo model points into zoo.py"


def test_zoo_module_sites_point_at_the_calling_line(traced):
    names: dict[int, set[str]] = {}
    for path, m in traced.model.named_modules(remove_duplicate=False):
        names.setdefault(id(m), set()).add(path.rsplit(".", 1)[-1])
    by_path = dict(traced.model.named_modules())
    for n in zoo.module_nodes(traced.graph):
        if n.site is None or n.site.file != ZOO_FILE or n.path == "":
            continue
        text = _line(n.site)
        attrs = names[id(by_path[n.path])]
        assert any(a in text for a in attrs), (
            f"module {n.path!r} points at zoo.py:{n.site.line}: {text!r}"
        )


def test_op_inside_linear_points_into_linear_py():
    g = get_traced("mlp").graph
    fc1 = g.module_call("fc1", 0)
    [op] = g.children(fc1.id)
    assert op.site.file == os.path.join(TORCH_DIR, "nn", "modules", "linear.py")
    assert op.site.func == "forward"
    assert "linear" in _line(op.site)


def test_specific_zoo_lines():
    g = get_traced("mlp").graph
    [relu] = [n for n in g.nodes if n.kind == "op" and n.name == "relu"]
    assert relu.site.file == ZOO_FILE and _line(relu.site).strip() == "h = torch.relu(h)"
    fc2 = g.module_call("fc2", 0)
    assert fc2.site.file == ZOO_FILE and _line(fc2.site).strip() == "return self.fc2(h)"
    assert fc2.site.func == "forward"
    g = get_traced("shared_module").graph
    third = g.module_call("shared", 2)
    assert _line(third.site).strip() == "h = self.alias(h)"


def test_root_site_is_the_caller_of_trace():
    model, args, kwargs = zoo.build("mlp")
    g = torchscope.trace(model, *args, **kwargs)  # the root call's site is this line
    root = g.module_call("", 0)
    assert root.site.file == os.path.abspath(__file__)
    assert "torchscope.trace(model" in _line(root.site)


@pytest.mark.parametrize("name", zoo.TRANSFORMERS)
def test_transformers_op_sites_contain_the_call(name):
    """Ops recorded inside transformers code point at a transformers line naming the callable."""
    bad = []
    for n in get_traced(name).graph.nodes:
        if n.kind != "op" or n.site is None or "/transformers/" not in n.site.file:
            continue
        # a multi-line expression reports the line it starts on: look at the statement
        text = "".join(linecache.getline(n.site.file, n.site.line + k) for k in range(4))
        if not _token_ok(n.name, text):
            bad.append((n.name, n.site.line, text.strip()))
    assert not bad, bad[:5]


def test_error_graph_sites_are_real_lines():
    for g in _error_graphs():
        for n in g.nodes:
            if n.site is not None:
                assert 1 <= n.site.line <= len(linecache.getlines(n.site.file)), (n.name, n.site)
        for s in g.error.traceback:
            assert os.path.isfile(s.file) and 1 <= s.line <= len(linecache.getlines(s.file))


def test_decorated_class_defn_points_at_class_line():
    g = get_traced("decorated_kwargs").graph
    root = g.module_call("", 0)
    assert root.defn.file == ZOO_FILE
    assert _line(root.defn).startswith("class DecoratedKwargs(")


def test_local_class_defn():
    class LocalBlock(torch.nn.Module):
        def forward(self, x):
            return x.sin()

    g = torchscope.trace(LocalBlock(), torch.randn(2))
    root = g.module_call("", 0)
    assert root.defn.file == os.path.abspath(__file__)
    assert "class LocalBlock(" in _line(root.defn)
    [op] = [n for n in g.nodes if n.kind == "op"]
    assert "x.sin()" in _line(op.site)


def _twin_block(scale: float) -> torch.nn.Module:
    class Twin(torch.nn.Module):
        def forward(self, x):
            return x * scale

    return Twin()


def _other_twin_block() -> torch.nn.Module:
    class Twin(torch.nn.Module):
        def forward(self, x):
            return x.cos()

    return Twin()


def test_two_classes_of_one_name_in_one_file_each_get_their_own_line():
    """The class line is found from the source text (no whole-file parse): two `class Twin`
    statements in this file are told apart by where their methods are."""
    lines = []
    for model in (_twin_block(2.0), _other_twin_block()):
        root = torchscope.trace(model, torch.randn(2)).module_call("", 0)
        assert root.defn.file == os.path.abspath(__file__)
        assert _line(root.defn).strip() == "class Twin(torch.nn.Module):"
        lines.append(root.defn.line)
    assert lines[0] < lines[1]
    assert lines[0] == type(_twin_block(1.0)).forward.__code__.co_firstlineno - 1


def test_ops_inside_a_torch_helper_point_at_the_users_call():
    """`pack_padded_sequence` is a torch function, not a layer: its ops belong to the user's
    line that called it; the helper's own line is the node's `inside`."""
    from torch.nn.utils.rnn import pack_padded_sequence

    class Packs(torch.nn.Module):
        def forward(self, x, lengths):
            packed = pack_padded_sequence(x, lengths, batch_first=True)  # PACK
            return packed.data.sum()

    g = torchscope.trace(Packs(), torch.randn(2, 5, 3), torch.tensor([5, 3]))
    line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "# PACK" in t)
    inside = [n for n in g.nodes if n.inside is not None]
    assert inside, [n.site for n in g.nodes]
    for n in inside:
        assert (n.site.file, n.site.line) == (os.path.abspath(__file__), line), n
        assert n.inside.file.endswith(os.path.join("nn", "utils", "rnn.py")), n.inside
    wire = g.to_wire()["nodes"][inside[0].id]
    assert wire["inside"]["file"] == inside[0].inside.file


def test_the_error_node_is_at_the_users_line_with_the_layer_inside():
    """A shape error in nn.Linear: the error node points at the user's line that called the
    layer; linear.py's line is one click away, as `inside`."""

    class Wrong(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)  # CALLS THE LAYER

    g = torchscope.trace_call(Wrong(), (torch.randn(1, 5),), raise_errors=False)
    err = g.nodes[g.error.node]
    line = next(
        i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "# CALLS THE LAYER" in t
    )
    assert (err.site.file, err.site.line) == (os.path.abspath(__file__), line)
    assert err.inside is not None and err.inside.file.endswith(os.path.join("modules", "linear.py"))
    assert g.error_location(lambda f: f == os.path.abspath(__file__)) == (err.site.file, line)


def test_a_model_called_with_arguments_its_forward_refuses_points_at_the_model():
    """`forward(self, x, *, t)` given two positional arguments: the only frame of the
    TypeError is torch's module.py (the call into the model), and the editor opened it (QA).
    The error is now placed at the model's class, in the user's file."""

    class Tempered(torch.nn.Module):  # THE MODEL'S CLASS
        def forward(self, x, *, t):
            return x / t

    args = (torch.ones(2), torch.ones(2))
    g = torchscope.trace_call(Tempered(), args, raise_errors=False)  # THE CALL
    assert g.error is not None and g.error.type == "TypeError"
    lines = open(__file__).read().splitlines()
    here = os.path.abspath(__file__)
    call, cls = (
        next(i for i, t in enumerate(lines, 1) if f"# THE {w}" in t) for w in ("CALL", "MOD")
    )
    assert g.error_location(lambda f: f == "/nowhere.py") == (here, call)
    g.nodes[g.nodes[g.error.node].parent].site = None  # as the editor's runner calls it
    assert g.error_location(lambda f: f == "/nowhere.py") == (here, cls)


def test_a_dead_functions_code_is_forgotten():
    # the runner imports the user's file afresh for every trace: the frame walk's entries
    # for the old file's code objects must go with them, not pile up for the session
    import gc

    from torchscope import sites

    namespace: dict = {}
    exec(
        compile("def forward(self, x):\n    return x * 2\n", "/tmp/reloaded.py", "exec"), namespace
    )
    model_class = type("Reloaded", (torch.nn.Module,), {"forward": namespace["forward"]})
    graph = torchscope.trace(model_class(), torch.randn(2))
    [mul] = [n for n in graph.nodes if n.name == "mul"]
    assert mul.site is not None and mul.site.file == "/tmp/reloaded.py"
    key = id(namespace["forward"].__code__)
    assert key in sites._codes
    del namespace, model_class, graph, mul
    gc.collect()
    assert key not in sites._codes


class _Warns(torch.nn.Module):
    def forward(self, x):
        y = torch.nn.functional.softmax(x)  # implicit dim: a warning from torch's Python
        z = x.new_tensor(y)  # copy construct: a warning from torch's C++
        warnings.warn("the model's own warning", stacklevel=1)
        return y + z


def _lines_of(text: str) -> int:
    source = inspect.getsource(_Warns)
    first = inspect.getsourcelines(_Warns)[1]
    return first + next(i for i, line in enumerate(source.splitlines()) if text in line)


def test_a_warning_inside_a_traced_op_points_at_the_users_line():
    """Warnings from torch inside a traced op named the recorder's own line (tracer.py); they
    name the model's line, as without the trace. The model's own warnings stay where they are."""
    x = torch.randn(2, 3)
    with warnings.catch_warnings(record=True) as plain:
        warnings.simplefilter("always")
        _Warns()(x)
    with warnings.catch_warnings(record=True) as traced:
        warnings.simplefilter("always")
        torchscope.trace(_Warns(), x)
    here = os.path.abspath(__file__)
    expected = [
        (here, _lines_of("softmax(x)")),
        (here, _lines_of("new_tensor(y)")),
        (here, _lines_of("own warning")),
    ]
    assert [(os.path.abspath(w.filename), w.lineno) for w in plain] == expected
    assert [(os.path.abspath(w.filename), w.lineno) for w in traced] == expected
    assert [str(w.message) for w in traced] == [str(w.message) for w in plain]
    assert warnings._showwarnmsg is _SHOW_BEFORE, "the trace puts warnings' display back"


def test_a_class_whose_file_changed_on_disk_into_one_that_does_not_parse(tmp_path, monkeypatch):
    # a notebook imports a model, then the file is edited on disk and left half-typed: the
    # class's lines can't be tokenised any more; its definition and the input guess fall back
    # instead of failing the trace (inspect raised tokenize.TokenError)
    import importlib

    from torchscope.inputs import keys_read
    from torchscope.sites import class_definition

    path = tmp_path / "halfway.py"
    path.write_text(
        "from torch import nn\n"
        "class Twice(nn.Module):\n"
        "    def forward(self, batch):\n"
        "        return batch['x'] * 2\n"
        "class Twice(nn.Module):\n"  # defined twice: its line is not found by a plain scan
        "    def forward(self, batch):\n"
        "        return batch['x'] * 2\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("halfway")
    path.write_text(path.read_text().replace("* 2\n", "* (2\n"))
    os.utime(path, (1, 1))  # (another modification time: linecache reads the disk again)
    linecache.checkcache(str(path))
    site = class_definition(module.Twice)
    assert site is not None and site.line == 5  # the class statement its methods follow
    assert keys_read(module.Twice()) is None


@pytest.mark.parametrize("kind, now", [("broken", "x = (\n"), ("other", "x = 1\n"), ("empty", "")])
def test_a_class_whose_file_no_longer_holds_it_is_at_its_forward_s_line(
    tmp_path, monkeypatch, kind, now
):
    # imported, then its file saved over with text that does not parse (an autosave while
    # debugging) or does not define it: inspect raised SyntaxError out of the trace; the
    # definition falls back to the line its forward began on when imported
    import importlib

    import torchscope
    from torchscope.sites import class_definition

    name = f"gone_now_{kind}"
    path = tmp_path / f"{name}.py"
    path.write_text(
        "from torch import nn\n"
        "class Gone(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * 2\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    path.write_text(now)
    os.utime(path, (1, 1))  # (another modification time: linecache reads the disk again)
    linecache.checkcache(str(path))
    site = class_definition(module.Gone)
    assert site is not None and (site.file, site.line) == (str(path), 3)
    graph = torchscope.trace(module.Gone(), torch.ones(2))
    assert graph.error is None
    (box,) = [n for n in graph.nodes if n.kind == "module"]
    assert box.defn is not None and box.defn.line == 3


def test_a_deprecated_torch_function_s_ops_point_at_the_user_s_line():
    # torch marks deprecated functions with typing_extensions' @deprecated: its wrapper's
    # frame (typing_extensions.py) was taken for the user's line (dist.all_gather_into_tensor,
    # clip_grad_norm), and a click opened typing_extensions.py
    class Clip(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))
            self.w.grad = torch.full((3,), 2.0)

        def forward(self, x):
            n = torch.nn.utils.clip_grad_norm(self.w, 1.0)  # the calling line
            return x * n

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        g = torchscope.trace(Clip(), torch.ones(3))
    inner = [n for n in g.nodes if n.inside is not None]
    assert inner, "the clipping's ops are torch's helper's, seen from the user's line"
    for n in inner:
        assert "clip_grad_norm(self.w" in _line(n.site), (n.name, n.site)
        assert n.inside.file.endswith("clip_grad.py"), (n.name, n.inside)


def test_an_error_a_library_raises_through_a_torch_check_is_at_the_librarys_line(
    tmp_path, monkeypatch
):
    """A library's model that fails a check through torch's helpers (`torch._check_with`, as
    transformers' `torch_compilable_check`), traced with no user frame in between: the error's
    site is the library's line that called the check, torch's helper line its `inside` (as
    for an op's site), not a line in torch/__init__.py."""
    lib = tmp_path / "site-packages" / "checklib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(
        "import torch\n"
        "from torch import nn\n"
        "\n"
        "\n"
        "class Checked(nn.Module):\n"
        "    def forward(self, x):\n"
        "        torch._check_with(ValueError, bool(x.sum() > 1e9), lambda: 'no image tokens')\n"
        "        return x\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site-packages"))
    import checklib

    with pytest.raises(ValueError) as info:
        torchscope.trace(checklib.Checked(), torch.ones(2))
    graph = info.value.torchscope_graph  # type: ignore[attr-defined]
    error = graph.nodes[graph.error.node]
    assert (os.path.basename(error.site.file), error.site.line) == ("__init__.py", 7)
    assert os.path.dirname(error.site.file) == str(lib)
    assert error.inside is not None and error.inside.file.startswith(TORCH_DIR)
