"""One torch intra-op thread fewer than cores while a trace runs beside the editor.

The editor opens the graph's panel while the trace runs, and torch's threads spin-waiting for
a core the editor holds make every parallel section wait: GPT-2 on 2 busy cores took 0.17 s
with one thread and 0.3-2 s with two; with tensor statistics on (thousands of small
reductions, each a parallel section) 13 s against 0.6 s. Used by the runner (the editor's
process) and around a paused-frame trace (the user's program, whose setting is restored).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch

__all__ = ["core_spared"]


@contextlib.contextmanager
def core_spared() -> Iterator[None]:
    """torch's intra-op threads at most cores - 1 inside (at least 1); its count restored after."""
    before = torch.get_num_threads()
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity else (os.cpu_count() or 1)
    spared = max(1, min(before, cores - 1))
    if spared != before:
        torch.set_num_threads(spared)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
