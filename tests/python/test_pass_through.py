"""A call that hands back its own input (`x.to(float32)` of a float32 tensor, dropout in eval
mode, `nn.Identity`) makes nothing new: outside the module that made the call, the tensor is
still what it was before, and edges from it start where they did."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchscope
from torchscope.graph import Graph, Node


class Norm(nn.Module):
    """RMSNorm as Llama writes it: the input cast to float32 first (a no-op on float32)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        x = x.to(torch.float32)
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class Block(nn.Module):
    def __init__(self, d: int = 8, inplace_act: bool = False) -> None:
        super().__init__()
        self.norm = Norm(d)
        self.fc = nn.Linear(d, d)
        self.drop = nn.Dropout(0.1)
        self.drop2 = nn.Dropout(0.1)
        self.skip = nn.Identity()
        self.act = nn.ReLU(inplace=True) if inplace_act else None

    def forward(self, x):
        if self.act is not None:
            self.act(x)  # writes x: later readers of x read the ReLU's output
        h = self.fc(self.drop(self.norm(x)))  # the dropout on the chain: fc reads it
        h = self.drop2(h)
        return x + self.skip(h)


class Outer(nn.Module):
    def __init__(self, inplace_act: bool = False) -> None:
        super().__init__()
        self.inner = nn.Sequential(nn.Dropout(0.1), Block(inplace_act=inplace_act))

    def forward(self, x):
        return self.inner(x) + x


def _by(g: Graph, name: str, path: str) -> Node:
    [n] = [n for n in g.nodes if n.name == name and g.nodes[n.parent].path == path]
    return n


def _sources(g: Graph, node: Node) -> list[str]:
    """What each edge into `node` comes from: `input` or `op@module path`."""
    out = []
    for e in g.edges:
        if e.dst == node.id:
            src = g.nodes[e.src]
            where = g.nodes[src.parent].path if src.parent is not None else None
            out.append(src.name if where is None else f"{src.name}@{where}")
    return out


@pytest.mark.parametrize("values", [False, True])
def test_a_residual_reads_the_blocks_input_not_a_cast_inside_the_norm(values: bool) -> None:
    g = torchscope.trace(Outer().eval(), torch.randn(2, 8), values=values)
    residual = _by(g, "add", "inner.1")
    assert sorted(_sources(g, residual)) == ["Identity@inner.1", "dropout@inner.0"], (
        "x from the Sequential's dropout (the tensor the block was given), h through Identity"
    )
    # the cast's output is read inside the norm only
    cast = _by(g, "to", "inner.1.norm")
    readers = {g.nodes[g.nodes[e.dst].parent].path for e in g.edges if e.src == cast.id}
    assert readers == {"inner.1.norm"}
    # on the chain, a dropout that returns its input still passes it on
    assert _sources(g, _by(g, "linear", "inner.1.fc")) == ["dropout@inner.1.drop"]
    assert _sources(g, _by(g, "dropout", "inner.1.drop2")) == ["linear@inner.1.fc"]
    # outside the Sequential, x is the model's input again
    assert sorted(_sources(g, _by(g, "add", ""))) == ["add@inner.1", "x"]


def test_an_in_place_call_that_returns_its_input_is_what_later_readers_read() -> None:
    g = torchscope.trace(Outer(inplace_act=True).eval(), torch.randn(2, 8))
    relu = _by(g, "relu", "inner.1.act")
    residual = _by(g, "add", "inner.1")
    assert "relu@inner.1.act" in _sources(g, residual), "x was written by the ReLU"
    assert relu.attrs.get("inplace") is True


def test_what_the_model_returns_through_a_last_dropout_comes_from_the_dropout() -> None:
    """A dropout in eval mode last in the model: the output's edge came from the layer
    before it (the root call reset what it handed back), where a dropout in the middle
    passes it on; a comparison of eval with training mode then saw the output rewired."""
    for tail in (True, False):
        layers = [nn.Linear(4, 4), nn.Dropout(0.5)] + ([] if tail else [nn.Linear(4, 4)])
        g = torchscope.trace(nn.Sequential(*layers).eval(), torch.randn(2, 4), values=False)
        [output] = [n for n in g.nodes if n.kind == "output"]
        assert _sources(g, output) == ["dropout@1" if tail else "linear@2"], tail


class ViewBefore(nn.Module):
    """A view taken before a call hands its base back: the view is the view op's output,
    not the dropout's (QA: drawn `dropout -> output[0] [6]`, the view left without edges)."""

    def __init__(self, written: bool = False) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.written = written

    def forward(self, x):
        a = x * 2
        b = a.view(-1)
        if self.written:
            a.add_(1)  # written after the view: the view's values are the add_'s
        e = self.drop(a)  # eval: `a` itself handed back
        return b, e


def _into_outputs(g: Graph) -> list[tuple[str, list[int]]]:
    return sorted(
        (g.nodes[e.src].name, list(e.shape or []))
        for e in g.edges
        if g.nodes[e.dst].kind == "output"
    )


def test_a_view_taken_before_a_handed_back_base_is_the_views_own():
    g = torchscope.trace(ViewBefore().eval(), torch.randn(2, 3))
    assert _into_outputs(g) == [("dropout", [2, 3]), ("view", [6])]
    assert "[2, 3] → [2, 3]" in g.summary(), g.summary()
    # written in place after the view (then handed back): the view is the write's
    g = torchscope.trace(ViewBefore(written=True).eval(), torch.randn(2, 3))
    assert _into_outputs(g) == [("add_", [6]), ("dropout", [2, 3])]
