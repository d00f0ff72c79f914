"""A command-line trace under a launcher such as torchrun: which rank this process is, where its
graph goes, and the process group left at exit. Standard library only (the CLI reports a
missing torch itself)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn, Optional


def launched_rank(environ: Optional[dict[str, str]] = None) -> Optional[tuple[int, int]]:
    """`(rank, world_size)` a launcher such as torchrun gave this process through the
    environment (`RANK`, `WORLD_SIZE`), before any process group exists; None when the
    process was not launched as one of several ranks."""
    env = os.environ if environ is None else environ
    try:
        rank, size = int(env["RANK"]), int(env["WORLD_SIZE"])
    except (KeyError, ValueError):
        return None
    return (rank, size) if size > 1 and 0 <= rank < size else None


def rank_file(path: Path, rank: int) -> Path:
    """`graph.msgpack` → `graph.rank1.msgpack` (a `pathlib.Path`)."""
    return path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


class RankStopped(Exception):
    """torchrun ended this rank (SIGTERM) while it traced, most likely because another rank
    failed (an Exception, so the tracer keeps it as the forward's error)."""


def stop_on_sigterm() -> None:
    """While a rank traces: torchrun's SIGTERM (it ends every rank once one failed) raised as
    RankStopped into the traced forward, so the graph up to where the rank was is written
    instead of nothing. Before the forward (importing, building, joining the group) it ends
    the process at once, as ever; after it, it is dropped: the graph is being written and
    the process ends right after. Once: a second SIGTERM, or one after
    `sigterm_as_before`, ends the process at once."""
    import signal

    global _interrupted
    _interrupted = False

    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if _interrupted:  # Ctrl-C first: torchrun's SIGTERM follows it, the interrupt says it
            return
        tracer = sys.modules.get("torchscope.tracer")
        if tracer is not None and tracer.in_forward():
            raise RankStopped(
                "torchrun stopped this rank (SIGTERM), most likely because another rank failed"
            )
        if tracer is None or not tracer.forward_begun():
            os.kill(os.getpid(), signal.SIGTERM)  # the default now: ended as if never caught

    def interrupt(signum: int, frame: Any) -> None:
        global _interrupted
        _interrupted = True
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, stop)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, interrupt)
    except ValueError:  # not the main thread: the launcher's default stays
        pass


_interrupted = False  # Ctrl-C came while the rank traced (see stop_on_sigterm)


def sigterm_as_before() -> None:
    """The trace is over: SIGTERM ends the process again (one pending is dropped: the graph
    is about to be written and the process to end)."""
    import signal

    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if getattr(signal.getsignal(signal.SIGINT), "__name__", "") == "interrupt":
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:
        pass


_left_group = False  # this process destroyed a process group (end_process_group)


def end_process_group() -> None:
    """Destroy the default process group the traced program made, if any: a command-line
    trace is the whole program, and torch warns about a group left at exit."""
    global _left_group
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
            _left_group = True
    except Exception:
        pass


def exit_cli(code: int) -> NoReturn:
    """End the command-line process with `code`. One that was in a process group exits at
    once, its output flushed, before the interpreter's teardown: gloo's threads destroyed at
    exit abort a rank now and then ("terminate called without an active exception", SIGABRT)
    after its graph was written, and torchrun then fails the whole run."""
    if _left_group:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
