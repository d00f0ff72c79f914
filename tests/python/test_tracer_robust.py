"""Odd corners: custom ops, exotic tensors, functions the model calls, API guards."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

import torchscope


@torch.library.custom_op("torchscope_test::scale", mutates_args=())
def _scale(x: torch.Tensor, k: float) -> torch.Tensor:
    return x * k


@_scale.register_fake
def _scale_fake(x: torch.Tensor, k: float) -> torch.Tensor:
    return torch.empty_like(x)


class _NoShape(torch.Tensor):
    """A tensor subclass whose shape cannot be read."""

    @property
    def shape(self):  # type: ignore[override]
        raise RuntimeError("no shape")


class CustomOpModel(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.ops.torchscope_test.scale(x, 2.0)
        return y.as_subclass(_NoShape) + 1


def test_custom_op_is_a_named_node_with_its_arguments() -> None:
    g = torchscope.trace(CustomOpModel(), torch.randn(2, 3))
    [op] = [n for n in g.nodes if n.name == "scale"]
    assert op.kind == "op" and op.target == "torch.ops.torchscope_test.scale"
    assert op.attrs == {"k": 2.0}
    x = g.find("input", "x")[0]
    assert [(e.src, e.shape) for e in g.edges if e.dst == op.id] == [(x.id, [2, 3])]


def test_unreadable_shape_degrades_to_an_edge_without_shape() -> None:
    g = torchscope.trace(CustomOpModel(), torch.randn(2, 3))
    [add] = [n for n in g.nodes if n.name == "add"]
    shapes = [e.shape for e in g.edges if e.dst == add.id]
    assert shapes == [None]
    g.to_msgpack()  # still a valid graph


class ScaleOnly(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.torchscope_test.scale(x, 3.0)


def test_meta_device_custom_op_uses_its_fake_kernel() -> None:
    with torch.device("meta"):
        x = torch.randn(4, 5)
    g = torchscope.trace(ScaleOnly(), x)
    [op] = [n for n in g.nodes if n.name == "scale"]
    out = [e for e in g.edges if e.src == op.id]
    assert out and out[0].shape == [4, 5]


def test_trace_needs_a_module() -> None:
    with pytest.raises(TypeError, match="nn.Module"):
        torchscope.trace(lambda x: x, torch.randn(1))  # type: ignore[arg-type]


def test_grad_mode_kept_and_no_grad_during_trace() -> None:
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(torch.is_grad_enabled())
            return x + 1

    torch.set_grad_enabled(True)
    torchscope.trace(Probe(), torch.randn(1))
    assert seen == [False] and torch.is_grad_enabled()
    graph = torchscope.trace_call(Probe(), (torch.randn(1),), no_grad=False)
    assert seen == [False, True] and graph.error is None


def test_save_picks_the_format_by_suffix(tmp_path) -> None:
    g = torchscope.trace(nn.Linear(3, 2), torch.randn(1, 3))
    assert torchscope.Graph.load(g.save(tmp_path / "g.msgpack")).model.name == "Linear"
    assert torchscope.Graph.load(g.save(tmp_path / "g.json")).model.params == 8
    with pytest.raises(ValueError, match="suffix"):
        g.save(tmp_path / "g.txt")


def test_python_and_numpy_random_states_are_restored() -> None:
    import random

    import numpy as np

    class Dice(nn.Module):
        def forward(self, x):
            return x * random.random() + float(np.random.rand())

    random.seed(1)
    np.random.seed(1)
    expected = (random.random(), float(np.random.rand()))
    random.seed(1)
    np.random.seed(1)
    torchscope.trace(Dice(), torch.randn(2))
    assert (random.random(), float(np.random.rand())) == expected


class _ScriptedInner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_a_torchscript_submodule_is_a_box_data_flows_through() -> None:
    # a ScriptModule's tables are torch.jit's own mappings, not dicts: the restore after the
    # forward once raised on them, and the trace failed
    scripted = torch.jit.script(_ScriptedInner())
    model = nn.Sequential(scripted, nn.Linear(4, 2)).eval()
    x = torch.randn(3, 4)
    g = torchscope.trace(model, x)
    assert g.error is None
    box = next(n for n in g.nodes if n.kind == "module" and n.path == "0")
    # named and defined as the class it was compiled from, not torch.jit's RecursiveScriptModule
    assert (box.name, box.target) == ("_ScriptedInner", f"{__name__}._ScriptedInner")
    assert box.defn is not None and box.defn.file == __file__
    into = [(g.nodes[e.src].kind, e.shape) for e in g.edges if e.dst == box.id]
    assert into == [("input", [3, 4])]  # its ops run in TorchScript: none recorded, a leaf box
    [linear] = [n for n in g.nodes if n.name == "linear"]
    assert [(e.src, e.shape) for e in g.edges if e.dst == linear.id] == [(box.id, [3, 4])]
    assert dict(scripted.named_parameters()).keys() == {"fc.weight", "fc.bias"}
    assert torch.equal(model(x), model(x))
    [warning] = g.warnings  # why the box is empty, above the graph
    assert "TorchScript" in warning and "0 (_ScriptedInner)" in warning
    g.to_msgpack()


@pytest.mark.filterwarnings("ignore:`torch.jit.trace.* is deprecated")
def test_a_torch_jit_traced_model_is_named_after_its_class() -> None:
    x = torch.randn(3, 4)
    traced = torch.jit.trace(_ScriptedInner(), x)
    g = torchscope.trace(traced, x)
    assert (g.model.name, g.model.qualname) == ("_ScriptedInner", f"{__name__}._ScriptedInner")
    assert [n.name for n in g.nodes if n.kind == "module"] == ["_ScriptedInner"]
    assert len(g.warnings) == 1 and "TorchScript" in g.warnings[0]


class _Ragged(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).relu()


def test_a_ragged_nested_tensor_gives_edges_without_shape(tmp_path) -> None:
    # a jagged tensor's ragged dimension is a symbolic size, not an int: the graph once held
    # it and could not be written
    x = torch.nested.nested_tensor([torch.randn(2, 4), torch.randn(3, 4)], layout=torch.jagged)
    for values in (False, True):
        g = torchscope.trace(_Ragged().eval(), x, values=values)
        assert g.error is None
        [linear] = [n for n in g.nodes if n.name == "linear"]
        [relu] = [n for n in g.nodes if n.name == "relu"]
        assert [e.shape for e in g.edges if e.dst in (linear.id, relu.id)] == [None, None]
        assert len(torchscope.Graph.load(g.save(tmp_path / "g.msgpack")).edges) == len(g.edges)
        g.to_json()


class _Branches(nn.Module):
    """torch.cond and while_loop: higher-order ops that torch runs through torch.compile even
    in eager mode."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.cond(x.sum() > 0, lambda t: self.a(t), lambda t: self.b(t).neg(), (x,))
        loop = torch._higher_order_ops.while_loop
        return loop(lambda i, t: i < 3, lambda i, t: (i + 1, t * 2), (torch.tensor(0), y))[1]


def _branches() -> tuple[nn.Module, torch.Tensor]:
    return _Branches().eval(), torch.ones(2, 4)


@pytest.mark.parametrize("costs", [True, False])
def test_torch_cond_and_while_loop_trace_as_they_run(costs: bool) -> None:
    # with costs, the FLOP counter once made torch.cond fail ("no implementation found")
    model, x = _branches()
    g = torchscope.trace(model, x, costs=costs)
    assert g.error is None
    ops = [n for n in g.nodes if n.kind == "op"]
    assert {"cond", "while_loop"} <= {n.name for n in ops}
    [out] = [e for e in g.edges if g.nodes[e.dst].kind == "output"]
    assert out.shape == [2, 4] and g.nodes[out.src].name == "while_loop"
    if costs:
        assert all(n.cost is not None for n in ops)


def test_torch_cond_in_a_fresh_process(tmp_path) -> None:
    # torch.cond imports torch.compile's machinery during the forward, after the trace began
    # (a fresh process, as the CLI and the runner are): it once failed there, compiling the
    # recorder's own code ("UncapturedHigherOrderOpError")
    import subprocess
    import sys

    out = tmp_path / "g.json"
    proc = subprocess.run(
        [sys.executable, "-m", "torchscope", "trace", f"{__file__}:_branches", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    g = torchscope.Graph.load(out)
    assert g.error is None and "cond" in {n.name for n in g.nodes}


class _TakesValues(nn.Module):
    def forward(self, x, values=None):
        return x if values is None else x + values


def test_a_forward_argument_named_values_is_told_to_use_trace_call() -> None:
    """`trace(model, x, values=tensor)` took the tensor as torchscope's switch and failed
    inside with "Boolean value of Tensor with more than one value is ambiguous"."""
    with pytest.raises(
        TypeError, match=r"values=.*trace_call\(model, args, \{'values': \.\.\.\}\)"
    ):
        torchscope.trace(_TakesValues(), torch.randn(2), values=torch.ones(2))
    graph = torchscope.trace_call(_TakesValues(), (torch.randn(2),), {"values": torch.ones(2)})
    assert [n.name for n in graph.nodes if n.kind == "op"] == ["add"]


def test_trace_call_with_a_bare_tensor_for_args_says_so() -> None:
    """A tensor as `args` was unpacked row by row: "forward() takes 2 positional arguments
    but 3 were given"."""
    with pytest.raises(TypeError, match=r"args is a tuple of the forward's arguments: \(x,\)"):
        torchscope.trace_call(nn.Linear(8, 2), torch.randn(2, 8))


@pytest.mark.parametrize("budget", [0, -1, float("nan")])
def test_trace_call_refuses_a_time_budget_that_is_none(budget: float) -> None:
    """A budget of 0 or less traced with no budget at all (the CLI refuses it)."""
    with pytest.raises(ValueError, match="time_budget"):
        torchscope.trace_call(nn.Linear(8, 2), (torch.randn(2, 8),), time_budget=budget)


class _FillsItsBatch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, batch: dict) -> dict:
        batch["out"] = self.fc(batch["x"])
        return batch


def test_a_dict_argument_filled_and_returned_keeps_its_new_outputs() -> None:
    """The outputs were named after the trace put its arguments back: the dict the forward
    filled and returned had lost `out` by then, and the graph's one output was `x`."""
    batch = {"x": torch.randn(2, 4)}
    g = torchscope.trace(_FillsItsBatch(), batch)
    assert [n.name for n in g.nodes if n.kind == "output"] == ["x", "out"]
    assert list(batch) == ["x"], "the argument is as it was"


class _Long(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        for _ in range(200_000):
            x = torch.tanh(self.lin(x))
        return x


class _Wraps(_Long):
    def forward(self, x):
        try:
            return super().forward(x)
        except Exception as e:  # a library's re-raise with its own words
            raise RuntimeError(f"layer stack failed ({type(e).__name__})") from e


class _Swallows(_Long):
    def forward(self, x):
        try:
            return super().forward(x)
        except Exception:
            return torch.zeros_like(x)  # a fallback path


@pytest.mark.parametrize("model", [_Wraps, _Swallows])
def test_a_forward_that_catches_the_stop_is_still_stopped(model):
    """A forward catching `Exception` took the time budget's stop for its own error: a
    re-raise was reported as the model raising, a fallback as a whole trace."""
    with pytest.raises(torchscope.TraceTimeout) as caught:
        torchscope.trace_call(model(), (torch.randn(2, 8),), time_budget=0.3)
    graph = caught.value.torchscope_graph  # type: ignore[attr-defined]
    assert graph.error is not None and graph.error.type == "TraceTimeout"
    assert not any(n.name == "zeros_like" for n in graph.nodes)


BUDGET_LOOP = """
import sys, time, torch, torchscope
from torch import nn

class Loop(nn.Module):
    def __init__(s):
        super().__init__()
        s.fc = nn.Linear(4, 4)
        s.register_buffer("steps", torch.zeros(1))

    def forward(s, x):
        while True:  # 4 counts an iteration: every 32nd fell on the layer's op, never checked
            s.steps += 1
            x = s.fc(x).tanh()

started = time.monotonic()
try:
    torchscope.trace_call(Loop(), (torch.randn(2, 4),), time_budget=float(sys.argv[1]))
except torchscope.TraceTimeout:
    print("stopped", round(time.monotonic() - started, 1))
"""


def test_a_loop_of_layer_calls_stops_at_the_budget(tmp_path) -> None:
    """The budget is looked at every CHECK_EVERY counts; a torch.nn layer's call counts two
    (the module, its op) and a loop could put every multiple on the op's, where nothing
    looked (QA: still running at 30 s of a 2 s budget). Through the API: no timer signal."""
    script = tmp_path / "loop.py"
    script.write_text(BUDGET_LOOP)
    done = subprocess.run(
        [sys.executable, str(script), "0.5"], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.startswith("stopped"), (done.stdout, done.stderr[-2000:])
