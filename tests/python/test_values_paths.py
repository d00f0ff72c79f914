"""Values and costs where the data takes an unusual path (found by QA): an infinity written in
place and read through another tensor (the base of a written slice, a view taken before the
write, an alias), a TorchScript box, -inf in a list argument, `x[i] = v`, a float64 range wider
than float64, and the time of a call that runs under the FLOP counter."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import torchscope
from torchscope import costs, tracer


class Fn(nn.Module):
    def __init__(self, f: Callable[..., Any]) -> None:
        super().__init__()
        self.f = f

    def forward(self, *xs: Any) -> Any:
        return self.f(*xs)


def origin(graph: Any) -> str | None:
    return None if graph.nan_origin is None else graph.nodes[graph.nan_origin].name


def slice_written_base_read(x: torch.Tensor) -> torch.Tensor:
    y = x.half() * 1
    y[:, :2].mul_(1000.0)  # 100 * 1000 > 65504: Inf, in y's memory
    return y.float()


def view_taken_before_the_write(x: torch.Tensor) -> torch.Tensor:
    qk = x.half() * 1
    q, k = qk.chunk(2, dim=-1)
    qk.mul_(1000.0)
    return q * k * 0  # Inf * 0: NaN


def alias_read(x: torch.Tensor) -> torch.Tensor:
    y = x * 1
    d = y.detach()
    y.exp_()  # exp(100): Inf
    return d * 0


@pytest.mark.parametrize(
    ("f", "op"),
    [
        (slice_written_base_read, "mul_"),
        (view_taken_before_the_write, "mul_"),
        (alias_read, "exp_"),
    ],
)
def test_an_inf_written_in_place_and_read_through_another_tensor_has_its_origin(f, op):
    graph = torchscope.trace(Fn(f), torch.full((2, 4), 100.0))
    out = next(e.stats for e in graph.edges if graph.nodes[e.dst].kind == "output")
    assert out is not None and out["nan"] + out["inf"] > 0
    assert origin(graph) == op


class LogOf(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)


class Scripted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.jit.script(LogOf())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x - 5) * 2


def test_a_torchscript_box_that_makes_nan_is_the_origin():
    graph = torchscope.trace(Scripted(), torch.ones(3))
    assert graph.nan_origin is not None
    assert graph.nodes[graph.nan_origin].path == "inner"


def test_an_inf_given_in_a_list_is_asked_for():
    for f, x in (
        (lambda x: x + x.new_tensor([0.0, float("-inf"), 0.0]), torch.randn(3)),
        (lambda x: x + x.new_tensor([[0.0], [float("-inf")], [0.0]]), torch.randn(3)),
        # past the 16 items a node's attrs show (a mask as long as a vocabulary)
        (lambda x: x + x.new_tensor([0.0] * 31 + [float("-inf")]), torch.randn(32)),
        (lambda x: x + x.new_tensor([[0.0]] * 20 + [[float("-inf")]]), torch.randn(21, 1)),
        # (five lists deep: the attrs' walk went all the way down)
        (lambda x: x + x.new_tensor([[[[[0.0], [float("-inf")]]]]]), torch.randn(2, 1)),
        # numpy's float32 is no Python float (attrs leave it out)
        (lambda x: x.masked_fill(x > 0, np.float32(-np.inf)), torch.randn(3)),
    ):
        graph = torchscope.trace(Fn(f), x)
        assert origin(graph) is None
    # a list of finite numbers asks for nothing: the overflow after it is the origin
    graph = torchscope.trace(
        Fn(lambda x: (x + x.new_tensor([0.0, 1.0, 0.0])).exp()), torch.full((3,), 100.0)
    )
    assert origin(graph) == "exp"


def test_an_item_assignment_counts_the_tensor_it_wrote():
    def write(cache: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        cache[:, 3] = k
        return cache * 1

    cache, k = torch.zeros(2, 16, 64), torch.randn(2, 64)
    graph = torchscope.trace(Fn(write), cache, k)
    node = next(n for n in graph.nodes if n.name == "setitem")
    assert node.cost is not None and node.cost.bytes == cache.numel() * cache.element_size()


def test_float64_values_further_apart_than_its_largest_keep_their_statistics():
    x = torch.tensor([-1.7e308, 1.7e308, 0.0, 1.0], dtype=torch.float64)
    graph = torchscope.trace(Fn(lambda t: t * 1), x)
    edge = next(e for e in graph.edges if graph.nodes[e.src].kind == "input")
    assert edge.stats is not None
    assert (edge.stats["min"], edge.stats["max"], edge.stats["inf"]) == (-1.7e308, 1.7e308, 0)
    assert edge.hist is not None and sum(edge.hist["counts"]) == 4
    counts = edge.hist["counts"]
    assert counts[0] == 1 and counts[-1] == 1 and counts[len(counts) // 2] == 2


def test_a_counted_calls_time_leaves_out_the_counters_own_work(monkeypatch):
    # the counter's own work made slow on purpose (half a second: far above any stall of a
    # loaded machine): a matmul's reported time stays the kernel's
    slow = 0.5

    def slow_formula(*args: Any, **kwargs: Any) -> int:
        time.sleep(slow)
        return 1

    registry = dict(costs.flop_registry)
    registry[torch.ops.aten.mm] = slow_formula
    monkeypatch.setattr(costs, "flop_registry", registry)

    class MatMul(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(32, 16))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.matmul(x, self.w).relu()

    model, x = MatMul(), torch.randn(16, 32)
    model(x)  # (torch's one-time work for a first matmul is not the point here)
    graph = torchscope.trace(model, x)
    matmul = next(n for n in graph.nodes if n.name == "matmul")
    assert matmul.cost is not None and matmul.cost.flops == 1  # (the slow formula ran)
    assert matmul.cost.time_ns < slow * 1e9 / 2
    root = next(n for n in graph.nodes if n.kind == "module")
    assert root.cost is not None and root.cost.time_ns < slow * 1e9 / 2, "nor its module's"


def test_a_write_into_a_tensor_that_already_held_an_asked_for_inf_is_no_origin():
    def f(x: torch.Tensor) -> torch.Tensor:
        mask = torch.zeros(4, 4).masked_fill(torch.ones(4, 4).triu(1).bool(), float("-inf"))
        mask[3].mul_(2.0)  # a row without -inf, written in place: the -inf elsewhere is asked for
        alias = mask.detach()
        mask[2].add_(1.0)
        return (x + mask).softmax(-1) + alias.sum()

    graph = torchscope.trace(Fn(f), torch.randn(4, 4))
    assert origin(graph) is None


def test_writes_elsewhere_in_a_tensor_are_no_origin_of_what_it_held():
    # review: a later finite write into another row was blamed for an Inf the input brought,
    # or a -inf the model asked for, read through a view taken before both writes
    def from_input(x: torch.Tensor) -> torch.Tensor:
        y = torch.zeros(4, 3)
        v = y[:2]
        y.copy_(x)
        y[3].add_(1)
        return v * 1

    def asked_for(x: torch.Tensor) -> torch.Tensor:
        y = x * 1
        v = y[:2]
        m = torch.zeros_like(y, dtype=torch.bool)
        m[0, 0] = True
        y.masked_fill_(m, float("-inf"))
        y[3].add_(1)
        return v * 1

    x = torch.ones(4, 3)
    x[0, 0] = float("inf")
    assert origin(torchscope.trace(Fn(from_input), x)) is None
    assert origin(torchscope.trace(Fn(asked_for), torch.ones(4, 3))) is None


def test_an_input_that_is_a_view_of_a_padded_buffer_is_no_origin():
    # review: the NaN padding the model never sees, in the input's base, blamed on x.mul_
    big = torch.ones(2, 8)
    big[:, 6:] = float("nan")

    def f(x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x.sum(-1)

    assert origin(torchscope.trace(Fn(f), big[:, :4])) is None


def test_a_python_leaf_module_handing_on_a_mask_is_no_origin():
    class Mask(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("mask", torch.triu(torch.full((4, 4), float("-inf")), 1))

        def forward(self) -> torch.Tensor:
            return self.mask

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = Mask()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ x.T + self.m()

    assert origin(torchscope.trace(Net(), torch.randn(4, 8))) is None


@pytest.mark.parametrize("failing", ["first", "second"])
def test_a_failing_layers_time_leaves_out_the_recorders_work_on_its_error(monkeypatch, failing):
    # the recorder's note of the failed call made slow on purpose (far above any stall of a
    # loaded machine): the failing layer's module time stays the layer's own. "first": the
    # first Linear of the trace fails (its call runs under the function mode); "second": a
    # later one, made from the lean call path
    slow = 0.5
    note = tracer.Recorder._note_failed_call

    def slow_note(self: Any, *args: Any, **kwargs: Any) -> None:
        time.sleep(slow)
        note(self, *args, **kwargs)

    monkeypatch.setattr(tracer.Recorder, "_note_failed_call", slow_note)

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(8 if failing == "first" else 16, 16)
            self.b = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(x)))

    graph = tracer.trace_call(Two(), (torch.randn(4, 16),), {}, costs=True, raise_errors=False)
    assert graph.error is not None
    layer = next(
        n
        for n in graph.nodes
        if n.kind == "module" and n.path == ("a" if failing == "first" else "b")
    )
    assert layer.cost is not None and layer.cost.time_ns < slow * 1e9 / 2
