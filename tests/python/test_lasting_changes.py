"""Writes a trace must undo whatever path they take (issue 15, items 2 and 3): parameters
written through `.data`, `out=`, `_foreach_*_`, numpy, or rebound; torch's global settings;
the torch-function mode stack a forward leaves behind. What can't be undone is said loudly:
`graph.warnings` (and the panel shows them)."""

from __future__ import annotations

import collections
import gc
import weakref

import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

import torchscope
from torchscope.tracer import trace_call


class Lin(nn.Module):
    def __init__(self, write) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.write = write

    def forward(self, x):
        self.write(self)
        return self.fc(x)


def _rebind(m: nn.Module) -> None:
    m.fc.weight = nn.Parameter(torch.zeros(2, 3))


def _numpy(m: nn.Module) -> None:
    m.fc.weight.detach().numpy()[:] = 7.0


def _set_data(m: nn.Module) -> None:
    m.fc.weight.data = torch.full((2, 3), 5.0)


def _write_then_set_data(m: nn.Module) -> None:
    m.fc.weight.data.mul_(2)  # its own storage written (a copy kept first) …
    m.fc.weight.data = torch.full((2, 3), 5.0)  # … then pointed elsewhere


WRITES = {
    "data.mul_": lambda m: m.fc.weight.data.mul_(2),
    "out=data": lambda m: torch.mul(m.fc.weight.detach(), 3, out=m.fc.weight.data),
    "foreach_mul_": lambda m: torch._foreach_mul_([m.fc.weight.data, m.fc.bias.data], 0.0),
    "numpy": _numpy,
    "rebind": _rebind,
    "set .data": _set_data,
    "mul_ then set .data": _write_then_set_data,
    "detach().zero_": lambda m: m.fc.weight.detach().zero_(),
    "copy_ (worked before)": lambda m: m.fc.weight.data.copy_(torch.ones(2, 3)),
    # (QA: a write asked for by `inplace=True`, or through `nn.init`, whose tensor torch
    # hands over as the keyword `tensor=`, was neither seen nor undone)
    "F.relu(inplace=True)": lambda m: torch.nn.functional.relu(m.fc.weight.data, inplace=True),
    "F.hardtanh(…, True)": lambda m: torch.nn.functional.hardtanh(m.fc.bias.data, 0.0, 0.1, True),
    "nn.ReLU(inplace=True)": lambda m: nn.ReLU(inplace=True)(m.fc.weight.data),
    "init.normal_": lambda m: nn.init.normal_(m.fc.bias),
    "init.constant_": lambda m: nn.init.constant_(m.fc.bias, 3.0),
    "init.uniform_": lambda m: nn.init.uniform_(m.fc.weight),
    "reset_parameters": lambda m: m.fc.reset_parameters(),
    # (torch hands `set_` to no function mode; a view from before still writes its memory)
    "set_, then a write through a view from before": lambda m: _set_then_write(m.fc.weight),
}


def _set_then_write(w: torch.Tensor) -> None:
    view = w.detach()
    w.set_(torch.zeros(2, 3))
    view.add_(1)


@pytest.mark.parametrize("how", list(WRITES))
def test_parameter_writes_are_undone_whatever_the_path(how):
    model = Lin(WRITES[how])
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    params = {k: id(p) for k, p in model.named_parameters()}
    g = torchscope.trace(model, torch.randn(1, 3))
    after = model.state_dict()
    assert all(torch.equal(after[k], v) for k, v in before.items()), how
    assert {k: id(p) for k, p in model.named_parameters()} == params, "a parameter was rebound"
    assert g.warnings == []


MOVES = {
    "meta": lambda t: t.to("meta"),
    "float64": lambda t: t.double(),
    "int32 view of its memory": lambda t: t.view(torch.int32),  # same storage, same shape
}


@pytest.mark.parametrize("to", list(MOVES))
def test_a_parameter_moved_to_another_device_or_dtype_is_put_back(to):
    """`.data` set to a tensor of another device or dtype (the forward then fails on it): the
    parameter is pointed back at its own memory, as it was, on every trace."""
    move = MOVES[to]
    model = Lin(lambda m: setattr(m.fc.weight, "data", move(m.fc.weight.data)))
    model.fc.weight.requires_grad_(False)  # (.data of a weight that needs grad must be float)
    for _ in range(2):
        before = model.fc.weight.detach().clone()
        g = trace_call(model, (torch.randn(1, 3),), raise_errors=False)
        assert g.error is not None  # the layer got a weight it can't use
        w = model.fc.weight
        assert (w.device.type, w.dtype) == ("cpu", torch.float32)
        assert torch.equal(w.detach(), before)
        assert g.warnings == []


def test_a_parameter_re_strided_over_its_own_memory_is_put_back():
    """`.data` set to another view of the same memory, same start and shape, other strides
    (the forward runs on it): the parameter is seen as it was again."""
    model = Lin(lambda m: setattr(m.fc.weight, "data", m.fc.weight.data.as_strided((2, 3), (1, 2))))
    before = model.fc.weight.detach().clone()
    for _ in range(2):
        g = torchscope.trace(model, torch.randn(1, 3))
        assert model.fc.weight.stride() == (3, 1)
        assert torch.equal(model.fc.weight.detach(), before)
        assert g.warnings == []


def test_a_parameter_frozen_or_unfrozen_by_the_forward_is_put_back():
    """`requires_grad` is the parameter's own state: a forward that freezes one weight and
    unfreezes another leaves both as they were after the trace."""

    def flip(m: nn.Module) -> None:
        m.fc.weight.requires_grad_(False)
        m.fc.bias.requires_grad = True

    model = Lin(flip)
    model.fc.bias.requires_grad_(False)
    g = torchscope.trace(model, torch.randn(1, 3))
    assert (model.fc.weight.requires_grad, model.fc.bias.requires_grad) == (True, False)
    assert g.warnings == []


def test_containers_the_forward_fills_in_place_hold_what_they_held():
    """A forward that adds to a dict, list or set attribute (a cache, a log), or replaces an
    entry, leaves them with exactly their objects before the trace; one level deep."""
    inner = [1]

    class Fills(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.cache = {"a": inner}
            self.log: list[int] = []
            self.tags = {"x"}
            self.memo: collections.OrderedDict[str, int] = collections.OrderedDict(b=1)

        def forward(self, x):
            self.cache["a"] = [2]
            self.cache["k"] = x
            self.log.append(1)
            self.tags.add("y")
            self.memo.move_to_end("b")
            self.memo["c"] = 2
            return self.fc(x)

    model = Fills()
    torchscope.trace(model, torch.randn(1, 3))
    assert model.cache == {"a": [1]} and model.cache["a"] is inner
    assert model.log == [] and model.tags == {"x"} and list(model.memo.items()) == [("b", 1)]


def test_hooks_the_forward_registers_are_gone_after_the_trace():
    """A forward that registers hooks (a forward hook on a layer, a gradient hook on a weight,
    a global module hook) leaves none behind; hooks the program registered before stay."""
    calls: list[str] = []
    kept = nn.Linear(3, 2)

    def register(m: nn.Module) -> None:
        m.fc.register_forward_hook(lambda *a: calls.append("layer hook"))
        m.fc.register_forward_pre_hook(lambda *a: calls.append("layer pre-hook"), with_kwargs=True)
        m.fc.weight.register_hook(lambda g: g)
        nn.modules.module.register_module_forward_hook(lambda *a: calls.append("global hook"))

    model = Lin(register)
    model.fc.register_forward_hook(lambda *a: calls.append("the program's own"))
    hooks_before = {
        name: dict(getattr(nn.modules.module, name)) for name in ("_global_forward_hooks",)
    }
    torchscope.trace(model, torch.randn(1, 3))
    assert len(model.fc._forward_hooks) == 1  # the program's own
    assert not model.fc._forward_pre_hooks and not model.fc._forward_pre_hooks_with_kwargs
    assert not model.fc.weight._backward_hooks
    assert dict(nn.modules.module._global_forward_hooks) == hooks_before["_global_forward_hooks"]
    calls.clear()
    model.write = lambda m: None
    kept(torch.randn(1, 3))
    model(torch.randn(1, 3))
    assert calls == ["the program's own"]


@pytest.mark.parametrize("how", list(WRITES))
def test_writes_are_undone_on_every_trace_of_a_model_whose_parameters_move_between(how):
    """What a trace remembers of a parameter's memory between traces (state.py's layouts)
    is used only while the parameter still lies there: moved, reshaped or transposed between
    traces, it is still put back exactly."""
    model = Lin(WRITES[how])
    moves = [
        lambda: None,
        lambda: setattr(model.fc.weight, "data", torch.randn(2, 3)),  # another storage
        lambda: setattr(model.fc.weight, "data", torch.randn(3, 2).t()),  # strided, same shape
        lambda: setattr(model.fc.bias, "data", torch.randn(4)[1:3]),  # an offset into a storage
    ]
    for move in moves:
        move()
        before = {k: v.detach().clone() for k, v in model.state_dict().items()}
        strides = {k: v.stride() for k, v in model.state_dict().items()}
        g = torchscope.trace(model, torch.randn(1, 3))
        after = model.state_dict()
        assert all(torch.equal(after[k], v) for k, v in before.items()), how
        assert {k: v.stride() for k, v in after.items()} == strides, how
        assert g.warnings == []


def test_an_unseen_write_is_said_after_the_parameter_moved_between_traces():
    """Traced once; the parameter gets other memory and a numpy view of it; traced again: the
    second trace samples the new memory, so the write behind torch's back still shows."""

    class Table(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = nn.Parameter(torch.zeros(200, 300), requires_grad=False)
            self.raw = None

        def forward(self, x):
            if self.raw is not None:
                self.raw[:] = 1
            return x + 1

    model = Table()
    assert torchscope.trace(model, torch.ones(1)).warnings == []
    model.table.data = torch.zeros(200, 300)
    model.raw = model.table.detach().numpy()
    assert [w.split(" ")[0] for w in torchscope.trace(model, torch.ones(1)).warnings] == ["table"]


def test_what_a_trace_remembers_of_parameters_keeps_none_alive():
    """The layouts kept between traces hold no parameter, not even weakly (a weak reference
    makes torch.utils.swap_tensors refuse it), and never its memory: a model deleted after
    its trace is gone, and the entries of models gone do not pile up."""
    from torchscope import state

    model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
    torchscope.trace(model, torch.randn(1, 64))
    keys = [id(p) for p in model.parameters()]
    assert all(k in state._layouts for k in keys)
    assert [weakref.getweakrefcount(p) for p in model.parameters()] == [0] * 4
    gone = weakref.ref(model[0].weight)
    del model
    gc.collect()
    assert gone() is None
    for _ in range(state._LAYOUTS_SPARE):  # models made, traced and let go, one by one
        other = nn.Linear(2, 2)
        torchscope.trace(other, torch.randn(1, 2), values=False, costs=False)
    assert len(state._layouts) <= 2 * 2 + state._LAYOUTS_SPARE
    assert all(id(p) in state._layouts for p in other.parameters())


def test_a_write_that_cannot_be_undone_is_said_in_the_graph():
    """A numpy view taken before the trace writes behind torch's back: nothing sees it
    happen, so the trace can't restore it; the parameter's checksum tells, and the graph
    says so (never silently)."""
    model = Lin(lambda m: None)
    view = model.fc.weight.detach().numpy()

    def write(_m: nn.Module) -> None:
        view[:] = 3.0

    model.write = write
    g = torchscope.trace(model, torch.randn(1, 3))
    assert any("fc.weight" in w and "could not be restored" in w for w in g.warnings), g.warnings
    assert g.to_wire()["warnings"] == g.warnings


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int8])
def test_an_unseen_write_to_a_big_parameter_is_said_whatever_its_dtype(dtype):
    """The check reads a strided sample of each parameter's memory (200 x 300 elements,
    more than the sample): a write behind torch's back over the whole table shows, in any
    element size; an untouched parameter of the same model gives no warning."""

    class Table(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = nn.Parameter(torch.zeros(200, 300, dtype=dtype), requires_grad=False)
            self.other = nn.Parameter(torch.zeros(200, 300, dtype=dtype), requires_grad=False)
            self.raw = self.table.detach().view(torch.uint8).numpy()

        def forward(self, x):
            self.raw[:] = 1  # every byte: no sampled element can miss it
            return x + 1

    g = torchscope.trace(Table(), torch.ones(1))
    assert [w.split(" ")[0] for w in g.warnings] == ["table"], g.warnings


def test_global_settings_are_restored():
    class Settings(nn.Module):
        def forward(self, x):
            torch.set_default_dtype(torch.float64)
            torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
            torch.backends.cuda.matmul.allow_tf32 = not torch.backends.cuda.matmul.allow_tf32
            torch.set_float32_matmul_precision("medium")
            torch.use_deterministic_algorithms(True)
            return x + 1

    before = (
        torch.get_default_dtype(),
        torch.backends.cudnn.benchmark,
        torch.backends.cuda.matmul.allow_tf32,
        torch.get_float32_matmul_precision(),
        torch.are_deterministic_algorithms_enabled(),
    )
    torchscope.trace(Settings(), torch.zeros(2))
    assert (
        torch.get_default_dtype(),
        torch.backends.cudnn.benchmark,
        torch.backends.cuda.matmul.allow_tf32,
        torch.get_float32_matmul_precision(),
        torch.are_deterministic_algorithms_enabled(),
    ) == before


class Counting(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def _stack() -> list[object]:
    return list(torch.overrides._get_current_function_mode_stack())


def test_a_mode_the_forward_pushes_and_never_pops_stays_and_the_recorder_goes():
    """The stack is left as the forward left it, minus the recorder: the user's mode stays
    on top, torchscope records nothing after the trace."""
    pushed = Counting()

    class Pusher(nn.Module):
        def forward(self, x):
            pushed.__enter__()  # never exited: the program's own business
            return x * 2

    try:
        torchscope.trace(Pusher(), torch.ones(2))
        stack = _stack()
        assert stack == [pushed], stack
        torch.ones(1) + 1  # seen by the user's mode only
        assert pushed.names[-1] in ("add", "__add__")
    finally:
        while _stack():
            torch._C._pop_torch_function_stack()


def test_an_outer_user_mode_sees_the_forward_but_not_torchscopes_own_ops():
    class BN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bn = nn.BatchNorm1d(3)

        def forward(self, x):
            return self.bn(x)

    outer = Counting()
    with outer:
        torchscope.trace(BN().train(), torch.randn(4, 3))
    assert "batch_norm" in outer.names
    # no snapshot (clone, detach) or restore (copy_) of torchscope's
    assert not {"clone", "copy_", "detach"} & set(outer.names), outer.names


class ReshapesItsOwn(nn.Module):
    """A forward that changes how a buffer, or a plain tensor it holds, sees its memory."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.register_buffer("b", torch.arange(4.0))
        self.t = torch.arange(4.0)
        self.how = how

    def forward(self, x):
        for own in (self.b, self.t):
            if self.how == "resize_ smaller":
                own.resize_(2)  # (a cache trimmed in place)
            elif self.how == "resize_ larger":
                own.resize_(64).fill_(7)
            elif self.how == "unsqueeze_":
                own.unsqueeze_(0)
            elif self.how == "t_ of a view":
                own.resize_(2, 2).t_()
        return x + self.b.sum() + self.t.sum()


@pytest.mark.parametrize("how", ["resize_ smaller", "resize_ larger", "unsqueeze_", "t_ of a view"])
def test_a_buffer_or_tensor_attribute_reshaped_in_place_is_put_back(how):
    """QA: `self.b.resize_(2)` made the restore raise (the graph lost, the buffer left
    shrunk); `unsqueeze_` left it (1, 4); a plain tensor attribute kept its new shape."""
    m = ReshapesItsOwn(how)
    b, t = m.b, m.t
    graph = trace_call(m, (torch.ones(1),), raise_errors=False)
    assert graph.error is None, graph.error
    assert m.b is b and m.t is t
    assert torch.equal(m.b, torch.arange(4.0)), m.b
    assert torch.equal(m.t, torch.arange(4.0)), m.t
    assert m.b.stride() == (1,) and m.t.stride() == (1,)
    assert graph.warnings == []


class Adapts(nn.Module):
    """Test-time adaptation: a backward inside the forward; or `.grad` set, or cleared."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.how = how

    def forward(self, x):
        if self.how == "backward":
            with torch.enable_grad():
                self.fc(x).pow(2).mean().backward()
        elif self.how == "autograd.backward":
            with torch.enable_grad():
                torch.autograd.backward([self.fc(x).sum()])
        elif self.how == "set":
            self.fc.bias.grad = torch.ones(4)
        elif self.how == "zero_grad":
            self.zero_grad(set_to_none=True)
        return self.fc(x)


@pytest.mark.parametrize("how", ["backward", "autograd.backward", "set", "zero_grad"])
@pytest.mark.parametrize("had", [False, True])
def test_the_parameters_grads_are_as_before_the_trace(how, had):
    """QA: a forward calling backward left `.grad` set (or added to the grads a program
    paused between backward and optimizer.step() had: its next step would differ)."""
    m = Adapts(how)
    x = torch.randn(3, 4)
    if had:
        m.fc(x).sum().backward()
    before = {
        n: (p.grad, None if p.grad is None else p.grad.clone()) for n, p in m.named_parameters()
    }
    graph = trace_call(m, (x,), raise_errors=False)
    assert graph.error is None, graph.error
    for n, p in m.named_parameters():
        grad, values = before[n]
        assert p.grad is grad, n
        if values is not None:
            assert torch.equal(p.grad, values), n


STEPS = 0
SEEN: list = []
LOOKUP = {"a": 1}


class GlobalSteps(nn.Module):
    """A forward that keeps a count and a log in its module's globals, as training code
    does (a global step, a list of shapes seen), and adds a global of its own."""

    def forward(self, x):
        global STEPS, FIRST_SHAPE
        STEPS += 1
        SEEN.append(tuple(x.shape))
        LOOKUP["b"] = 2
        FIRST_SHAPE = tuple(x.shape)
        return x * STEPS


def test_the_globals_of_the_models_own_files_are_put_back():
    """At a breakpoint the program goes on after the trace: a global step the forward
    counted, a list it appended to or a dict it filled were left changed (README limits)."""
    graph = torchscope.trace(GlobalSteps(), torch.ones(2))
    assert graph.error is None
    assert STEPS == 0 and SEEN == [] and LOOKUP == {"a": 1}
    assert "FIRST_SHAPE" not in globals()
    # (and a forward that raises half-way)
    failed = trace_call(
        nn.Sequential(GlobalSteps(), nn.Linear(5, 1)), (torch.ones(2),), raise_errors=False
    )
    assert failed.error is not None
    assert STEPS == 0 and SEEN == [] and LOOKUP == {"a": 1}
