"""torch.nn layers whose forward is one call are recorded from their hooks, with the function
mode off inside them (one_call.py): the graph must be exactly the graph the mode records,
whatever the layers' settings, inputs, hooks and errors, with values on or off."""

from __future__ import annotations

import copy
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch
import zoo  # noqa: E402 - tests/python is on sys.path (rootdir)
from torch import nn
from torch.overrides import TorchFunctionMode

from torchscope import tracer
from torchscope.tracer import trace, trace_call


def _both(
    monkeypatch: pytest.MonkeyPatch, run: Callable[[], Any]
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The graph without and with the shortcut, and how many calls the shortcut recorded."""
    taken = [0]
    real = tracer.Recorder._record_one_call

    def counted(self: Any, *a: Any) -> None:
        taken[0] += 1
        real(self, *a)

    monkeypatch.setattr(tracer.Recorder, "_record_one_call", counted)
    monkeypatch.setattr(tracer, "ONE_CALL_SHORTCUT", False)
    torch.manual_seed(0)
    plain = zoo.clockless_wire(run())
    assert taken[0] == 0
    monkeypatch.setattr(tracer, "ONE_CALL_SHORTCUT", True)
    torch.manual_seed(0)
    short = zoo.clockless_wire(run())
    return plain, short, taken[0]


class Layers(nn.Module):
    """Every layer of the table, some twice, some in settings the shortcut must decline."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.fc_nobias = nn.Linear(8, 8, bias=False)
        self.norm = nn.LayerNorm(8)
        self.norm_plain = nn.LayerNorm(8, elementwise_affine=False)
        self.norm_nobias = nn.LayerNorm([2, 8], bias=False)
        self.gelu = nn.GELU()
        self.gelu_tanh = nn.GELU(approximate="tanh")
        self.relu = nn.ReLU()
        self.relu_inplace = nn.ReLU(inplace=True)
        self.silu = nn.SiLU()
        self.silu_inplace = nn.SiLU(inplace=True)
        self.tanh = nn.Tanh()
        self.sigmoid = nn.Sigmoid()
        self.drop = nn.Dropout(0.5)
        self.drop_inplace = nn.Dropout(0.5, inplace=True)
        self.conv1 = nn.Conv1d(2, 2, 3, padding=1)
        self.conv2 = nn.Conv2d(1, 3, 3, padding="same", groups=1)
        self.conv2_reflect = nn.Conv2d(3, 3, 3, padding=1, padding_mode="reflect", groups=3)
        self.conv2_nobias = nn.Conv2d(3, 1, (1, 3), stride=(1, 2), bias=False)
        self.fc_plain = nn.Linear(8, 8)  # its weight a plain tensor, outside its parameter table
        del self.fc_plain.weight
        self.fc_plain.weight = torch.randn(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        h = self.fc(h)  # the same layer twice
        h = self.norm(self.gelu(h)) + self.norm_plain(self.gelu_tanh(h))
        h = self.fc_nobias(self.relu(h))
        h = self.fc_plain(self.fc_plain(h))
        h = self.relu_inplace(h * 1)
        h = self.silu(h) + self.silu_inplace(h * 2)
        h = self.tanh(h) * self.sigmoid(h)
        h = self.drop(h) + self.drop_inplace(h + 0)
        h = self.norm_nobias(h)
        h = self.fc(h[0])  # a view
        h = h + self.silu(self.tanh(self.sigmoid(self.drop(self.relu(h)))))  # each class again
        c = self.conv1(self.conv1(x))
        img = self.conv2(x.view(1, 1, 2, 8))
        img = self.conv2_nobias(self.conv2_reflect(img))
        return h.sum() + c.sum() + img.sum() + self.fc(self.fc.weight).sum()


@pytest.mark.parametrize("costs", [False, True])
@pytest.mark.parametrize("values", [False, True])
@pytest.mark.parametrize("training", [False, True])
def test_the_shortcut_records_the_graph_the_mode_records(
    monkeypatch: pytest.MonkeyPatch, values: bool, training: bool, costs: bool
) -> None:
    torch.manual_seed(1)
    model = Layers().train(training)
    x = torch.randn(2, 8)
    before = copy.deepcopy(model.state_dict())
    plain, short, taken = _both(monkeypatch, lambda: trace(model, x, values=values, costs=costs))
    assert short == plain  # with costs: the same FLOPs and bytes of every call
    assert taken >= 13  # the shortcut was taken for every class, not only declined
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_with_costs_a_layer_s_call_is_timed_inside_its_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.GELU()) for _ in range(4)])
    g = trace(model, torch.randn(8, 64), values=False, costs=True)
    ops = [n for n in g.nodes if n.kind == "op"]
    assert {n.name for n in ops} == {"linear", "gelu"}
    for op in ops:
        layer = g.nodes[op.parent]  # type: ignore[index]
        assert op.cost is not None and layer.cost is not None
        assert 0 < op.cost.time_ns <= layer.cost.time_ns
        if op.name == "linear":
            assert op.cost.flops == 2 * 8 * 64 * 64
        else:
            assert op.cost.flops == 0  # (the registry counts no FLOPs for gelu)


@pytest.mark.parametrize("costs", [False, True])
def test_a_learned_layer_s_later_calls_are_made_whole_from_the_lean_call_path(
    monkeypatch: pytest.MonkeyPatch, costs: bool
) -> None:
    callers: dict[type, list[str]] = {nn.Linear: [], nn.Conv1d: []}
    for cls, seen in callers.items():
        real = cls.forward

        def forward(self: nn.Module, x: torch.Tensor, real: Any = real, seen: Any = seen) -> Any:
            seen.append(sys._getframe(1).f_code.co_name)
            return real(self, x)

        monkeypatch.setattr(cls, "forward", forward)
    model = nn.Sequential(
        nn.Linear(4, 4),
        nn.GELU(),
        nn.Linear(4, 4),
        nn.Linear(4, 4),
        nn.Unflatten(1, (1, 4)),
        *[nn.Conv1d(1, 1, 3, padding=1) for _ in range(3)],
    )
    plain, short, taken = _both(
        monkeypatch, lambda: trace(model, torch.randn(2, 4), values=True, costs=costs)
    )
    assert short == plain
    assert taken == 4  # the later two of each class (the first learns; GELU's only call too)
    # the recorder's hooks for the first call of a class; the later ones from the lean path
    # in one call, but for a call whose FLOPs the counter must see (a convolution, costs on)
    assert callers[nn.Linear][-3:] == ["lean_call", "layer_call", "layer_call"]
    later = "lean_call" if costs else "layer_call"
    assert callers[nn.Conv1d][-3:] == ["lean_call", later, later]


class Hooked(nn.Module):
    """Layers the user reaches into: a hook of its own, a forward set on the instance, a
    subclass, a call with a keyword argument, a mode of the user's around one call, torch
    functions turned off, a call from another thread."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.hooked = nn.Linear(4, 4)
        self.hooked.register_forward_hook(_double)
        self.patched = nn.Linear(4, 4)
        self.patched.forward = lambda x: torch.relu(x) + 1  # type: ignore[method-assign]
        self.sub = _MyLinear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        h = self.hooked(h)
        h = self.patched(h)
        h = self.sub(h)
        h = self.a(input=h)
        with _Names(SEEN.names):
            h = self.a(h)
        with torch._C.DisableTorchFunction():
            h = self.a(h)
        out: list[torch.Tensor] = []
        worker = threading.Thread(target=lambda: out.append(self.a(h)))  # modes are per thread
        worker.start()
        worker.join()
        return self.a(h) + out[0]


def _double(module: nn.Module, args: Any, out: torch.Tensor) -> torch.Tensor:
    return out * 2


class _Seen:
    """What the user's mode saw, kept across traces: the trace puts back the lists of the
    model and of its file's globals as they were, not those of an object they hold."""

    def __init__(self) -> None:
        self.names: list[str] = []


SEEN = _Seen()


class _MyLinear(nn.Linear):
    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return super().forward(input).tanh()


class _Names(TorchFunctionMode):
    def __init__(self, seen: list[str]) -> None:
        super().__init__()
        self.seen = seen

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        self.seen.append(getattr(func, "__name__", "?"))
        return func(*args, **(kwargs or {}))


def test_the_shortcut_steps_aside_where_the_user_reaches_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = Hooked()
    x = torch.randn(2, 4)
    SEEN.names.clear()
    plain, short, taken = _both(monkeypatch, lambda: trace(model, x, values=False, costs=False))
    assert short == plain
    assert taken >= 1
    # the user's own mode saw the layer's call in both traces (it sits above the recorder's)
    assert SEEN.names.count("linear") == 2


class Fails(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ok = nn.Linear(4, 4)
        self.bad = nn.Linear(5, 4)
        self.norm = nn.LayerNorm(4)
        self.bad_norm = nn.LayerNorm(6)

    def forward(self, x: torch.Tensor, which: str) -> torch.Tensor:
        h = self.norm(self.ok(self.ok(x)))
        if which == "linear":
            return self.bad(h)
        if which == "norm":
            return self.bad_norm(h)
        return h


@pytest.mark.parametrize("costs", [False, True])
@pytest.mark.parametrize("which", ["linear", "norm"])
def test_a_layer_that_raises_inside_the_shortcut_is_marked_as_the_mode_marks_it(
    monkeypatch: pytest.MonkeyPatch, which: str, costs: bool
) -> None:
    model = Fails()
    x = torch.randn(2, 4)

    def run() -> Any:
        return trace_call(model, (x, which), {}, values=False, costs=costs, raise_errors=False)

    plain, short, taken = _both(monkeypatch, run)
    error = plain["error"]
    assert error is not None
    nodes = {n["id"]: n for n in plain["nodes"]}
    failed = nodes[error["node"]]
    assert nodes[failed["parent"]]["path"] == ("bad" if which == "linear" else "bad_norm")
    # the traceback is the real one, without the mode's detour through handle_torch_function
    # (F.layer_norm hands itself to the mode and is called again): what a plain run shows
    frames, short_frames = plain["error"].pop("traceback"), short["error"].pop("traceback")
    assert short == plain
    assert short_frames == [f for f in frames if not f["file"].endswith("overrides.py")][
        : len(short_frames) - 1
    ] + [frames[-1]]
    assert taken >= 2


def test_the_mode_is_back_after_a_trace_whatever_the_forward_did() -> None:
    model = Fails()
    depth = torch._C._len_torch_function_stack()
    trace_call(
        model, (torch.randn(2, 4), "linear"), {}, values=False, costs=False, raise_errors=False
    )
    trace_call(model, (torch.randn(2, 4), "none"), {}, values=False, costs=False)
    assert torch._C._len_torch_function_stack() == depth


@pytest.mark.parametrize("costs", [False, True])
@pytest.mark.parametrize("name", sorted(zoo.ZOO))
def test_every_zoo_model_gets_the_same_graph_with_the_shortcut(
    monkeypatch: pytest.MonkeyPatch, name: str, costs: bool
) -> None:
    plain, short, _ = _both(monkeypatch, zoo.structure_trace(name, costs))
    if plain.get("error") and short.get("error"):  # (tracebacks: see the test above)
        plain["error"].pop("traceback"), short["error"].pop("traceback")
    assert short == plain


class Interrupted(nn.Module):
    """A KeyboardInterrupt inside a layer's call: torch runs no post hook for it."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(self.a(x))  # the first learns, the second takes the shortcut
        real = torch.nn.functional.linear
        torch.nn.functional.linear = _interrupt  # type: ignore[assignment]
        try:
            return self.a(h)
        finally:
            torch.nn.functional.linear = real


def _interrupt(*args: Any, **kwargs: Any) -> torch.Tensor:
    raise KeyboardInterrupt


@pytest.mark.parametrize("costs", [False, True])
def test_an_interrupt_inside_the_shortcut_leaves_no_mode_behind(costs: bool) -> None:
    functions = torch._C._len_torch_function_stack()
    dispatch = torch._C._len_torch_dispatch_stack()
    with pytest.raises(KeyboardInterrupt):
        trace_call(Interrupted(), (torch.randn(2, 4),), {}, values=False, costs=costs)
    assert torch._C._len_torch_function_stack() == functions
    assert torch._C._len_torch_dispatch_stack() == dispatch
    g = trace_call(Interrupted().a, (torch.randn(2, 4),), {}, values=False, costs=costs)
    assert [n.name for n in g.nodes if n.kind == "op"] == ["linear"]  # and traces again


def test_a_layer_class_whose_forward_was_replaced_runs_that_forward(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A library that patches `nn.Linear.forward` (a quantizer, a logger) has its forward run
    for every call, not the one call torch's forward would make."""
    seen: list[int] = []
    torch_forward = nn.Linear.forward

    def logged(self: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        seen.append(id(self))
        return torch_forward(self, x)

    monkeypatch.setattr(nn.Linear, "forward", logged)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(3)])
    graph = trace(model, torch.randn(2, 4), values=False, costs=False)
    assert seen == [id(m) for m in model]
    assert [n.name for n in graph.nodes if n.kind == "op"] == ["linear"] * 3


def test_a_weight_set_on_the_instance_beside_its_table_is_the_one_used() -> None:
    """`object.__setattr__(layer, "weight", w)` leaves the parameter in its table, but
    `layer.weight` (what torch's forward reads) is the instance's: the traced forward
    computes with it, as a plain run does."""
    made: list[torch.Tensor] = []

    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.b(self.a(x))
            made.append(y.detach().clone())
            return y

    model = Two()
    # (the first Linear as usual: its call teaches the trace the shortcut the second takes)
    object.__setattr__(model.b, "weight", torch.zeros(4, 4))
    x = torch.randn(2, 4)
    with torch.no_grad():
        model(x)
    for values in (False, True):
        trace(model, x, values=values, costs=False)
        assert torch.equal(made[-1], made[0])
