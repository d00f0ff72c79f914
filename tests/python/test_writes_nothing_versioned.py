"""Writes a tensor's version counter does not see: statistics and edges must follow them.

A weight's statistics are kept between traces while its version stays (weight_stats), but
`p.data = …`, `model.half()` and `p.data.mul_(…)` change a parameter and leave its version
as it was. Inside a forward, a write through `y.detach()` or `y.data` (aliases of y's memory
that are no views of it) changes y. Found by a QA pass: the old statistics stood, and the NaN
origin was an op downstream.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import torchscope


class Gated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Parameter(torch.ones(4))
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x * self.gate)


def gate_stats(g: torchscope.Graph) -> dict:
    gate = next(n for n in g.nodes if n.kind == "constant" and n.target == "gate")
    return next(e.stats for e in g.edges if e.src == gate.id)


def test_a_write_through_data_between_traces_is_seen() -> None:
    m, x = Gated(), torch.randn(2, 4)
    assert gate_stats(torchscope.trace(m, x))["mean"] == 1.0
    m.gate.data.mul_(10)  # the parameter's version stays
    assert gate_stats(torchscope.trace(m, x))["mean"] == 10.0
    m.gate.data = torch.full((4,), 3.0)
    assert gate_stats(torchscope.trace(m, x))["mean"] == 3.0


def test_a_nan_written_through_data_between_traces_is_the_origin() -> None:
    m, x = Gated(), torch.randn(2, 4)
    torchscope.trace(m, x)
    m.gate.data[1] = float("nan")
    g = torchscope.trace(m, x)
    assert gate_stats(g)["nan"] == 1
    assert g.nan_origin is not None
    origin = g.nodes[g.nan_origin]
    assert (origin.kind, origin.target) == ("constant", "gate")


def test_half_between_traces_gives_the_half_weights_statistics() -> None:
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.tensor([1.0, 2.0, 1e5, 3.0]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.scale

    m, x = Scaled(), torch.ones(2, 4)
    torchscope.trace(m, x)
    m.half()  # `param.data = param.half()`: the version stays
    g = torchscope.trace(m, x.half())
    scale = next(n for n in g.nodes if n.kind == "constant" and n.target == "scale")
    st = next(e.stats for e in g.edges if e.src == scale.id)
    assert st["inf"] == 1 and st["max"] == 3.0, st  # 1e5 overflows float16
    origin = g.nodes[g.nan_origin]
    assert (origin.kind, origin.target) == ("constant", "scale")


def test_a_big_weight_written_whole_through_data_is_seen() -> None:
    """A weight past the sampled size (its statistics kept by version and a sample)."""

    class Big(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(300, 300))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ self.w

    m, x = Big(), torch.ones(1, 300)
    torchscope.trace(m, x)
    m.w.data.mul_(-2)
    g = torchscope.trace(m, x)
    w = next(n for n in g.nodes if n.kind == "constant" and n.target == "w")
    assert next(e.stats for e in g.edges if e.src == w.id)["mean"] == -2.0


def exp_input(g: torchscope.Graph) -> tuple[str, dict]:
    exp = next(n for n in g.nodes if n.name == "exp")
    edge = next(e for e in g.edges if e.dst == exp.id)
    return g.nodes[edge.src].name, edge.stats


@pytest.mark.parametrize("alias", ["detach", "data"])
def test_a_write_through_an_alias_inside_the_forward_is_what_later_reads_see(alias) -> None:
    """`y.detach()` shares y's version counter, `y.data` has one of its own."""

    class ThroughAlias(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + 0
            (y.detach() if alias == "detach" else y.data).mul_(-1)
            return y.exp()

    x = torch.rand(4, 3) + 5
    source, st = exp_input(torchscope.trace(ThroughAlias(), x))
    assert source == "mul_"
    assert math.isclose(st["max"], float(-x.min()), rel_tol=1e-6), st


def test_a_nan_written_through_a_chain_of_aliases_reaches_the_reads_after() -> None:
    class Chain(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + 0
            y.detach().detach().log_().sub_(10).log_()  # NaN made here
            return y.exp()

    g = torchscope.trace(Chain(), torch.rand(4, 3) + 5)
    source, st = exp_input(g)
    assert source == "log_"
    assert st["nan"] == 12
    assert g.nodes[g.nan_origin].name == "log_"


def test_writing_the_tensor_reaches_an_alias_made_before() -> None:
    class Before(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + 0
            d = y.detach()
            y.mul_(-1)
            return d.exp()

    x = torch.rand(4, 3) + 5
    source, st = exp_input(torchscope.trace(Before(), x))
    assert source == "mul_"
    assert math.isclose(st["max"], float(-x.min()), rel_tol=1e-6), st


def test_an_identity_hands_back_its_input_and_makes_no_bytes() -> None:
    """Module bytes are the activations made inside: an nn.Identity (or dropout in eval)
    hands its input back and makes none, so its parent does not count that tensor twice."""
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Identity(), nn.Dropout(0.5)).eval()
    g = torchscope.trace(m, torch.randn(2, 5, 8))
    by_path = {n.path: n for n in g.nodes if n.kind == "module"}
    activation = 2 * 5 * 8 * 4
    assert by_path["2"].cost.bytes == 0
    assert by_path["3"].cost.bytes == 0
    assert by_path["0"].cost.bytes == activation
    assert by_path[""].cost.bytes == 2 * activation  # the linear's and the relu's outputs


def test_an_in_place_functional_call_counts_the_tensor_it_wrote() -> None:
    """`F.relu(y, inplace=True)` (so `nn.ReLU(inplace=True)`) hands back its input after
    writing it: that is output, as `y.relu_()`'s is (a review: it counted 0)."""
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(inplace=True)).eval()
    g = torchscope.trace(m, torch.randn(2, 8))
    by_path = {n.path: n for n in g.nodes if n.kind == "module"}
    assert by_path["1"].cost.bytes == 2 * 8 * 4
    assert by_path[""].cost.bytes == 2 * 2 * 8 * 4


def test_an_in_place_functional_call_on_an_alias_reaches_the_reads_after() -> None:
    class Relu(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x - 10  # all negative
            torch.nn.functional.relu(y.detach(), inplace=True)  # y is all zeros now
            return y.exp()

    source, st = exp_input(torchscope.trace(Relu(), torch.rand(4, 3) + 5))
    assert source == "relu"
    assert (st["min"], st["max"]) == (0.0, 0.0)


def test_writing_a_tensor_reaches_an_alias_of_its_view() -> None:
    class ViewAlias(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + 0
            d = y[0].detach()
            y.mul_(-1)
            return d.exp()

    x = torch.rand(4, 3) + 5
    source, st = exp_input(torchscope.trace(ViewAlias(), x))
    assert source == "mul_"
    assert st["max"] < 0, st


def test_many_aliases_keep_a_write_cheap() -> None:
    """Detached in a loop (`h = h.detach()` per step): each write walks only the aliases
    still alive (the group grew with every detach: 16,000 steps took 5 s, not 0.4 s)."""

    class Steps(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x + 0
            for _ in range(3000):
                y.detach().add_(1)
            return y.exp()

    g = torchscope.trace(Steps(), torch.zeros(2), values=False, costs=False)
    assert sum(n.name == "add_" for n in g.nodes) == 3000
    source, _ = exp_input(g)
    assert source == "add_"


def test_a_non_contiguous_weight_written_through_data_between_traces_is_seen() -> None:
    """No sample of its values is taken (not contiguous): its statistics are read again
    every trace, never kept (a review: the first trace's stood)."""

    class Transposed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(4, 4).t())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ self.w

    m, x = Transposed(), torch.ones(1, 4)
    torchscope.trace(m, x)
    m.w.data.mul_(10)
    g = torchscope.trace(m, x)
    w = next(n for n in g.nodes if n.kind == "constant" and n.target == "w")
    assert next(e.stats for e in g.edges if e.src == w.id)["mean"] == 10.0
