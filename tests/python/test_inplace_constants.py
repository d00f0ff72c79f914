"""A model's own tensor (buffer, parameter) written in place by the forward before any
recorded call read it: its constant node stands for its values when first used, before the
write (docs/graph-format.md), so the edge out of it carries those statistics and a NaN the
write makes has the write as its origin, not the tensor."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import torchscope
from torchscope.graph import Graph
from torchscope.summary import nan_origin_line
from torchscope.tracer import read_ahead


class LogBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.tensor([-1.0, 4.0]))

    def forward(self, x):
        self.buf.log_()  # NaN made here
        return x + self.buf


class AddBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.full((3,), 5.0))

    def forward(self, x):
        self.buf.add_(10)
        return x + self.buf


class ZeroWeight(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([2.0, 3.0]))

    def forward(self, x):
        with torch.no_grad():
            self.w.mul_(0)
        return x * self.w


class ReadThenWrite(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.full((3,), 5.0))

    def forward(self, x):
        y = x + self.buf
        self.buf.add_(10)
        return y + self.buf


class OutIntoBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.full((2,), 5.0))

    def forward(self, x):
        torch.add(x, 1, out=self.buf)
        return x + self.buf


class ForeachBuffers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("a", torch.full((2,), 5.0))
        self.register_buffer("b", torch.full((4,), -2.0))

    def forward(self, x):
        torch._foreach_add_([self.a, self.b], 10.0)
        return x + self.a + self.b.sum()


class SubmoduleWrites(nn.Module):
    """The constant is made inside the submodule's call, where the write is."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = LogBuffer()

    def forward(self, x):
        return self.inner(x) * 2


def constant(graph: Graph, name: str) -> Any:
    found = graph.find("constant", name)
    assert len(found) == 1, [(n.kind, n.name) for n in graph.nodes]
    return found[0]


def out_edges(graph: Graph, nid: int) -> list[Any]:
    edges = [e for e in graph.edges if e.src == nid]
    assert edges
    return edges


def only_op(graph: Graph, name: str) -> Any:
    found = [n for n in graph.nodes if n.kind == "op" and n.name == name]
    assert len(found) == 1, [(n.kind, n.name) for n in graph.nodes]
    return found[0]


def test_a_buffer_written_in_place_first_keeps_its_values_before_the_write() -> None:
    graph = torchscope.trace(LogBuffer(), torch.ones(2))
    buf = constant(graph, "buf")
    log = only_op(graph, "log_")
    (edge,) = out_edges(graph, buf.id)
    assert edge.dst == log.id
    assert edge.stats["nan"] == 0 and edge.stats["inf"] == 0
    assert (edge.stats["min"], edge.stats["max"]) == (-1.0, 4.0)
    assert edge.stats["mean"] == 1.5
    # what the write made: on the edge out of log_, NaN and log(4)
    after = [e for e in graph.edges if e.src == log.id]
    assert after and all(e.stats["nan"] == 1 for e in after)


def test_the_nan_origin_is_the_in_place_write_not_the_buffer() -> None:
    graph = torchscope.trace(LogBuffer(), torch.ones(2))
    origin = graph.nodes[graph.nan_origin]
    assert (origin.kind, origin.name) == ("op", "log_")
    assert nan_origin_line(graph).startswith("NaN/Inf origin: log_ ")


def test_the_origin_inside_a_submodule_is_the_write() -> None:
    graph = torchscope.trace(SubmoduleWrites(), torch.ones(2))
    origin = graph.nodes[graph.nan_origin]
    assert (origin.kind, origin.name) == ("op", "log_")
    assert graph.nodes[origin.parent].path == "inner"
    assert out_edges(graph, constant(graph, "buf").id)[0].stats["nan"] == 0


def test_add_in_place_on_a_buffer_edge_out_of_the_constant_has_the_old_mean() -> None:
    graph = torchscope.trace(AddBuffer(), torch.zeros(3))
    (edge,) = out_edges(graph, constant(graph, "buf").id)
    assert edge.stats["mean"] == 5.0 and edge.stats["min"] == 5.0
    add_ = only_op(graph, "add_")
    assert all(e.stats["mean"] == 15.0 for e in graph.edges if e.src == add_.id)
    assert graph.nan_origin is None


def test_a_parameter_zeroed_under_no_grad_keeps_its_values_before_the_write() -> None:
    graph = torchscope.trace(ZeroWeight(), torch.ones(2))
    w = constant(graph, "w")
    (edge,) = out_edges(graph, w.id)
    assert graph.nodes[edge.dst].name == "mul_"
    assert edge.stats["mean"] == 2.5 and edge.stats["zeros"] == 0.0
    mul_ = only_op(graph, "mul_")
    assert all(e.stats["zeros"] == 1.0 for e in graph.edges if e.src == mul_.id)


def test_a_buffer_read_first_and_written_later_is_unchanged() -> None:
    graph = torchscope.trace(ReadThenWrite(), torch.zeros(3))
    buf = constant(graph, "buf")
    edges = out_edges(graph, buf.id)
    assert {graph.nodes[e.dst].name for e in edges} == {"add", "add_"}
    assert all(e.stats["mean"] == 5.0 for e in edges)
    add_ = only_op(graph, "add_")
    assert all(e.stats["mean"] == 15.0 for e in graph.edges if e.src == add_.id)


def test_a_buffer_overwritten_through_out_is_not_read_before() -> None:
    # out= writes without reading: the buffer's old values are no input of the call
    graph = torchscope.trace(OutIntoBuffer(), torch.ones(2))
    (edge,) = out_edges(graph, constant(graph, "buf").id)
    assert edge.stats["mean"] == 2.0


class NanCacheOverwritten(nn.Module):
    """A cache that holds NaN until filled ("not yet"), overwritten whole by the forward."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.full((2,), float("nan")))
        self.register_buffer("zeroed", torch.full((2,), float("nan")))

    def forward(self, x):
        self.cache.copy_(x)
        self.zeroed.zero_()
        return self.cache * 2 + self.zeroed


def test_a_buffer_a_call_overwrites_whole_is_no_nan_origin() -> None:
    # (a review: the read before the write named the overwritten NaN the origin, the output
    # being finite)
    graph = torchscope.trace(NanCacheOverwritten(), torch.ones(2))
    assert graph.nan_origin is None


@pytest.mark.parametrize("costs", [True, False])
def test_foreach_in_place_on_buffers_keeps_their_values_before_the_write(costs: bool) -> None:
    graph = torchscope.trace(ForeachBuffers(), torch.zeros(2), costs=costs)
    assert out_edges(graph, constant(graph, "a").id)[0].stats["mean"] == 5.0
    assert out_edges(graph, constant(graph, "b").id)[0].stats["mean"] == -2.0
    # what the write made: under the FLOP counter (costs) _foreach_add_ leaves the version
    # as it was, and the values read before stood for those after (a review)
    made = {e.stats["mean"] for e in graph.edges if e.src == only_op(graph, "_foreach_add_").id}
    assert made <= {15.0, 8.0} and made, made


class ForeachLog(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("a", torch.tensor([-1.0, 4.0]))

    def forward(self, x):
        torch._foreach_log_([self.a])
        return x + self.a


@pytest.mark.parametrize("costs", [True, False])
def test_the_nan_origin_of_a_foreach_write_is_the_write(costs: bool) -> None:
    graph = torchscope.trace(ForeachLog(), torch.ones(2), costs=costs)
    assert graph.nodes[graph.nan_origin].name == "_foreach_log_"


def test_traced_again_the_same_values_and_no_stale_statistics() -> None:
    """The statistics of weights are kept between traces by version: the read before the
    write must not stand for the values the write leaves, nor for values set later."""
    model = AddBuffer()
    for _ in range(3):
        graph = torchscope.trace(model, torch.zeros(3))
        assert out_edges(graph, constant(graph, "buf").id)[0].stats["mean"] == 5.0
    assert torch.equal(model.buf, torch.full((3,), 5.0))  # the trace left it as it was
    with torch.no_grad():
        model.buf.fill_(7.0)
    graph = torchscope.trace(model, torch.zeros(3))
    assert out_edges(graph, constant(graph, "buf").id)[0].stats["mean"] == 7.0
    assert all(e.stats["mean"] == 17.0 for e in graph.edges if e.src == only_op(graph, "add_").id)


def test_statistics_read_ahead_are_those_before_the_write() -> None:
    model = LogBuffer()
    read_ahead(model)
    graph = torchscope.trace(model, torch.ones(2))
    assert out_edges(graph, constant(graph, "buf").id)[0].stats["nan"] == 0
    assert graph.nodes[graph.nan_origin].name == "log_"


def test_without_values_or_costs_the_graph_is_the_same() -> None:
    full = torchscope.trace(LogBuffer(), torch.ones(2))
    for values, costs in ((False, True), (True, False), (False, False)):
        graph = torchscope.trace(LogBuffer(), torch.ones(2), values=values, costs=costs)
        assert [(n.kind, n.name) for n in graph.nodes] == [(n.kind, n.name) for n in full.nodes]
        assert [(e.src, e.dst) for e in graph.edges] == [(e.src, e.dst) for e in full.edges]
        if values:
            assert graph.nodes[graph.nan_origin].name == "log_"


class InitsItsBias(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        with torch.no_grad():
            nn.init.constant_(self.fc.bias, -1.0)
            F.relu(self.fc.weight, inplace=True)
        return self.fc(x)


def test_a_write_given_its_tensor_by_name_or_asked_for_by_inplace_is_one_node_with_its_input() -> (
    None
):
    # (QA: `nn.init.constant_` hands torch its tensor as `tensor=`: the call's record failed
    # and left two nodes, neither reading the bias; an `inplace=True` write was not seen as a
    # write at all, so the weight's edge read after it)
    model = InitsItsBias()
    weight = model.fc.weight.detach().clone()
    graph = torchscope.trace(model, torch.ones(2), values=True)
    init = only_op(graph, "constant_")
    (edge,) = out_edges(graph, constant(graph, "bias").id)
    assert edge.dst == init.id
    relu = only_op(graph, "relu")
    (edge,) = out_edges(graph, constant(graph, "weight").id)
    assert edge.dst == relu.id
    assert edge.stats["min"] == weight.min().item() < 0  # its values before the write
    assert graph.warnings == []


class FilledBuffer(nn.Module):
    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.register_buffer("scale", torch.full((4,), 3.0))

    def forward(self, x):
        if self.how == "fill_":
            self.scale.fill_(5.0)
        else:
            self.scale.copy_(torch.full((4,), 5.0))
        return x * self.scale


@pytest.mark.parametrize("how", ["fill_", "copy_"])
def test_a_buffer_a_call_overwrites_first_shows_its_values_before_the_write(how: str) -> None:
    # (QA: the edge into fill_ said min = max = 5.0, the values after the write, where the
    # buffer held 3.0 when passed; an overwritten NaN stays no origin: test above)
    graph = torchscope.trace(FilledBuffer(how), torch.ones(4))
    (edge,) = out_edges(graph, constant(graph, "scale").id)
    assert graph.nodes[edge.dst].name == how
    assert (edge.stats["min"], edge.stats["max"]) == (3.0, 3.0)
    after = [e for e in graph.edges if e.src == edge.dst]
    assert after and all(e.stats["min"] == 5.0 for e in after)
    assert graph.nan_origin is None


class MaskFilledOverNaN(nn.Module):
    """A mask buffer holding NaN until the forward fills it with -inf above the diagonal
    and a whole row of -inf: softmax makes NaN of that row."""

    def __init__(self, before: float) -> None:
        super().__init__()
        self.register_buffer("mask", torch.full((4, 4), before))

    def forward(self, x):
        m = torch.full((4, 4), float("-inf")).triu(1)
        m[0, 0] = float("-inf")
        self.mask.copy_(m)
        return torch.softmax(x + self.mask, -1)


class FilledWithNaN(nn.Module):
    def __init__(self, before: float) -> None:
        super().__init__()
        self.register_buffer("buf", torch.full((4,), before))

    def forward(self, x):
        self.buf.fill_(float("nan"))
        return x + self.buf


@pytest.mark.parametrize("before", [0.0, float("nan")])
def test_what_a_buffer_held_before_a_call_overwrote_it_stands_in_no_origins_way(
    before: float,
) -> None:
    # (review: the NaN an overwritten buffer held counted as a bad input of the write, so
    # neither the write that makes NaN itself nor the softmax after an -inf mask was the
    # origin: none was found)
    graph = torchscope.trace(MaskFilledOverNaN(before), torch.zeros(4, 4))
    assert graph.nodes[graph.nan_origin].name == "softmax"
    graph = torchscope.trace(FilledWithNaN(before), torch.zeros(4))
    assert graph.nodes[graph.nan_origin].name == "fill_"


class ResizedNaN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", torch.full((4,), float("nan")))

    def forward(self, x):
        self.buf.resize_(4)  # (keeps its values: no overwrite)
        return x + self.buf


def test_a_buffer_holding_nan_resized_in_place_is_still_the_origin() -> None:
    graph = torchscope.trace(ResizedNaN(), torch.zeros(4))
    origin = graph.nodes[graph.nan_origin]
    assert (origin.kind, origin.name) == ("constant", "buf")
