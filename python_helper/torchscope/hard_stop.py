"""Stop a forward that loops in pure Python. The tracer checks its budget and the caller's
cancel only at torch calls (every CHECK_EVERY); code making none runs on. A timer signal
(SIGALRM, POSIX, main thread only) raises into whatever runs then: the command line's trace,
and a trace at a breakpoint, where no thread may be started (paused.py) and nothing else could
stop it. Standard library only until the timer rings (it asks the tracer where the trace is).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Optional

GRACE = 0.5  # the tracer stops a forward of torch ops itself; the timer only past that
POLL = 0.5  # seconds between two looks at the caller's cancel
_AGAIN = 0.02  # the timer rang in torchscope's own code: it rings again that soon

_budget_end: Optional[float] = None  # when the timer first stops a trace (time.monotonic())


class StoppedOutside(BaseException):
    """Raised into whatever runs from outside it (the timer signal), where the tracer's own
    checks can't stop it: a loop of pure Python. A BaseException, so that the user's
    `except Exception` does not swallow it; raised inside a forward being traced, the trace
    ends there as at its own budget or cancel (the graph up to there)."""


class OutOfTime(StoppedOutside):
    """The time budget ran out: a TraceTimeout error when raised inside a forward."""


class CancelledOutside(StoppedOutside):
    """The caller's cancel: a TraceCancelled error when raised inside a forward."""


def budget_end() -> Optional[float]:
    """When the running trace's hard budget ends (None: no budget running): stuck.py's
    watch ends a rank its timer cannot reach."""
    return _budget_end


def usable() -> bool:
    """Whether a timer signal can be used here: POSIX, the main thread, and no timer of the
    program's own running (there is one per process: it would be lost)."""
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )


@contextlib.contextmanager
def hard_stop(
    seconds: Optional[float],
    cancel: Optional[Callable[[], bool]] = None,
    outside_forward: bool = False,
) -> Iterator[Callable[[], None]]:
    """Stop the traced forward `seconds` (plus GRACE) after the block starts, or once
    `cancel()` says so (looked at every POLL seconds), if the tracer has not stopped it by
    itself: OutOfTime or CancelledOutside raised into the user's code, again every GRACE
    while the forward goes on. torchscope's own code is never interrupted: the timer rings
    again a moment later. `outside_forward`: the user's code outside a traced forward (a
    module importing, a model being built) is stopped too — the command line's, whose
    process ends after; a trace at a breakpoint stops only the forward's code.

    Yields `over()`, called once no user code runs any more (the graph is made): the timer is
    off from then on. The program's own SIGALRM handler is put back after the block. Without
    a usable timer (see `usable`) the block runs as it is."""
    budget = seconds if seconds is not None and seconds > 0 else None
    if (budget is None and cancel is None) or not usable():
        yield lambda: None
        return

    from .tracer import finishing, in_forward, stopped_at_budget, stopping_from_outside

    ended = False
    end = time.monotonic() + budget + GRACE if budget is not None else None

    def ring(_signum: int, frame: Optional[FrameType]) -> None:
        if ended:
            return
        signal.setitimer(signal.ITIMER_REAL, POLL if cancel is not None else GRACE)
        if finishing() or stopped_at_budget():  # the graph is being made, or is made: ours
            return
        if cancel is not None and cancel():
            stop: BaseException = CancelledOutside("the trace was cancelled")
        elif end is not None and time.monotonic() >= end:
            stop = OutOfTime(f"the trace ran past {budget:g} s")
        else:
            return
        # (not finishing, as returned above: outside a forward only the user's code runs)
        if (outside_forward or in_forward()) and not _ours(frame):
            raise stopping_from_outside(stop)
        signal.setitimer(signal.ITIMER_REAL, _AGAIN)

    def over() -> None:
        nonlocal ended
        ended = True
        signal.setitimer(signal.ITIMER_REAL, 0)

    global _budget_end
    old = signal.signal(signal.SIGALRM, ring)
    first = budget + GRACE if budget is not None else POLL
    if cancel is not None:
        first = min(first, POLL)
    signal.setitimer(signal.ITIMER_REAL, first)
    _budget_end = end
    try:
        yield over
    finally:
        ended = True
        _budget_end = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PASSED = tuple(
    os.path.join(p, "") for p in {sysconfig.get_paths()["stdlib"], os.path.dirname(os.__file__)}
)


def _ours(frame: Optional[FrameType]) -> bool:
    """Whether the timer rang in torchscope's own code: the first frame out from where it
    rang that is neither torch's nor the standard library's is ours (its bookkeeping would be
    left half done)."""
    torch = sys.modules.get("torch")
    passed = _PASSED
    if torch is not None and torch.__file__:
        passed += (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_HERE):
            return True
        if not name.startswith(passed) and not name.startswith("<frozen"):
            return False
        frame = frame.f_back
    return False
