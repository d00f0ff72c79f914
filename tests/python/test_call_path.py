"""While a trace runs, module calls take a lean path (call_path.py) where the recorder's two
global hooks are the only hooks that apply: the graph must be exactly the graph torch's own
call path gives, and every call the lean path can't make exactly as torch would goes to
torch's path; torch's `_call_impl` is back after every trace, however the forward ended."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import pytest
import torch
import zoo  # noqa: E402 - tests/python is on sys.path (rootdir)
from torch import nn

from torchscope import call_path, tracer
from torchscope.tracer import trace_call

TORCH_CALL = nn.Module._call_impl


def _both(monkeypatch: pytest.MonkeyPatch, run: Any) -> tuple[dict, dict]:
    """The graph through torch's call path, then through the lean one."""
    with monkeypatch.context() as m:
        m.setattr(tracer, "lean_calls", lambda *a: contextlib.nullcontext())
        torch.manual_seed(0)
        plain = zoo.clockless_wire(run())
    torch.manual_seed(0)
    return plain, zoo.clockless_wire(run())


CALLERS: dict[str, list[str]] = {}  # (not the model's: a trace puts back what it holds)


class Probe(nn.Module):
    """Notes which function called its forward: `lean_call`, or torch's `_call_impl`."""

    def __init__(self, name: str = "probe") -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.name = name
        CALLERS[name] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        CALLERS[self.name].append(sys._getframe(1).f_code.co_name)
        return self.lin(x).relu()


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.probe = Probe()
        self.norm = nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.probe(x) + 1)


def test_calls_take_the_lean_path_and_torch_s_is_back_after() -> None:
    model = Outer()
    g = trace_call(model, (torch.randn(2, 4),), {}, values=False, costs=False)
    assert CALLERS["probe"] == ["lean_call"]
    assert [n.path for n in g.nodes if n.kind == "module"] == ["", "probe", "probe.lin", "norm"]
    assert nn.Module._call_impl is TORCH_CALL
    model(torch.randn(2, 4))  # and outside a trace, torch's path
    assert CALLERS["probe"][-1] != "lean_call"


@pytest.mark.parametrize("costs", [False, True])
@pytest.mark.parametrize("name", sorted(zoo.ZOO))
def test_every_zoo_model_gets_the_same_graph_on_the_lean_path(
    monkeypatch: pytest.MonkeyPatch, name: str, costs: bool
) -> None:
    plain, lean = _both(monkeypatch, zoo.structure_trace(name, costs))
    if plain.get("error"):  # the traceback: the test below
        plain["error"].pop("traceback"), lean["error"].pop("traceback")
    assert lean == plain
    assert nn.Module._call_impl is TORCH_CALL


class Raises(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ok = nn.Linear(4, 4)
        self.inner = Probe()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(self.ok(x).reshape(2, 2, 2))  # Probe's Linear(4, 4) gets 2 features


def test_a_forward_that_raises_is_marked_as_on_torch_s_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = Raises()

    def run() -> Any:
        return trace_call(
            model, (torch.randn(2, 4),), {}, values=False, costs=False, raise_errors=False
        )

    plain, lean = _both(monkeypatch, run)
    assert plain["error"] is not None
    frames, lean_frames = plain["error"].pop("traceback"), lean["error"].pop("traceback")
    assert lean == plain
    nodes = {n["id"]: n for n in lean["nodes"]}
    assert nodes[nodes[lean["error"]["node"]]["parent"]]["path"] == "inner.lin"
    # the same frames less torch's two inside a call (the lean path's own is not shown)
    assert lean_frames == [f for f in frames if f["func"] not in ("_call_impl", "inner")]
    assert [f["func"] for f in lean_frames if f["file"] == __file__] == ["forward", "forward"]
    assert nn.Module._call_impl is TORCH_CALL


class OwnHook(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.probe = Probe()
        self.probe.register_forward_hook(lambda m, a, out: out * 2)
        self.other = Probe("other")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.other(self.probe(x))


def test_a_module_with_hooks_of_its_own_takes_torch_s_path_and_is_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = OwnHook()

    def run() -> Any:
        return trace_call(model, (torch.randn(2, 4),), {}, values=False, costs=False)

    plain, lean = _both(monkeypatch, run)
    assert lean == plain
    assert CALLERS["probe"][-1] != "lean_call" and CALLERS["other"][-1] == "lean_call"
    nodes = {n["id"]: n for n in lean["nodes"]}
    hooked = [n for n in lean["nodes"] if n.get("path") == "probe"][0]
    # the hook's op (mul) lands inside the hooked module's box
    assert any(n["name"] == "mul" and n["parent"] == hooked["id"] for n in nodes.values())


def test_another_global_hook_sends_every_call_to_torch_s_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[str] = []
    handle = nn.modules.module.register_module_forward_hook(
        lambda m, a, out: seen.append(type(m).__name__)
    )
    try:
        model = Outer()
        plain, lean = _both(
            monkeypatch,
            lambda: trace_call(model, (torch.randn(2, 4),), {}, values=False, costs=False),
        )
    finally:
        handle.remove()
    assert lean == plain
    assert CALLERS["probe"] == ["inner", "inner"]  # (torch's path calls forward from it)
    assert seen.count("Probe") == 2


def test_an_interrupt_leaves_torch_s_call_path_and_no_hooks() -> None:
    class Interrupts(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise KeyboardInterrupt

    g = nn.modules.module
    hooks = len(g._global_forward_pre_hooks), len(g._global_forward_hooks)
    with pytest.raises(KeyboardInterrupt):
        trace_call(nn.Sequential(nn.Linear(4, 4), Interrupts()), (torch.randn(2, 4),), {})
    assert nn.Module._call_impl is TORCH_CALL
    assert (len(g._global_forward_pre_hooks), len(g._global_forward_hooks)) == hooks


def test_a_call_path_of_another_tool_is_left_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def theirs(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        calls.append(type(self).__name__)
        return TORCH_CALL(self, *args, **kwargs)

    monkeypatch.setattr(nn.Module, "_call_impl", theirs)
    model = Outer()
    g = trace_call(model, (torch.randn(2, 4),), {}, values=False, costs=False)
    assert nn.Module._call_impl is theirs
    assert calls[:2] == ["Outer", "Probe"]
    assert [n.path for n in g.nodes if n.kind == "module"] == ["", "probe", "probe.lin", "norm"]


def test_jit_tracing_inside_a_trace_takes_torch_s_path() -> None:
    class TracesInside(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.probe = Probe()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            traced = torch.jit.trace(self.probe, x)  # torch's path gives it scope names
            return traced(x)

    model = TracesInside()
    trace_call(model, (torch.randn(2, 4),), {}, values=False, costs=False, raise_errors=False)
    # the JIT tracer calls forward through _slow_forward, only torch's path does that
    assert "_slow_forward" in CALLERS["probe"]
    assert nn.Module._call_impl is TORCH_CALL


def _hooks(pre: Any, post: Any) -> list[Any]:
    g = nn.modules.module
    return [
        g.register_module_forward_pre_hook(pre),
        g.register_module_forward_hook(post, with_kwargs=True, always_call=True),
    ]


def test_a_post_hook_that_raises_after_a_failed_forward_is_a_warning_and_the_error_stands() -> None:
    calls: list[tuple] = []

    def pre(m: nn.Module, args: Any) -> None:
        calls.append(("pre", type(m).__name__))

    def post(m: nn.Module, args: Any, *rest: Any) -> None:
        calls.append(("post", type(m).__name__, len(rest)))
        if len(rest) == 1:
            raise RuntimeError("hook broke")

    handles = _hooks(pre, post)
    model = nn.Linear(4, 4)
    try:
        with call_path.lean_calls(pre, post, 2):
            assert model(torch.randn(2, 4)).shape == (2, 4)
            with pytest.warns(UserWarning, match="hook broke"):
                with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
                    model(torch.randn(2, 5))
    finally:
        for h in handles:
            h.remove()
            nn.modules.module._global_forward_hooks_with_kwargs.pop(h.id, None)
    # (kwargs, result) after a call that returned; (result,) after one that raised, as torch
    assert calls == [
        ("pre", "Linear"),
        ("post", "Linear", 2),
        ("pre", "Linear"),
        ("post", "Linear", 1),
    ]
    assert nn.Module._call_impl is TORCH_CALL
