"""Statistics of one tensor's values: what `Edge.stats` and `Edge.hist` carry.

Pure: torch's own reductions on the tensor, run with torch functions, dispatch modes and
autograd off, so the tracer does not record them, the FLOP counter does not count them and
nothing is kept of the tensor but a few numbers. Tuned for speed (one of these runs for
every tensor a traced forward makes): min and max from one `aminmax`, mean and spread from
a sum and a norm, the histogram from one bucketing pass and a `bincount`; the slower exact
reductions only when those would lose precision or non-finite values are present.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import torch

Tensor = torch.Tensor
BINS = 16
# mean² above this many times the variance: sum-of-squares would cancel, centre first
_ILL_CONDITIONED = 16.0
_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)
_READABLE_DEVICES = frozenset(("cpu", "cuda", "mps", "xpu"))
_EXACT_FLOATS = (torch.float32, torch.float64)
_is_wrapped = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", None)


@dataclass(slots=True)
class TensorStats:
    """`stats` and `hist` as on the wire, and whether any value is NaN or ±Inf."""

    stats: dict[str, Any]
    hist: Optional[dict[str, Any]]
    nonfinite: bool


def readable(t: Tensor) -> bool:
    """A plain dense tensor whose values live in memory torchscope may read: not meta,
    fake, sparse, quantized, nested, a subclass (DTensor …) or a functorch wrapper."""
    if type(t) not in _PLAIN_TYPES:
        return False
    try:
        if t.device.type not in _READABLE_DEVICES or t.layout is not torch.strided:
            return False
        if t.is_quantized or t.is_nested:
            return False
        return not (_is_wrapped is not None and _is_wrapped(t))
    except Exception:  # an exotic tensor that won't even say where it lives
        return False


def tensor_stats(t: Tensor) -> Optional[TensorStats]:
    """Statistics of `t`, or None when its values can't be read (see `readable`)."""
    if not readable(t):
        return None
    try:
        with (
            torch._C.DisableTorchFunction(),
            torch._C._DisableTorchDispatch(),
            torch.no_grad(),
        ):
            return _compute(t)
    except Exception:  # an unsupported dtype or kernel: no statistics rather than no trace
        return None


def _compute(t: Tensor) -> Optional[TensorStats]:
    dtype = t.dtype
    if dtype.is_complex:
        return _floating(t.abs())  # of the magnitude
    if dtype.is_floating_point:
        return _floating(t if dtype in _EXACT_FLOATS else t.float())
    if dtype is torch.bool:
        return _boolean(t)
    return _integer(t)


def _boolean(t: Tensor) -> TensorStats:
    n = t.numel()
    if n == 0:
        return TensorStats({"min": None, "max": None, "mean": None, "numel": 0}, None, False)
    true = int(torch.count_nonzero(t))
    return TensorStats(
        {"min": int(true == n), "max": int(true > 0), "mean": true / n, "numel": n}, None, False
    )


def _integer(t: Tensor) -> TensorStats:
    n = t.numel()
    if n == 0:
        return TensorStats({"min": None, "max": None, "mean": None, "numel": 0}, None, False)
    lo, hi = torch.aminmax(t)
    mean = torch.sum(t, dtype=torch.float64).item() / n
    return TensorStats({"min": lo.item(), "max": hi.item(), "mean": mean, "numel": n}, None, False)


def _floating(x: Tensor) -> TensorStats:
    """x is float32 or float64 (lower precisions arrive converted)."""
    n = x.numel()
    if n == 0:
        return TensorStats(_float_map(None, 0.0, 0, 0, 0), None, False)
    mn, mx = torch.aminmax(x)
    lo, hi = mn.item(), mx.item()
    zeros = int(torch.eq(x, 0).sum()) / n
    if math.isfinite(lo) and math.isfinite(hi):
        return TensorStats(
            _float_map(_moments(x, n, lo, hi), zeros, 0, 0, n), _hist(x, mn, mx), False
        )
    # NaN (aminmax propagates it) or ±Inf somewhere: count them, describe the finite rest
    nan = int(torch.isnan(x).sum())
    inf = int(torch.isinf(x).sum())
    finite = x[torch.isfinite(x)]
    m = finite.numel()
    if m == 0:
        return TensorStats(_float_map(None, zeros, nan, inf, n), None, True)
    mn, mx = torch.aminmax(finite)
    lo, hi = mn.item(), mx.item()
    return TensorStats(
        _float_map(_moments(finite, m, lo, hi), zeros, nan, inf, n), _hist(finite, mn, mx), True
    )


def _float_map(
    moments: Optional[tuple[float, float, float, float]], zeros: float, nan: int, inf: int, n: int
) -> dict[str, Any]:
    lo, hi, mean, std = moments if moments is not None else (None, None, None, None)
    return {
        "min": lo,
        "max": hi,
        "mean": mean,
        "std": std,
        "absmax": None if lo is None or hi is None else max(abs(lo), abs(hi)),
        "zeros": zeros,
        "nan": nan,
        "inf": inf,
        "numel": n,
    }


def _moments(x: Tensor, n: int, lo: float, hi: float) -> tuple[float, float, float, float]:
    """(min, max, mean, population std) of finite values: from a sum and a 2-norm when that
    is exact enough, else from torch's own mean and a centred norm, else in float64."""
    total = torch.sum(x).item()
    norm = torch.linalg.vector_norm(x).item()
    mean = total / n
    var = norm * norm / n - mean * mean
    if not (math.isfinite(mean) and math.isfinite(var)) or mean * mean > _ILL_CONDITIONED * var:
        mean = torch.mean(x, dtype=torch.float64).item()
        centred = torch.linalg.vector_norm(x - mean).item()
        var = centred * centred / n
        if not math.isfinite(var):  # squares past float32's range
            var = torch.var(x.double(), correction=0).item()
    mean = min(max(mean, lo), hi)  # rounding can't put the mean outside the values
    return lo, hi, mean, math.sqrt(max(var, 0.0))


def _hist(x: Tensor, mn: Tensor, mx: Tensor) -> dict[str, Any]:
    """16 equal bins over [min, max], binned as `torch.histc` bins (the last bin closed)."""
    lo, hi = mn.item(), mx.item()
    n = x.numel()
    if not hi > lo:  # one value (or float rounding made the range empty): one bar
        return {"lo": lo, "hi": hi, "counts": [n] + [0] * (BINS - 1)}
    # histc's own formula, in the tensor's dtype: (x - lo) / (hi - lo) * bins, truncated
    pos = torch.sub(x, mn).div_(mx - mn).mul_(BINS).to(torch.int32)
    counts = torch.bincount(pos.reshape(-1), minlength=BINS + 1).tolist()
    counts[BINS - 1] += sum(counts[BINS:])  # x == max lands in the last bin
    return {"lo": lo, "hi": hi, "counts": counts[:BINS]}


def nonfinite(s: Optional[TensorStats]) -> bool:
    return s is not None and s.nonfinite
