"""A command-line rank that waits in C++ for good: a collective the other ranks never reach
(one waits in `all_reduce`, the other in a `recv`). Python runs a signal handler only between
bytecodes, and such a wait never returns to it: the time budget's SIGALRM, torchrun's SIGTERM
and Ctrl-C's SIGINT all wait, and torchrun kills the rank 30 s after it asked (or never, for
a budget). A thread sees those signals as they arrive (Python's wakeup fd) and the budget's
end; when the trace has not left the forward STUCK seconds after either, the rank says why
and ends. No graph is written then: the forward's state is the blocked thread's. Standard
library only."""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Optional

STUCK = 5.0  # seconds the main thread has to act on a signal or its budget itself
_POLL = 0.25
_COLLECTIVES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "collectives.py")

# what each way of ending says, and its exit code (as the CLI's other ways of ending)
_ENDS = {
    signal.SIGINT: ("interrupted", 128 + 2),
    signal.SIGTERM: ("stopped by torchrun (SIGTERM)", 128 + 15),
}


class StuckWatch:
    """Ends the process when the trace stays in its forward STUCK seconds past a SIGINT or
    SIGTERM, or past `deadline` (time.monotonic(); the time budget's end with its grace)."""

    def __init__(
        self, rank: int, budget: Optional[float], deadline: Callable[[], Optional[float]]
    ) -> None:
        self.rank = rank
        self.budget = budget
        self.deadline = deadline  # the budget's end as its timer set it (None: none yet)
        self._main = threading.get_ident()
        self._done = threading.Event()
        self._read: Optional[int] = None
        self._write: Optional[int] = None
        self._previous = -1
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        """From the main thread (only it may set the wakeup fd); a no-op elsewhere."""
        try:
            read, write = os.pipe()
            os.set_blocking(read, False)
            os.set_blocking(write, False)
            self._previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except (ValueError, OSError):  # not the main thread, or no pipe: nothing watched
            return
        self._read, self._write = read, write
        self._thread = threading.Thread(
            target=self._watch, args=(read,), name="torchscope-stuck", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._done.set()
        self._thread.join(timeout=2 * _POLL)
        try:
            signal.set_wakeup_fd(self._previous)
        except ValueError:
            pass
        for fd in (self._read, self._write):
            if fd is not None:
                os.close(fd)
        self._thread = None

    def _watch(self, read: int) -> None:
        arrived: Optional[tuple[int, float]] = None  # the first SIGINT or SIGTERM, and when
        last: Optional[tuple[int, int]] = None  # where the main thread was at the last poll
        while not self._done.wait(0):
            try:
                ready, _, _ = select.select([read], [], [], _POLL)
            except (OSError, ValueError):
                return
            if ready:
                try:
                    got = os.read(read, 64)
                except OSError:
                    got = b""
                for signum in got:
                    if arrived is None and signum in _ENDS and _ours(signum):
                        arrived = (signum, time.monotonic())
            now = time.monotonic()
            deadline = self.deadline()
            late = deadline is not None and now > deadline + STUCK
            if not (late or (arrived is not None and now - arrived[1] > STUCK)):
                continue
            # only a wait in a collective, the same at two polls (a long op of its own ends,
            # and the program's own handler, or the budget's, acts then)
            at = _waiting_at(self._main)
            if at is None or at != last or not _in_forward():
                last = at
                continue
            if arrived is not None and now - arrived[1] > STUCK:
                what, code = _ENDS[signal.Signals(arrived[0])]
                self._end(what, code)
            self._end(f"the trace ran past {self.budget:g} s", 3)

    def _end(self, what: str, code: int) -> None:
        if self._done.is_set():
            return
        sys.stderr.write(
            f"torchscope: rank {self.rank}: {what} while waiting in C++ (most likely in a "
            "collective the other ranks did not reach), where it could not stop: no graph "
            "written\n"
        )
        sys.stderr.flush()
        os._exit(code)


def _ours(signum: int) -> bool:
    """The signal goes to torchscope's handler or Python's default one (a handler of the
    program's own may let the forward go on: then it is the program's to act on)."""
    handler = signal.getsignal(signum)
    if handler is signal.default_int_handler or handler in (signal.SIG_DFL, None):
        return True
    return getattr(handler, "__module__", "") == "torchscope.launch"


def _waiting_at(main: int) -> Optional[tuple[int, int]]:
    """Where the main thread waits, when its innermost Python frame is in torch.distributed
    or in the trace's own wait for a collective (collectives.py): (the frame, its
    instruction); None anywhere else."""
    frame = sys._current_frames().get(main)
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if frame is None or not torch_file:
        return None
    file = frame.f_code.co_filename
    distributed = os.path.join(os.path.dirname(torch_file), "distributed") + os.sep
    if file.startswith(distributed) or file == _COLLECTIVES:
        return id(frame), frame.f_lasti
    return None


def _in_forward() -> bool:
    tracer = sys.modules.get("torchscope.tracer")
    return tracer is not None and tracer.in_forward()
