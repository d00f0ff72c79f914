"""The timer that stops a forward looping in pure Python (hard_stop.py), through the tracer's
API as the paused entry and the command line use it. At a breakpoint through the real debugpy
adapter: test_debug_dap.py."""

from __future__ import annotations

import signal
import time

import pytest
import torch
from torch import nn

from torchscope.hard_stop import _ours, hard_stop
from torchscope.tracer import trace_call

pytestmark = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX timers")


class Spin(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        n = 0
        while n >= 0:  # no torch call: the tracer's own checks never run
            n += 1
        return h


class Swallows(Spin):
    """Catches everything, the stop too, then loops again."""

    def forward(self, x):
        h = self.lin(x)
        for _ in range(3):
            try:
                n = 0
                while n >= 0:
                    n += 1
            except BaseException:  # noqa: BLE001 - what a careless forward does
                pass
        return h


def _error_and_ops(g) -> tuple[str, list[str]]:
    assert g.error is not None
    return g.error.type, [n.name for n in g.nodes if n.kind in ("op", "module")]


def test_a_python_loop_stops_at_the_budget_with_the_graph_up_to_there():
    with hard_stop(0.2) as over:
        g = trace_call(Spin(), (torch.randn(2, 4),), raise_errors=False, time_budget=0.2)
        over()
    kind, names = _error_and_ops(g)
    assert kind == "TraceTimeout" and "Linear" in names, (kind, names)


def test_a_python_loop_stops_on_cancel():
    start = time.monotonic()
    with hard_stop(None, cancel=lambda: time.monotonic() > start + 0.3):
        g = trace_call(Spin(), (torch.randn(2, 4),), raise_errors=False)
    assert _error_and_ops(g)[0] == "TraceCancelled"


def test_a_forward_that_swallows_the_stop_is_stopped_again():
    with hard_stop(0.2):
        g = trace_call(Swallows(), (torch.randn(2, 4),), raise_errors=False, time_budget=0.2)
    assert _error_and_ops(g)[0] == "TraceTimeout"


def test_the_programs_own_timer_and_handler_are_left_as_they_were():
    rang: list[int] = []
    old = signal.signal(signal.SIGALRM, lambda signum, frame: rang.append(signum))
    try:
        with hard_stop(5):  # no program timer: ours runs, then the handler is the program's
            assert signal.getitimer(signal.ITIMER_REAL)[0] > 0
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        signal.setitimer(signal.ITIMER_REAL, 0.3)  # the program's own: one per process
        with hard_stop(0.05):
            assert signal.getitimer(signal.ITIMER_REAL)[0] > 0.2  # not replaced by ours
        deadline = time.monotonic() + 5
        while not rang and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rang == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_the_timer_tells_torchscopes_code_from_the_users():
    import sys

    assert not _ours(sys._getframe())  # a test's frame: the user's code
    held = hard_stop(None)  # a generator of torchscope's, not started: its frame is ours
    assert _ours(held.gen.gi_frame)  # type: ignore[attr-defined]
