"""A forward that raises, a cancelled or timed-out trace, and malformed wire maps."""

from __future__ import annotations

import copy
import linecache
import os

import msgpack
import pytest
import torch
import zoo
from torch import nn

import torchscope

ZOO_FILE = os.path.abspath(zoo.__file__)


def _line(site) -> str:
    return linecache.getline(site.file, site.line)


def _partial(name):
    model, args, kwargs = zoo.build(name)
    with pytest.raises(zoo.ERRORS[name]) as info:
        torchscope.trace(model, *args, **kwargs)
    return info.value, info.value.torchscope_graph


def _check_structure(g):
    for i, n in enumerate(g.nodes):
        assert n.id == i
        if n.parent is not None:
            assert n.parent < i and g.nodes[n.parent].kind == "module"
    parents = {n.parent for n in g.nodes if n.parent is not None}
    for e in g.edges:
        assert 0 <= e.src < len(g.nodes) and 0 <= e.dst < len(g.nodes)
        assert e.src not in parents and e.dst not in parents


def _real_exception(name):
    """The exception a plain forward raises (ground truth for type, message and line)."""
    model, args, kwargs = zoo.build(name)
    with pytest.raises(zoo.ERRORS[name]) as info:
        with torch.no_grad():
            model(*args, **kwargs)
    # innermost frame in zoo.py
    frames = []
    t = info.value.__traceback__
    while t is not None:
        if t.tb_frame.f_code.co_filename == ZOO_FILE:
            frames.append(t.tb_lineno)
        t = t.tb_next
    return info.value, frames[-1]


@pytest.mark.parametrize("name", list(zoo.ERRORS))
def test_original_exception_reraised_with_partial_graph(name):
    exc, g = _partial(name)
    real, line = _real_exception(name)
    assert type(exc) is type(real)
    assert str(exc) == str(real)
    assert isinstance(g, torchscope.Graph)
    assert g.error is not None
    assert g.error.type == type(real).__name__
    assert g.error.message == str(real)
    _check_structure(g)


@pytest.mark.parametrize("name", list(zoo.ERRORS))
def test_exactly_one_error_node_at_the_failing_line(name):
    _, g = _partial(name)
    _, line = _real_exception(name)
    errors = [n for n in g.nodes if n.kind == "error"]
    assert len(errors) == 1
    err = errors[0]
    assert g.error.node == err.id
    assert err.site is not None and err.site.file == ZOO_FILE and err.site.line == line, (
        err.site,
        line,
    )
    tb = g.error.traceback
    assert tb and (tb[-1].file, tb[-1].line) == (ZOO_FILE, line), (
        "traceback ends at the failing line"
    )
    assert tb[-1].func == "forward"
    pkg = os.path.dirname(os.path.abspath(torchscope.__file__))
    assert not [s for s in tb if s.file.startswith(pkg)], "torchscope frames left in the traceback"


def test_error_by_torch_op():
    _, g = _partial("error_op")
    [err] = [n for n in g.nodes if n.kind == "error"]
    block = g.module_call("block", 0)
    assert err.parent == block.id, "the error sits in the module that was running"
    assert "matmul" in _line(err.site)
    assert "matmul" in err.target
    # everything before the failure is there, nothing after it
    paths = [n.path for n in g.nodes if n.kind == "module"]
    assert paths == ["", "first", "block", "block.w"]
    [tanh] = [n for n in g.nodes if n.kind == "op" and n.name == "tanh"]
    assert tanh.parent == block.id and tanh.id < err.id
    # the failing call's tensor inputs are drawn into the error node
    into = sorted((g.nodes[e.src].name, tuple(e.shape)) for e in g.edges if e.dst == err.id)
    assert into == [("ones", (5, 3)), ("tanh", (2, 8))]
    assert not [n for n in g.nodes if n.kind == "output"]


def test_error_by_python_raise():
    _, g = _partial("error_raise")
    [err] = [n for n in g.nodes if n.kind == "error"]
    raiser = g.module_call("stage.1", 0)
    assert raiser.name == "Raiser"
    assert err.parent == raiser.id
    assert err.name == "ValueError" or "ValueError" in (err.name, err.target)
    assert "raise ValueError" in _line(err.site)
    paths = [n.path for n in g.nodes if n.kind == "module"]
    assert paths == ["", "pre", "stage", "stage.0", "stage.1", "stage.1.lin", "stage.1.bn"]
    assert any(n.kind == "op" and n.name == "batch_norm" for n in g.nodes)


def test_error_inside_a_torch_layer():
    """A shape mismatch inside nn.Linear: the error node sits in the Linear call, at linear.py."""
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(5, 2))
    with pytest.raises(RuntimeError) as info:
        torchscope.trace(model, torch.randn(3, 4))
    g = info.value.torchscope_graph
    [err] = [n for n in g.nodes if n.kind == "error"]
    lin = g.module_call("2", 0)
    assert err.parent == lin.id
    assert err.site.file.endswith(os.path.join("torch", "nn", "modules", "linear.py"))
    relu_op = g.children(g.module_call("1", 0).id)[0]
    assert [(e.src, e.shape) for e in g.edges if e.dst == err.id] == [(relu_op.id, [3, 4])]
    _check_structure(g)


def test_error_in_module_without_ops():
    class Boom(nn.Module):
        def forward(self, x):
            raise KeyError("boom")

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.boom = Boom()

        def forward(self, x):
            return self.boom(self.lin(x))

    with pytest.raises(KeyError):
        torchscope.trace(Outer(), torch.randn(1, 2))
    try:
        torchscope.trace(Outer(), torch.randn(1, 2))
    except KeyError as exc:
        g = exc.torchscope_graph
    [err] = [n for n in g.nodes if n.kind == "error"]
    assert err.parent == g.module_call("boom", 0).id
    assert 'raise KeyError("boom")' in _line(err.site)
    _check_structure(g)


def test_a_module_that_raised_before_any_op_reads_its_input():
    """A module that raised with nothing recorded inside (its pre-hook failed: FSDP2's next
    all-gather on a rank torchrun stopped) had no input edge, and the module before it no
    output: `a: Linear [2, 8] → -`, `b: Linear - → -`."""

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(8, 8)
            self.b = nn.Linear(8, 8)

        def forward(self, x):
            return self.b(self.a(x))

    def fails(module, args):
        raise RuntimeError("hook failed")

    net = Net()
    net.b.register_forward_pre_hook(fails)
    g = torchscope.trace_call(net, (torch.randn(2, 8),), raise_errors=False)
    [err] = [n for n in g.nodes if n.kind == "error"]
    assert err.parent == g.module_call("b", 0).id
    [linear] = [n for n in g.nodes if n.name == "linear"]
    assert [(e.src, e.shape) for e in g.edges if e.dst == err.id] == [(linear.id, [2, 8])]
    assert "[2, 8] → -" in [line for line in g.summary().splitlines() if " b: " in line][0]
    _check_structure(g)


def test_raise_errors_false_returns_the_partial_graph():
    model, args, kwargs = zoo.build("error_op")
    g = torchscope.trace_call(model, args, kwargs, raise_errors=False)
    assert g.error is not None and g.error.type == "RuntimeError"
    assert sum(n.kind == "error" for n in g.nodes) == 1


def test_error_graph_round_trips():
    _, g = _partial("error_raise")
    back = torchscope.Graph.from_wire(msgpack.unpackb(g.to_msgpack(), raw=False))
    assert back.error is not None
    assert back.to_wire()["error"] == g.to_wire()["error"]
    assert back.to_wire()["nodes"] == g.to_wire()["nodes"]


def test_keyboard_interrupt_propagates_and_cleans_up():
    class Interrupt(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bn = nn.BatchNorm1d(3)

        def forward(self, x):
            x = self.bn(x)
            raise KeyboardInterrupt

    model = Interrupt().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    hooks = len(torch.nn.modules.module._global_forward_hooks)
    with pytest.raises(KeyboardInterrupt):
        torchscope.trace(model, torch.randn(4, 3))
    assert len(torch.nn.modules.module._global_forward_hooks) == hooks
    assert not torch._C._is_torch_function_mode_enabled()
    assert torch.is_grad_enabled()
    assert model.state_dict()["bn.num_batches_tracked"] == before["bn.num_batches_tracked"]


# -- cancel and time budget ------------------------------------------------------------------


def test_cancel_stops_a_long_trace_with_a_partial_graph():
    model = zoo.ManyOps(300)
    x = torch.randn(2, 4)
    full = torchscope.trace(model, x)
    n_full = sum(n.kind == "op" for n in full.nodes)
    assert n_full > 300
    state = copy.deepcopy(model.state_dict())
    with pytest.raises(torchscope.TraceCancelled) as info:
        torchscope.trace_call(model, (x,), {}, cancel=lambda: True)
    assert not isinstance(info.value, torchscope.TraceTimeout)
    g = info.value.torchscope_graph
    n_ops = sum(n.kind == "op" for n in g.nodes)
    assert 0 < n_ops < 100, "cancel is checked every few dozen ops"
    assert g.error is not None and g.error.type == "TraceCancelled"
    assert sum(n.kind == "error" for n in g.nodes) == 1
    assert g.nodes[1].kind == "module" and g.nodes[1].path == ""
    _check_structure(g)
    assert not torch._C._is_torch_function_mode_enabled()
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k])


def test_cancel_checked_repeatedly():
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) >= 3

    with pytest.raises(torchscope.TraceCancelled) as info:
        torchscope.trace_call(zoo.ManyOps(300), (torch.randn(2, 4),), {}, cancel=cancel)
    assert len(calls) == 3
    n_ops = sum(n.kind == "op" for n in info.value.torchscope_graph.nodes)
    assert 40 <= n_ops < 300


def test_cancel_false_never_stops():
    g = torchscope.trace_call(zoo.ManyOps(300), (torch.randn(2, 4),), {}, cancel=lambda: False)
    assert g.error is None


def test_time_budget_exceeded_raises_trace_timeout():
    with pytest.raises(torchscope.TraceTimeout) as info:
        torchscope.trace_call(zoo.ManyOps(300), (torch.randn(2, 4),), {}, time_budget=1e-9)
    assert isinstance(info.value, torchscope.TraceCancelled)
    g = info.value.torchscope_graph
    assert g.error.type == "TraceTimeout"
    assert sum(n.kind == "op" for n in g.nodes) < 300


def test_generous_time_budget_completes():
    g = torchscope.trace_call(zoo.ManyOps(300), (torch.randn(2, 4),), {}, time_budget=60.0)
    assert g.error is None and sum(n.kind == "op" for n in g.nodes) == 301


# -- malformed wire maps ------------------------------------------------------------------------


def _good_wire():
    model, args, kwargs = zoo.build("mlp")
    return torchscope.trace(model, *args, **kwargs).to_wire()


def _mutations():
    def set_(path, value):
        def f(w):
            obj = w
            for k in path[:-1]:
                obj = obj[k]
            obj[path[-1]] = value
            return w

        return f

    def delete(path):
        def f(w):
            obj = w
            for k in path[:-1]:
                obj = obj[k]
            del obj[path[-1]]
            return w

        return f

    return {
        "not a map": lambda w: [w],
        "wrong format": set_(["format"], "other.graph"),
        "missing format": delete(["format"]),
        "newer version": set_(["version"], 2),
        "version as string": set_(["version"], "1"),
        "missing model": delete(["model"]),
        "missing nodes": delete(["nodes"]),
        "nodes not a list": set_(["nodes"], 7),
        "node not a map": set_(["nodes", 0], 3),
        "node missing kind": delete(["nodes", 1, "kind"]),
        "node id out of order": set_(["nodes", 1, "id"], 5),
        "unknown kind": set_(["nodes", 1, "kind"], "widget"),
        "site missing line": set_(["nodes", 2, "site"], {"file": "x.py"}),
        "missing edges": delete(["edges"]),
        "edge missing dst": delete(["edges", 0, "dst"]),
        "edge to a missing node": set_(["edges", 0, "dst"], 999),
        "parent after child": set_(["nodes", 2, "parent"], 3),
        "parent out of range": set_(["nodes", 2, "parent"], 999),
        "name not text": set_(["nodes", 2, "name"], None),
        "target not text": set_(["nodes", 2, "target"], 3),
        "shape not a list of ints": set_(["edges", 0, "shape"], "x"),
        "dtype not text": set_(["edges", 0, "dtype"], None),
        "error missing node": set_(
            ["error"], {"type": "ValueError", "message": "m", "traceback": []}
        ),
    }


@pytest.mark.parametrize("case", list(_mutations()))
def test_from_wire_rejects_malformed_maps(case):
    wire = _mutations()[case](_good_wire())
    with pytest.raises(torchscope.GraphFormatError):
        torchscope.Graph.from_wire(wire)


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("nodes", None, "'nodes' is a NoneType, not a list"),
        ("edges", {}, "'edges' is a dict, not a list"),
        ("model", [], "'model' is a list, not a dict"),
    ],
)
def test_a_top_level_field_of_the_wrong_kind_is_named(key, value, said):
    """`"nodes": null` said "missing or bad field 'NoneType' object is not iterable"."""
    wire = _good_wire()
    wire[key] = value
    with pytest.raises(torchscope.GraphFormatError, match=said):
        torchscope.Graph.from_wire(wire)


def test_from_wire_ignores_unknown_fields():
    wire = _good_wire()
    wire["future_field"] = {"x": 1}
    wire["nodes"][0]["future"] = 1
    wire["edges"][0]["future"] = 1
    g = torchscope.Graph.from_wire(wire)
    assert len(g.nodes) == len(wire["nodes"])


def test_graph_format_error_is_a_value_error():
    assert issubclass(torchscope.GraphFormatError, ValueError)


def test_trace_needs_a_module():
    with pytest.raises(TypeError):
        torchscope.trace(lambda x: x, torch.randn(2))


def test_cancel_is_polled_during_module_calls_too():
    """A runaway forward made of module calls with no torch ops (here 300 nn.Identity) must
    still stop: the cancel check should not depend on torch calls alone."""
    model = nn.Sequential(*[nn.Identity() for _ in range(300)])
    with pytest.raises(torchscope.TraceCancelled) as info:
        torchscope.trace_call(model, (torch.randn(2),), {}, cancel=lambda: True)
    g = info.value.torchscope_graph
    assert sum(n.kind == "module" for n in g.nodes) < 301


class Custom(BaseException):
    """A program's own BaseException (not an Exception): raised by its forward."""


class RaisesCustom(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.fc(x)  # (a call before the raise: in the graph)
        raise Custom("stopped on purpose")


def test_a_base_exception_of_the_programs_own_is_shown_as_an_error():
    """QA: the editor said torchscope failed (`internal`, a torchscope bug) and drew no graph;
    the API raised it without the partial graph. KeyboardInterrupt and SystemExit still
    pass through untouched."""
    model = RaisesCustom()
    with pytest.raises(Custom) as info:
        torchscope.trace(model, torch.randn(3, 4))
    g = info.value.torchscope_graph  # type: ignore[attr-defined]
    assert g.error is not None and (g.error.type, g.error.message) == (
        "Custom",
        "stopped on purpose",
    )
    assert any(n.kind == "op" and n.name == "linear" for n in g.nodes)
    assert g.nodes[g.error.node].kind == "error"

    class Interrupts(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as stopped:
        torchscope.trace(Interrupts(), torch.randn(3, 4))
    assert not hasattr(stopped.value, "torchscope_graph")
