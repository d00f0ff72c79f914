"""Statistics of the weights a forward uses directly, kept between traces.

A weight used directly by a module's forward (GPT-2's Conv1D does `addmm(bias, x, weight)`)
is a constant of the graph, and its edges carry its statistics. Weights outweigh
activations at small batches, and a model is traced again and again, so each weight is read
once and its statistics kept while it holds what it held then: the same version, memory,
dtype and shape, and the same sampled values (`p.data = …`, `model.half()` and writes
through `p.data` leave the version as it was). The weights are not held, not even weakly (a
weak reference makes torch.utils.swap_tensors refuse a tensor, as `model.double()` does with
torch's swap_module_params_on_conversion): an entry is used for whichever tensor holds the same
memory, version, layout and values, whose statistics are those; entries past _MAX_KNOWN go.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

import torch

from .state import value_sample
from .stats import Reader, TensorStats, readable

Tensor = torch.Tensor
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
_Held = tuple[int, int, torch.dtype, torch.Size, tuple[int, ...], Optional[bytes]]

# id(weight) → (what it held when read (see _held), statistics)
_KNOWN: dict[int, tuple[_Held, TensorStats]] = {}
_MAX_KNOWN = 50_000  # entries (about 1 KB each) before all go: weights of models deleted since


def cached_read(t: Tensor, reader: Reader) -> Optional[TensorStats]:
    """t's statistics: those kept from before while t is unchanged, else read with `reader`
    (filled in by its next flush) and kept."""
    try:
        held = _held(t)
    except Exception:  # inference tensors keep no version counter
        return reader.read(t)
    kept = _kept(t, held)
    if kept is not None:
        return kept
    return _read(t, held, reader)


def _read(t: Tensor, held: _Held, reader: Reader) -> Optional[TensorStats]:
    """Read t's statistics with `reader` and keep them, when they can be kept, as read
    while t held `held`."""
    st = reader.read(t)
    if st is not None:
        st.version = held[0]
        if not _keepable(t, held):
            return st
        if len(_KNOWN) >= _MAX_KNOWN:
            _KNOWN.clear()
        _KNOWN[id(t)] = (held, st)
    return st


def _keepable(t: Tensor, held: _Held) -> bool:
    """Whether t's statistics may be kept: a sample of its values (or none to have) tells a
    write through `.data` (a strided tensor has none: it is read every time)."""
    return held[5] is not None or not t.numel()


def read_ahead(tensors: Iterable[Tensor], limit: int) -> int:
    """Read and keep the statistics of `tensors` not kept yet, up to `limit` elements in
    all; returns how many elements were read (those that can't be kept are left for the
    trace to read)."""
    reader = Reader()
    done = 0
    for t in tensors:
        if not readable(t):
            continue
        try:
            held = _held(t)
        except Exception:  # no version counter: never kept
            continue
        if _kept(t, held) is not None or not _keepable(t, held):
            continue
        n = t.numel()
        if done + n > limit:
            continue
        _read(t, held, reader)
        done += n
    reader.flush()
    return done


def is_kept(t: Tensor) -> bool:
    """Whether t's statistics are kept, read while it held what it holds now."""
    try:
        return _kept(t, _held(t)) is not None
    except Exception:  # no version counter: never kept
        return False


def _held(t: Tensor) -> _Held:
    """What t holds now, as far as a cheap look tells: its version, where its memory is, its
    dtype and layout, and a sample of its values (raises for a tensor without a version)."""
    with _NO_TORCH_FUNCTION():  # (no mode of the user's sees our looks)
        return (t._version, t.data_ptr(), t.dtype, t.shape, t.stride(), value_sample(t))


def _kept(t: Tensor, held: _Held) -> Optional[TensorStats]:
    """The statistics kept for `t` while it held `held`, if complete (a trace that died
    before it finished left them unread: read again)."""
    known = _KNOWN.get(id(t))
    if known is not None and known[0] == held and known[1].stats is not None:
        return known[1]
    return None
