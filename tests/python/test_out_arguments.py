"""Calls that write their results into `out=` tensors: the call is a node, and what reads
those tensors afterwards reads from it."""

from __future__ import annotations

import torch
from torch import nn

import torchscope


def _producers_of(graph, name: str) -> set[str]:
    """Names of the nodes with an edge into each node called `name`."""
    by_id = {n.id: n for n in graph.nodes}
    ids = {n.id for n in graph.nodes if n.name == name}
    return {by_id[e.src].name for e in graph.edges if e.dst in ids}


class IntoOne(nn.Module):
    def forward(self, x):
        c = torch.empty(4, 8)
        torch.add(x, 1.0, out=c)
        return c * 2


class IntoList(nn.Module):
    # FSDP2 splits each all-gathered buffer so (torch.ops.fsdp.split_with_sizes_copy):
    # a call that returns None and writes a list of tensors
    def forward(self, x):
        outs = [torch.empty(4, 3), torch.empty(4, 5)]
        torch.split_with_sizes_copy(x, [3, 5], dim=1, out=outs)
        return outs[0] + 1, outs[1] * 2


def test_a_call_into_one_out_tensor_feeds_its_readers() -> None:
    g = torchscope.trace(IntoOne(), torch.randn(4, 8))
    assert g.error is None
    assert "add" in _producers_of(g, "mul")


def test_a_call_into_a_list_of_out_tensors_is_a_node_its_readers_read_from() -> None:
    g = torchscope.trace(IntoList(), torch.randn(4, 8))
    assert g.error is None
    names = [n.name for n in g.nodes]
    assert "split_with_sizes_copy" in names, names
    assert _producers_of(g, "add") >= {"split_with_sizes_copy"}
    assert _producers_of(g, "mul") >= {"split_with_sizes_copy"}
    (x,) = [n for n in g.nodes if n.kind == "input"]
    assert any(e.src == x.id for e in g.edges), "the input is read"


class IntoFilledList(nn.Module):
    def forward(self, x):
        outs = [torch.full((4, 3), 1000.0), torch.full((4, 5), 1000.0)]
        torch.split_with_sizes_copy(x, [3, 5], dim=1, out=outs)
        return outs[0] + 1, outs[1] * 2


def test_what_reads_a_list_of_out_tensors_sees_the_values_the_call_wrote() -> None:
    # (QA: split_with_sizes_copy leaves its out tensors' versions as they were: their
    # statistics from before the write, 1000s, stood on the edges after it — in FSDP2, the
    # empty gather buffer's garbage, NaN, on every unsharded weight)
    x = torch.rand(4, 8)
    g = torchscope.trace(IntoFilledList(), x)
    assert g.error is None
    by_id = {n.id: n for n in g.nodes}
    after = [e for e in g.edges if by_id[e.src].name == "split_with_sizes_copy"]
    assert len(after) == 2
    for e in after:
        assert e.stats is not None and 0.0 <= e.stats["min"] <= e.stats["max"] <= 1.0, e.stats


class IntoViewsOfOne(nn.Module):
    def forward(self, x):
        buffer = torch.empty(8, 100)
        torch.split_with_sizes_copy(x, [1] * 8, dim=0, out=list(buffer.unbind(0)))
        return buffer * 2


def test_a_call_into_many_views_of_one_buffer_reads_the_buffer_once(monkeypatch) -> None:
    # (review: FSDP2's gather writes each parameter into a view of one buffer: the buffer
    # was read whole again for each view)
    from torchscope.stats import Reader

    sizes: list[int] = []
    real = Reader.read

    def counted(self, t):
        sizes.append(t.numel())
        return real(self, t)

    monkeypatch.setattr(Reader, "read", counted)
    g = torchscope.trace(IntoViewsOfOne(), torch.rand(8, 100))
    assert g.error is None
    assert sizes.count(800) <= 4, str(sizes)  # (x, the buffer made, written, doubled)
