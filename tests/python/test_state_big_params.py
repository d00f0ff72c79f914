"""A parameter of more than 2**24 elements (GPT-2's token embedding has 38.6M) traces:
the values the trace samples to notice unseen writes are picked with exact integer
indexes, not float32 ones that round past the end."""

from __future__ import annotations

import torch
from torch import nn

import torchscope


class BigTable(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        # 2**24 + 4: the last index, 2**24 + 3, rounds up to 2**24 + 4 in float32.
        self.table = nn.Parameter(torch.zeros(2**24 + 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.table[:1]


def test_a_parameter_past_float32_integers_traces() -> None:
    model = BigTable()
    graph = torchscope.trace(model, torch.ones(1))
    assert any(n.kind == "op" for n in graph.nodes)
    assert float(model.table.detach().abs().sum()) == 0.0
