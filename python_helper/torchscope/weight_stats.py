"""Statistics of the weights a forward uses directly, kept between traces.

A weight used directly by a module's forward (GPT-2's Conv1D does `addmm(bias, x, weight)`)
is a constant of the graph, and its edges carry its statistics. Weights outweigh
activations at small batches, and a model is traced again and again, so each weight is read
once and its statistics kept while its version counter stays the same. Held weakly: a
deleted model leaves no entry.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Optional

import torch

from .stats import Reader, TensorStats, readable

Tensor = torch.Tensor

# id(weight) → (weak ref, version, statistics)
_KNOWN: dict[int, tuple[weakref.ref[Tensor], int, TensorStats]] = {}


def cached_read(t: Tensor, reader: Reader) -> Optional[TensorStats]:
    """t's statistics: those kept from before while t is unchanged, else read with `reader`
    (filled in by its next flush) and kept."""
    try:
        version = t._version
    except Exception:  # inference tensors keep no version counter
        return reader.read(t)
    kept = _kept(t, version)
    if kept is not None:
        return kept
    st = reader.read(t)
    if st is not None:
        st.version = version
        try:
            _KNOWN[id(t)] = (weakref.ref(t, _forget(id(t))), version, st)
        except TypeError:
            pass
    return st


def read_ahead(tensors: Iterable[Tensor], limit: int) -> int:
    """Read and keep the statistics of `tensors` not kept yet, up to `limit` elements in
    all; returns how many elements were read."""
    reader = Reader()
    done = 0
    for t in tensors:
        if not readable(t) or is_kept(t):
            continue
        n = t.numel()
        if done + n > limit:
            continue
        cached_read(t, reader)
        done += n
    reader.flush()
    return done


def is_kept(t: Tensor) -> bool:
    """Whether t's statistics are kept, read while it held what it holds now."""
    try:
        return _kept(t, t._version) is not None
    except Exception:  # no version counter: never kept
        return False


def _kept(t: Tensor, version: int) -> Optional[TensorStats]:
    """The statistics kept for `t` at `version`, if complete (a trace that died before it
    finished left them unread: read again)."""
    known = _KNOWN.get(id(t))
    if known is not None and known[0]() is t and known[1] == version and known[2].stats is not None:
        return known[2]
    return None


def _forget(key: int) -> Callable[[weakref.ref[Tensor]], None]:
    def forget(ref: weakref.ref[Tensor]) -> None:
        known = _KNOWN.get(key)
        if known is not None and known[0] is ref:  # not a newer tensor with the same id
            del _KNOWN[key]

    return forget
