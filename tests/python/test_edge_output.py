"""`Edge.output`: which of its producer's output tensors an edge carries, when the producer
made several (`q, k, v = x.split(…)`). The file names no tensor otherwise: three outputs of
one shape read by three calls looked like one tensor read three times (QA: the split's card
said "out 2×4 (×3 uses)" with q's statistics for all three)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchscope
from torchscope.graph import Graph


class Split(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.fc(x).split(4, dim=-1)
        best, where = q.max(-1)
        return q * 2 + k.relu() + v.sin() + where.float().unsqueeze(-1) + best.unsqueeze(-1)


@pytest.mark.parametrize("values", [True, False])
def test_each_output_of_a_call_is_told_apart(values: bool) -> None:
    g = torchscope.trace(Split(), torch.randn(2, 8), values=values, costs=values)
    split = next(n.id for n in g.nodes if n.name == "split")
    reads = {g.nodes[e.dst].name: e.output for e in g.edges if e.src == split}
    assert reads == {"mul": 0, "max": 0, "relu": 1, "sin": 2}
    top = next(n.id for n in g.nodes if n.name == "max")
    assert sorted((g.nodes[e.dst].name, e.output) for e in g.edges if e.src == top) == [
        ("float", 1),
        ("unsqueeze", 0),
    ]
    # a call of one output: no field
    fc = next(n.id for n in g.nodes if n.name == "linear")
    assert [e.output for e in g.edges if e.src == fc] == [None]
    if values:  # (three tensors: three readings)
        stats = [e.stats for e in g.edges if e.src == split and e.output in (0, 1, 2)]
        assert len({(s["min"], s["max"]) for s in stats if s}) == 3
    wire = g.to_wire()
    assert sum("output" in e for e in wire["edges"]) == 6
    again = Graph.from_wire(wire)
    assert [e.output for e in again.edges] == [e.output for e in g.edges]


def test_a_malformed_output_is_dropped() -> None:
    wire = torchscope.trace(Split(), torch.randn(2, 8), values=False, costs=False).to_wire()
    for e, bad in zip(wire["edges"], ("1", -1, 2.5, True, None)):
        e["output"] = bad
    assert all(e.output is None for e in Graph.from_wire(wire).edges[:5])
