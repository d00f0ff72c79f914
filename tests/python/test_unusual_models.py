"""Models a researcher meets beside the usual ones (QA with unusual models): nested tensors
with costs on, half-precision and keyword-only forwards given a guessed input, text no
UTF-8 can hold, an argument that is a view of another, layers kept in a plain list, and a
forward that needs autograd."""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchscope

# (torch warns that nested tensors are a prototype)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def nested(*rows: int, jagged: bool = False) -> torch.Tensor:
    torch.manual_seed(0)
    layout = torch.jagged if jagged else torch.strided
    return torch.nested.nested_tensor([torch.randn(r, 8) for r in rows], layout=layout)


class NestedLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l(x)


class NestedMatmul(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b.transpose(-1, -2))


class JaggedAttention(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.unflatten(-1, (2, 4)).transpose(1, 2) for t in (q, k, v))
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(-2)


@pytest.mark.parametrize(
    ("model", "args"),
    [
        (NestedLinear, lambda: (nested(2, 3),)),
        (NestedMatmul, lambda: (nested(2, 3), nested(2, 3))),
        (JaggedAttention, lambda: tuple(nested(3, 5, jagged=True) for _ in range(3))),
    ],
    ids=["linear", "matmul", "jagged-sdpa"],
)
def test_nested_tensors_trace_with_costs_on(model, args) -> None:
    # QA: with costs on (the default) these failed: "NestedTensorImpl doesn't support
    # sizes" in the FLOPs of F.linear, "dimension -2 is irregular" in the counter's formula,
    # a RecursionError in jagged attention; the plain forward and costs off worked
    m = model().eval()
    a = args()
    want = m(*a)
    g = torchscope.trace_call(m, a, {}, values=True, costs=True, raise_errors=False)
    assert g.error is None, g.error
    got = m(*a)  # (the model and its inputs as they were)
    for x, y in zip(want.unbind(), got.unbind()):
        assert torch.equal(x, y)
    # (the matmul's nested output had no shape to read: its node was made twice, bare, and
    # the output drawn from a constant)
    assert not [n for n in g.nodes if n.kind == "constant"]
    fed = {e.dst for e in g.edges}
    assert all(n.id in fed for n in g.nodes if n.kind == "op")
    (out,) = [n.id for n in g.nodes if n.kind == "output"]
    assert [g.nodes[e.src].kind for e in g.edges if e.dst == out] == ["op"]
    op = next(n for n in g.nodes if n.name in ("linear", "matmul", "scaled_dot_product_attention"))
    assert op.cost is not None and op.cost.time_ns > 0
    assert op.cost.flops == 0  # (not counted: no formula reads these shapes)


class NamedAfterAFile(nn.Module):
    """Raises naming a folder whose name is no UTF-8 (os.fsdecode gives a lone surrogate)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.table_dir = os.fsdecode(b"/data/caf\xe9")

    def extra_repr(self) -> str:
        return f"table={self.table_dir}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise FileNotFoundError(f"no lookup table in {self.table_dir}")


def test_text_no_utf8_holds_is_saved_in_every_format(tmp_path) -> None:
    # QA: a lone surrogate in an error message or a layer's description made .msgpack and
    # .html saving fail ("surrogates not allowed"; the CLI: an internal error, no page)
    g = torchscope.trace_call(NamedAfterAFile(), (torch.randn(2, 4),), {}, raise_errors=False)
    assert g.error is not None
    for name in ("g.msgpack", "g.json", "g.html"):
        g.save(tmp_path / name)
    back = torchscope.Graph.load(tmp_path / "g.msgpack")
    assert "caf" in back.error.message and "lookup table" in back.error.message


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class KeywordOnly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, *, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


@pytest.mark.parametrize(
    ("build", "want"),
    [
        (lambda: Net().half(), "torch.randn(1, 8, dtype=torch.float16)"),
        (lambda: nn.Sequential(nn.Conv2d(3, 8, 3)).to(torch.bfloat16), "dtype=torch.bfloat16"),
        (lambda: Net().double(), "torch.randn(1, 8, dtype=torch.float64)"),
        (lambda: Net(), "torch.randn(1, 8)"),
        (KeywordOnly, "{'x': torch.randn(1, 8)}"),
    ],
    ids=["half", "bf16-conv", "double", "float32", "keyword-only"],
)
def test_a_guessed_input_is_one_the_first_layer_takes(build, want) -> None:
    # QA: a half or bfloat16 model got a float32 guess and raised "mat1 and mat2 must have
    # the same dtype"; `forward(self, *, x)` got it positionally: "takes 1 positional argument"
    from torchscope.inputs import guess

    model = build()
    made = guess(model)
    assert want in made.expr
    value = eval(made.expr, {"torch": torch})  # noqa: S307 - the guess is an expression
    out = model(**value) if isinstance(value, dict) else model(value)
    assert out.dtype == next(model.parameters()).dtype


class Differentiates(nn.Module):
    """A physics-informed model: the forward takes a derivative of its own output."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(1, 1)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        t = t.requires_grad_()
        u = self.net(t)
        (du,) = torch.autograd.grad(u.sum(), t, create_graph=True)
        return du


def test_a_forward_that_needs_autograd_says_how_to_trace_it() -> None:
    # QA: it failed only under torchscope, with torch's own "does not require grad" and no
    # word that the trace runs under no_grad
    g = torchscope.trace_call(Differentiates(), (torch.rand(5, 1),), {}, raise_errors=False)
    assert g.error is not None and "require grad" in g.error.message
    (said,) = [w for w in g.warnings if "no_grad" in w]
    assert "torch.enable_grad()" in said
    clean = torchscope.trace_call(Net(), (torch.randn(1, 8),), {}, raise_errors=False)
    assert not clean.warnings


class PlainList(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = [nn.Linear(4, 8), nn.Linear(8, 4)]  # a plain list: not registered

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x).relu()
        return x


def test_layers_outside_the_tree_are_told_apart() -> None:
    # QA: layers kept in a plain list were all `<Linear>`, call 0: a model compared with an
    # identical copy of itself had "2 added, 1 removed, 2 changed"
    from torchscope.diff import diff_graphs

    x = torch.randn(2, 4)
    torch.manual_seed(0)
    a = torchscope.trace(PlainList(), x)
    torch.manual_seed(0)
    b = torchscope.trace(PlainList(), x)
    calls = [(n.path, n.call) for n in a.nodes if n.kind == "module" and n.name == "Linear"]
    assert calls == [("<Linear>", 0), ("<Linear>", 1)]
    assert diff_graphs(a, b).identical


class SumAndScale(nn.Module):
    def forward(self, seq: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
        return seq.sum(0) + first * 2


class NextToken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.emb(ids))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def _inputs_read(g, name: str) -> list[str]:
    (nid,) = [n.id for n in g.nodes if n.kind == "input" and n.name == name]
    return [g.nodes[e.dst].name for e in g.edges if e.src == nid]


def test_an_argument_that_views_another_is_its_own_input() -> None:
    # QA: `model(x, x[0])` had no input node `first` (its reader wired from `seq`, with the
    # row's shape); `model(x[0], x)` had one with no edges
    x = torch.randn(5, 3)
    for args in ((x, x[0]), (x[0], x)):
        g = torchscope.trace(SumAndScale(), *args)
        seq, first = ("seq", "first")
        assert _inputs_read(g, seq) == ["sum"], args
        assert _inputs_read(g, first) == ["mul"], args
    tokens = torch.randint(0, 10, (2, 9))  # inputs and targets: two slices of one batch
    g = torchscope.trace(NextToken(), tokens[:, :-1], tokens[:, 1:])
    assert _inputs_read(g, "ids") == ["embedding"]
    assert _inputs_read(g, "targets") == ["flatten"]


class WrapsItsOwnLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.seq = nn.Sequential(self.fc, nn.ReLU())  # holds a layer registered before

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.seq(x)


def test_a_module_holding_a_layer_registered_before_counts_its_parameters() -> None:
    # QA (comparison): `seq` had 0 parameters, in its box and in a diff; torch says 272
    m = WrapsItsOwnLayer()
    g = torchscope.trace(m, torch.randn(2, 16))
    params = {n.path: n.params for n in g.nodes if n.kind == "module"}
    assert params == {"": 272, "seq": 272, "fc": 272, "seq.1": 0}, params


@torch.jit.script
def fused_gelu(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


@torch.jit.script
def scripted_log(x: torch.Tensor) -> torch.Tensor:
    return torch.log(x)


class CallsScriptedFunctions(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(scripted_log(fused_gelu(self.a(x)) - 1.0))


def test_a_scripted_function_is_one_node_data_flows_through() -> None:
    # QA: a @torch.jit.script function (a fused GELU) left no node and no warning, and the
    # next layer was fed by a made-up constant; a NaN it made had no origin
    g = torchscope.trace(CallsScriptedFunctions(), torch.randn(3, 4))
    names = [n.name for n in g.nodes if n.kind == "op"]
    assert names[:2] == ["linear", "fused_gelu"] and "scripted_log" in names, names
    assert not [n for n in g.nodes if n.kind == "constant"]
    fused = next(n for n in g.nodes if n.name == "fused_gelu")
    assert [g.nodes[e.src].name for e in g.edges if e.dst == fused.id] == ["linear"]
    assert [e.shape for e in g.edges if e.src == fused.id] == [[3, 4]]
    (said,) = [w for w in g.warnings if "TorchScript" in w]
    assert "fused_gelu" in said and "scripted_log" in said
    assert g.nan_origin is not None and g.nodes[g.nan_origin].name == "scripted_log"


class Checkpointed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 16)
        self.b = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch.utils.checkpoint import checkpoint

        h = checkpoint(self.a, x, use_reentrant=False)
        return checkpoint(self.b, h, use_reentrant=True)  # the line of `b`


def test_a_checkpointed_layer_is_at_the_users_line_either_way() -> None:
    # QA (shapes in the code): with use_reentrant=True the layer's node sat in torch's
    # checkpoint.py (its click opened torch's file; the user's line had no hint)
    import inspect

    g = torchscope.trace(Checkpointed(), torch.randn(2, 4))
    lines, first = inspect.getsourcelines(Checkpointed.forward)
    want = {
        name: first + i
        for i, text in enumerate(lines)
        for name in ("a", "b")
        if f"self.{name}," in text
    }
    for n in g.nodes:
        if n.kind == "module" and n.path in want:
            assert (n.site.file, n.site.line) == (__file__, want[n.path]), (n.path, n.site)
