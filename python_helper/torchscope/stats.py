"""Statistics of tensors' values: what `Edge.stats` and `Edge.hist` carry.

Torch's own reductions, run with torch functions, dispatch modes and autograd off, so the
tracer does not record them, the FLOP counter does not count them and nothing is kept of a
tensor but a few numbers.

One of these runs for every tensor a traced forward makes, and a torch call costs a few
µs whatever its size, so `Reader` batches: a small floating tensor is copied into a
staging buffer of its size (one copy), and a whole buffer of same-sized tensors is reduced
row-wise at once (`flush`). Larger tensors, float64 and complex ones are read directly
(dtypes with few kernels widened first: uint16 and uint32 to int64, complex32 to complex64;
uint64's min and max on its bits, exactly).
Either way: min and max exactly; the mean from a sum, the spread around it; NaN and ±Inf
counted, the other statistics over the finite values. The histogram bins as `torch.histc` does (16 bins over [min, max] of
the finite values, the last bin closed), over all values up to `HIST_SAMPLE` of them and
over an evenly spaced sample of that many past it (a picture, not a statistic).

A broadcast view of more than `STAGED_MAX` values (stride 0 along some dimension, as
`expand` makes: a mask over batch and heads) is read from the values it repeats, each
once, not copied out whole; its counts are theirs times the repeats. Its histogram samples
the whole view as any tensor's, except with NaN or ±Inf and more than `HIST_SAMPLE` finite
values: then it bins the repeated values, each once (the whole view's proportions; the
documented rule, every k-th finite value, would take the whole view to find). Values whose
squares lose digits to underflow (all below `_TINY`) or overflow have their spread
measured in float64, scaled by a power of two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

Tensor = torch.Tensor
BINS = 16
HIST_SAMPLE = 1 << 9  # values binned at most; larger tensors bin an evenly spaced sample
STAGED_MAX = 1 << 16  # float tensors up to this many elements are read in batches
STAGE = 1 << 19  # elements of one staging buffer (2 MB of float32; 1 MB flushed a third more often)
MAX_ROWS = 256  # tensors per staging buffer: scalars don't get 262,144 rows (and views)
MAX_BUFFERS = 16  # distinct staged sizes at once; more flush and drop them all
# mean² above this many times the variance: sum-of-squares would cancel, centre first
_ILL_CONDITIONED = 16.0
# values all below this in magnitude have their spread measured rescaled: squares go
# subnormal, losing digits, below 2**-63 in float32 (1e-19); the margin keeps a spread of
# one ulp of such values squaring to a normal number (2**-110 in float32)
_TINY = {torch.float32: 2.0**-32, torch.float64: 2.0**-400}
_TINY32 = _TINY[torch.float32]
_TINY_VARIANCE = _TINY32 * _TINY32  # (no row of smaller values has a larger one)
_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)
_STAGED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_EXACT_FLOATS = (torch.float32, torch.float64)
# dtypes torch has no min/max/abs kernels for, read as one that holds each value exactly
_WIDER = {torch.uint16: torch.int64, torch.uint32: torch.int64, torch.complex32: torch.complex64}
_UINT64_SIGN = -(1 << 63)  # uint64's top bit, as an int64
_STRIDED = torch.strided
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
_NO_DISPATCH = torch._C._DisableTorchDispatch
_is_wrapped = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", None)


@dataclass(slots=True)
class TensorStats:
    """One tensor's `stats` and `hist` as on the wire (None until read, or if unreadable),
    whether any value is NaN or ±Inf, and the tensor's version counter when it was read."""

    stats: Optional[dict[str, Any]] = None
    hist: Optional[dict[str, Any]] = None
    nonfinite: bool = False
    version: int = -1


def readable(t: Tensor) -> bool:
    """A plain dense tensor whose values live in memory torchscope may read: not meta,
    fake, sparse, quantized, nested, a subclass (DTensor …) or a functorch wrapper."""
    if type(t) not in _PLAIN_TYPES:
        return False
    try:
        if not (t.is_cpu or t.is_cuda or t.is_mps or t.is_xpu):
            return False
        if t.layout is not _STRIDED or t.is_quantized or t.is_nested:
            return False
        return not (_is_wrapped is not None and _is_wrapped(t))
    except Exception:  # an exotic tensor that won't even say where it lives
        return False


def tensor_stats(t: Tensor) -> Optional[TensorStats]:
    """Statistics of one tensor, read at once (the tracer batches with a `Reader`)."""
    reader = Reader()
    st = reader.read(t)
    reader.flush()
    return st if st is not None and st.stats is not None else None


@dataclass(slots=True)
class _Buffer:
    """Staged copies of same-sized tensors, one per row."""

    numel: int
    data: Tensor
    pending: list[tuple[TensorStats, int]] = field(default_factory=list)  # (stats, inner size)
    views: dict[Any, list[Tensor]] = field(default_factory=dict)  # shape → each row as it


class Reader:
    """Reads tensors' statistics; small float tensors in batches. `read` returns a
    TensorStats at once, filled in now or by the next `flush` (the owner flushes before
    it looks at them)."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[int, Any], _Buffer] = {}

    def read(self, t: Tensor) -> Optional[TensorStats]:
        """None when t's values can't be read (see `readable`)."""
        if not readable(t):
            return None
        st = TensorStats()
        try:
            if _quiet_already():
                self._read(t, st)
            else:
                with _NO_TORCH_FUNCTION(), _NO_DISPATCH(), torch.no_grad():
                    self._read(t, st)
        except Exception:  # an unsupported dtype or kernel: no statistics, not no trace
            return None
        return st

    def flush(self) -> None:
        """Reduce everything staged and fill in its TensorStats."""
        with _NO_TORCH_FUNCTION(), _NO_DISPATCH(), torch.no_grad():
            for buf in self.buffers.values():
                _flush(buf)

    def _read(self, t: Tensor, st: TensorStats) -> None:
        dtype = t.dtype
        n = t.numel()
        if dtype in _STAGED_DTYPES and 0 < n <= STAGED_MAX:
            self._stage(t, n, st)
        elif n > STAGED_MAX and 0 in t.stride():  # (a smaller broadcast view's copy is small)
            _broadcast(t, st)
        else:
            _read_directly(t, st, dtype)

    def _stage(self, t: Tensor, n: int, st: TensorStats) -> None:
        key = (n, t.get_device())  # an int: cheaper than a torch.device per tensor
        buf = self.buffers.get(key)
        if buf is None:
            if len(self.buffers) >= MAX_BUFFERS:
                self.flush()
                self.buffers.clear()
            rows = max(1, min(STAGE // n, MAX_ROWS))
            data = torch.empty((rows, n), dtype=torch.float32, device=t.device)
            buf = self.buffers[key] = _Buffer(n, data)
        shape = t.shape
        views = buf.views.get(shape)
        if views is None:  # making a view costs more than the copy: once per shape
            views = buf.views[shape] = [r.view(shape) for r in buf.data.unbind(0)]
        row = len(buf.pending)
        views[row].copy_(t)  # logical order; half precision converts exactly
        buf.pending.append((st, shape[-1] if shape else 1))
        if row + 1 == len(views):
            _flush(buf)


def _flush(buf: _Buffer) -> None:
    """Row-wise reductions over the staged rows, then each row's TensorStats."""
    pending = buf.pending
    if not pending:
        return
    buf.pending = []
    rows, n = len(pending), buf.numel
    data = buf.data[:rows]
    lo, hi = data.amin(1), data.amax(1)
    mean = data.sum(1).div_(n)
    # the spread from the sum of squares (one pass, no centred copy); rows where that would
    # cancel (mean² above _ILL_CONDITIONED × variance, as in _moments) centred, together
    squares = torch.linalg.vector_norm(data, dim=1)
    mean2 = mean.square()
    cancels = mean2 > squares.square().div_(n).sub_(mean2).mul_(_ILL_CONDITIONED)
    centred = torch.full_like(mean, math.nan)  # NaN: not centred
    if bool(cancels.any()):
        which = cancels.nonzero().squeeze(1)
        picked = data.index_select(0, which)
        mean64 = picked.sum(1, dtype=torch.float64).div_(n)  # (float32's sum: off by ulps)
        mean.index_copy_(0, which, mean64.float())
        spread = _spread(picked.sub_(mean64.float().unsqueeze(1)), n)
        centred.index_copy_(0, which, spread.float())
    if _zero_bits(data) == 0:  # (the buffer's rows at once: most hold no zero)
        nonzero = torch.full_like(mean, n)
    else:
        # x / x is 1 except where x is 0 (NaN there): a branch-free count of the non-zeros
        nonzero = torch.nan_to_num_(torch.div(data, data), nan=0.0).sum(1)  # exact: n <= 2**24
    per_row = torch.stack((lo, hi, mean, squares, centred, nonzero)).t().tolist()
    counts = _row_histograms(data, lo, hi, [inner for _, inner in pending])
    isnan, isfinite, sqrt = math.isnan, math.isfinite, math.sqrt  # (looked up once, not per row)
    rows_of = zip(pending, per_row, counts)
    for r, ((st, inner), (mn, mx, mu, norm, spread, nz), row_counts) in enumerate(rows_of):
        try:
            var = norm * norm / n - mu * mu if isnan(spread) else spread * spread / n
            if not (isfinite(mn) and isfinite(mx) and isfinite(var)) or (
                var < _TINY_VARIANCE and 0.0 < max(-mn, mx) < _TINY32
            ):
                # NaN or ±Inf in this row (or overflow), or squares that underflow: alone
                _floating(data[r], st, inner)
                continue
            if isnan(spread) and mu * mu > _ILL_CONDITIONED * var:
                # not centred above, yet the sums cancel (squares past float32 hid it)
                mu, var = _about_mean64(data[r], n)
            moments = (mn, mx, min(max(mu, mn), mx), sqrt(max(var, 0.0)))
            st.stats = _float_map(moments, (n - int(nz)) / n, 0, 0, n)
            st.hist = {"lo": mn, "hi": mx, "counts": row_counts}
        except Exception:
            st.stats = None


def _spread(centred: Tensor, n: int) -> Tensor:
    """sqrt(n × variance) of each row of `centred` (float32 rows less their mean, the mean
    rounded to float32 first): the sum of squares less what that rounding left in the sum."""
    shift = centred.sum(1, dtype=torch.float64).div_(n)
    squares = torch.linalg.vector_norm(centred, dim=1).double().square_()
    return squares.sub_(shift.square_().mul_(n)).clamp_(min=0).sqrt_()


def _about_mean64(x: Tensor, n: int) -> tuple[float, float]:
    """(mean, variance) of the n values of `x` (1-D), around their mean summed in float64:
    float32's sum is off by a few ulps of the mean, which is all the spread there is when the
    sums cancel (1000001.0 repeated: std 0.125, not 0)."""
    mean = torch.sum(x, dtype=torch.float64).item() / n
    return mean, float(_spread(torch.sub(x, mean).unsqueeze(0), n)[0]) ** 2 / n


def _row_histograms(data: Tensor, lo: Tensor, hi: Tensor, inners: list[int]) -> list[list[int]]:
    """16-bin counts of each row over [its min, its max] (rows with NaN/Inf: garbage,
    their callers bin again), binned by histc's formula in float32: (x - lo) / (hi - lo)
    * 16, truncated (in float64 where hi - lo overflows float32; histc gives up there)."""
    rows, n = data.shape
    values = data
    if n > HIST_SAMPLE:
        step = _sample_step(n, inners)
        values = data[:, ::step]
    span = torch.sub(hi, lo)
    finite = bool(torch.isfinite(span).all())
    if not finite:  # a range past float32's (or NaN rows): float64
        values, lo, span = values.double(), lo.double(), torch.sub(hi.double(), lo.double())
    # one value repeated: x - lo is 0, every value in the first bin
    span.masked_fill_(span <= 0, 1.0)
    pos = torch.sub(values, lo.unsqueeze(1)).div_(span.unsqueeze(1)).mul_(BINS)
    if not finite:
        pos.nan_to_num_(nan=0.0).clamp_(0, BINS)
    # (else every row is finite, lo <= x <= hi: rounding keeps x - lo within [0, hi - lo]
    # and the quotient within [0, 1], so pos lies in [0, 16] already)
    bins = pos.to(torch.int32).add_(_row_offsets(rows, data.device).unsqueeze(1))
    counts = torch.bincount(bins.view(-1), minlength=rows * (BINS + 1)).view(rows, BINS + 1)
    counts[:, BINS - 1] += counts[:, BINS]  # x == max lands in the last bin
    return counts[:, :BINS].tolist()


_offsets: dict[Any, Tensor] = {}  # device → each row's first bin in one bincount


def _row_offsets(rows: int, device: torch.device) -> Tensor:
    offsets = _offsets.get(device)
    if offsets is None or len(offsets) < rows:
        offsets = torch.arange(max(rows, MAX_ROWS), device=device, dtype=torch.int32)
        offsets = _offsets[device] = offsets.mul_(BINS + 1)
    return offsets[:rows]


def _sample_step(n: int, inners: list[int]) -> int:
    """Every k-th value, k prime to the innermost sizes so that every column shows."""
    step = -(-n // HIST_SAMPLE)
    sizes = set(inners)  # (a buffer's rows: mostly one size, checked once)
    while any(math.gcd(step, inner) != 1 for inner in sizes):
        step += 1
    return step


def _boolean(t: Tensor, st: TensorStats) -> None:
    n = t.numel()
    if n == 0:
        st.stats = {"min": None, "max": None, "mean": None, "numel": 0}
        return
    true = int(torch.count_nonzero(t))
    st.stats = {"min": int(true == n), "max": int(true > 0), "mean": true / n, "numel": n}


def _integer(t: Tensor, st: TensorStats) -> None:
    n = t.numel()
    if n == 0:
        st.stats = {"min": None, "max": None, "mean": None, "numel": 0}
        return
    lo, hi = _uint64_range(t) if t.dtype is torch.uint64 else _range(t)
    mean = torch.sum(t, dtype=torch.float64).item() / n
    st.stats = {"min": lo, "max": hi, "mean": mean, "numel": n}


def _range(t: Tensor) -> tuple[int, int]:
    lo, hi = torch.aminmax(t)
    return int(lo), int(hi)


def _uint64_range(t: Tensor) -> tuple[int, int]:
    """uint64's min and max, exact (torch has no min/max for it, and float64 would round
    them past 2**53): its bits read as int64 with the top bit flipped are ordered as the
    unsigned values are (0 → -2**63, 2**64 - 1 → 2**63 - 1), so int64's aminmax finds
    them, and 2**63 added back gives each as a Python int. (The mean is summed in float64,
    as every integer tensor's.)"""
    lo, hi = _range(torch.bitwise_xor(t.view(torch.int64), _UINT64_SIGN))
    return lo - _UINT64_SIGN, hi - _UINT64_SIGN


def _inner(t: Tensor) -> int:
    return t.shape[-1] if t.dim() else 1


def _read_directly(t: Tensor, st: TensorStats, dtype: torch.dtype) -> None:
    if dtype.is_complex or dtype.is_floating_point:
        _floating(_as_floats(t), st, _inner(t))
    elif dtype is torch.bool:
        _boolean(t, st)
    else:
        wider = _WIDER.get(dtype)
        _integer(t if wider is None else t.to(wider), st)


def _as_floats(t: Tensor) -> Tensor:
    """A floating or complex tensor's values as `_floating` reads them: float32 or float64,
    complex ones' magnitudes (complex32's through complex64: it has no abs)."""
    dtype = t.dtype
    if dtype.is_complex:
        wider = _WIDER.get(dtype)
        return (t if wider is None else t.to(wider)).abs()
    return t if dtype in _EXACT_FLOATS else t.float()


def _broadcast(t: Tensor, st: TensorStats) -> None:
    """A view with stride 0 along some dimensions, read from the values it repeats (those
    dimensions narrowed to 1): copied whole, an `expand` of one row to 16000 × 16000 took
    1 GB. Each value repeats equally often, so min, max, mean, the population std and the
    fraction of zeros are the repeated values'; the counts are theirs times the repeats."""
    repeated = t
    for dim, (size, stride) in enumerate(zip(t.shape, t.stride())):
        if stride == 0 and size > 1:
            repeated = repeated.narrow(dim, 0, 1)
    _read_directly(repeated, st, t.dtype)
    n = t.numel()
    repeats = n // repeated.numel()
    stats, hist = st.stats, st.hist
    if repeats == 1 or stats is None:  # (stride 0 only along dimensions of size 1)
        return
    stats["numel"] = n
    if "nan" not in stats:  # integers and bools: no other count
        return
    finite = repeated.numel() - stats["nan"] - stats["inf"]  # of the repeated values
    stats["nan"] *= repeats
    stats["inf"] *= repeats
    if hist is None:
        return
    if not st.nonfinite:  # the documented sample: every k-th value of the whole view
        values = _every(t, _sample_step(n, [_inner(t)]))  # (n > STAGED_MAX > HIST_SAMPLE)
        values = _as_floats(values)  # as _read_directly reads them
        lo, hi = hist["lo"], hist["hi"]
        mn, mx = (torch.tensor(v, dtype=values.dtype, device=values.device) for v in (lo, hi))
        st.hist = _histogram(values, mn, mx, lo, hi, 1)
    elif finite * repeats <= HIST_SAMPLE:  # all binned: each as often as the view holds it
        hist["counts"] = [c * repeats for c in hist["counts"]]
    # (else the repeated finite values stand in, each once: see the module's docstring)


def _every(t: Tensor, step: int) -> Tensor:
    """t's every step-th value in logical order, as `t.reshape(-1)[::step]` but read through
    t's strides (indexing works on every device; torch.take not on MPS)."""
    flat = torch.arange(0, t.numel(), step, device=t.device)
    index: list[Tensor] = []
    for size in reversed(t.shape):
        index.append(flat % size)
        flat = flat.div(size, rounding_mode="floor")
    return t[tuple(reversed(index))]


def _floating(x: Tensor, st: TensorStats, inner: int = 1) -> None:
    """One float32/float64 tensor read on its own (lower precisions arrive converted);
    `inner`: its last dimension's size (the histogram's sample steps across it)."""
    n = x.numel()
    if n == 0:
        st.stats = _float_map(None, 0.0, 0, 0, 0)
        return
    x = x.reshape(-1)  # a view when dense in logical order, else one copy
    # the sums first (the pass that brings x into the cache costs least as a sum), then min
    # and max (apart: two passes over cached values beat one aminmax), read out in one call
    total, squares = torch.sum(x), _squares(x)
    mn, mx = x.amin(), x.amax()
    # (to the CPU as they are: MPS has no float64; Python adds the chunks' sums exactly)
    lo, hi, total, *chunks = torch.stack((mn, mx, total, *squares)).tolist()
    squares = math.fsum(chunks)
    if math.isfinite(lo) and math.isfinite(hi):
        zeros = _zeros(x, n, lo) / n if lo <= 0.0 <= hi else 0.0  # (0 outside the range: none)
        st.stats = _float_map(_moments(x, n, lo, hi, total, squares), zeros, 0, 0, n)
        st.hist = _histogram(x, mn, mx, lo, hi, inner)
        return
    # NaN (aminmax propagates it) or ±Inf somewhere: count them, describe the finite rest
    st.nonfinite = True
    zeros = int(torch.eq(x, 0).sum()) / n
    nan = int(torch.isnan(x).sum())
    inf = int(torch.isinf(x).sum())
    finite = x[torch.isfinite(x)]
    m = finite.numel()
    if m == 0:
        st.stats = _float_map(None, zeros, nan, inf, n)
        return
    mn, mx = torch.aminmax(finite)
    lo, hi = mn.item(), mx.item()
    total = torch.sum(finite).item()
    squares = math.fsum(torch.stack(_squares(finite)).tolist())
    st.stats = _float_map(_moments(finite, m, lo, hi, total, squares), zeros, nan, inf, n)
    st.hist = _histogram(finite, mn, mx, lo, hi, 1)  # (the finite values lost their layout)


_SQUARES_CHUNK = 1 << 20  # values squared at once: a 4 MB temporary of float32


def _squares(x: Tensor) -> list[Tensor]:
    """The sums of x's squares (x 1-D) over chunks of it, by torch's own reduction, for the
    caller to add in float64 on the CPU. Not a BLAS dot product: its float32 sum depends on
    the CPU (MKL on an AMD CPU summed 4M values 1e-4 off), and so did the std."""
    if x.numel() <= _SQUARES_CHUNK:
        return [torch.sum(x * x)]
    squared = torch.empty(_SQUARES_CHUNK, dtype=x.dtype, device=x.device)  # (reused: no page
    # faults for a new temporary per chunk)
    return [torch.mul(c, c, out=squared[: c.numel()]).sum() for c in x.split(_SQUARES_CHUNK)]


def _zeros(x: Tensor, n: int, lo: float) -> int:
    """How many of the finite values x (1-D, dense; min lo) are 0. Counted on their bits
    where that is exact (see _zero_bits); count_nonzero on floats branches on every value,
    slow where zeros are common, as in ReLU outputs (min 0): there x / x (1 except where x
    is 0, NaN there) counts them branch-free in a few passes."""
    if n > STAGED_MAX:
        zeros = _zero_bits(x)
        if zeros is not None:
            return zeros
    if n <= STAGED_MAX or lo != 0.0:
        return n - int(torch.count_nonzero(x))
    ones = torch.nan_to_num_(torch.div(x, x), nan=0.0)
    nonzero = torch.sum(ones, dtype=torch.float64) if n > 1 << 24 else torch.sum(ones)
    return n - int(nonzero.item())


_BITS = {torch.float32: torch.int32, torch.float64: torch.int64}
# -0.0's bits read as an integer of its size: the smallest one
_NEGATIVE_ZERO = {torch.int32: -(1 << 31), torch.int64: -(1 << 63)}


def _zero_bits(x: Tensor) -> Optional[int]:
    """How many of x's values (dense float32/float64) are 0, counted on their bits: +0.0 is
    the only value with no bit set, and -0.0's bits are the smallest integer, so with no
    -0.0 (the integers' minimum says so) the zeros are the integers that are 0. Two fast
    integer passes against one float count_nonzero that branches on every value (2.5x
    slower); None when x has a -0.0 (or another dtype, or a device without these kernels)."""
    kind = _BITS.get(x.dtype)
    if kind is None:
        return None
    try:
        bits = x.view(kind)
        if int(bits.min()) == _NEGATIVE_ZERO[kind]:
            return None
        return x.numel() - int(torch.count_nonzero(bits))
    except Exception:  # the float count stands in
        return None


def _quiet_already() -> bool:
    """Neither torch-function modes, dispatch modes nor autograd would see our own calls
    (the tracer's usual state when it reads): skip three context managers per tensor."""
    return not (_grad_enabled() or _function_modes() or _dispatch_modes())


# (looked up once: the reader asks for every tensor of a trace)
_grad_enabled = torch.is_grad_enabled
_function_modes = torch._C._is_torch_function_mode_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack


def _histogram(
    x: Tensor, mn: Tensor, mx: Tensor, lo: float, hi: float, inner: int
) -> dict[str, Any]:
    """x: 1-D finite float32/float64 values, mn and mx their min and max (0-d tensors; lo
    and hi as floats): histc's formula in x's own precision (in float64 where hi - lo
    overflows float32)."""
    n = x.numel()
    values = x[:: _sample_step(n, [inner])] if n > HIST_SAMPLE else x
    if not hi > lo:
        return {"lo": lo, "hi": hi, "counts": [values.numel()] + [0] * (BINS - 1)}
    if hi - lo <= _HISTC_SPAN:  # torch.histc itself: one call (its (x - lo) * 16 stays finite)
        counts = torch.histc(values, BINS, lo, hi).tolist()
        return {"lo": lo, "hi": hi, "counts": [int(c) for c in counts]}
    span = torch.sub(mx, mn)
    if not math.isfinite(span.item()):
        values, mn, mx = values.double(), mn.double(), mx.double()
        span = torch.sub(mx, mn)
    if not math.isfinite(span.item()):  # float64 values further apart than its largest: halved
        values, mn, span = values * 0.5, mn * 0.5, torch.sub(mx * 0.5, mn * 0.5)
    pos = torch.sub(values, mn).div_(span).mul_(BINS).to(torch.int32)
    counts = torch.bincount(pos, minlength=BINS + 1).tolist()
    counts[BINS - 1] += sum(counts[BINS:])  # x == max lands in the last bin
    return {"lo": lo, "hi": hi, "counts": counts[:BINS]}


# the widest range torch.histc bins in float32: its (x - lo) * 16 must not overflow (with
# room for the rounding of x - lo)
_HISTC_SPAN = torch.finfo(torch.float32).max / (2 * BINS)


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


def _moments(
    x: Tensor, n: int, lo: float, hi: float, total: float, squares: float
) -> tuple[float, float, float, float]:
    """(min, max, mean, population std) of n finite values x (1-D) from their sum and sum
    of squares; around the mean again when the sums cancel, rescaled in float64 when the
    squares overflow or underflow."""
    absmax = max(-lo, hi)
    mean = total / n
    var = squares / n - mean * mean
    if not (math.isfinite(mean) and math.isfinite(var)) or 0.0 < absmax < _TINY[x.dtype]:
        mean, std = _rescaled_moments(x, absmax)
    else:
        if mean * mean > _ILL_CONDITIONED * var:
            mean, var = _about_mean64(x, n)
        std = math.sqrt(max(var, 0.0))
    mean = min(max(mean, lo), hi)  # rounding can't put the mean outside the values
    return lo, hi, mean, std


def _rescaled_moments(x: Tensor, absmax: float) -> tuple[float, float]:
    """(mean, population std) of finite values x (1-D, the largest in magnitude absmax > 0)
    whose squares underflow or overflow their dtype: in float64, scaled by a power of two
    that brings absmax near 1 (exactly, both ways; float64's squares hold float32's, and
    float64's own after scaling)."""
    exponent = max(math.frexp(absmax)[1], -1000)  # (2**1023 is float64's largest scale)
    scaled = x.to(torch.float64, copy=True).mul_(math.ldexp(1.0, -exponent))
    var, mean = torch.var_mean(scaled, correction=0)
    var64, mean64 = torch.stack((var, mean)).tolist()
    return math.ldexp(mean64, exponent), math.ldexp(math.sqrt(var64), exponent)


def same_values(view: Tensor, base: Tensor) -> bool:
    """Whether `view` holds exactly `base`'s elements (reshaped or permuted): then it has
    base's statistics. Both dense over the same storage span, same dtype and count."""
    try:
        return (
            view.dtype == base.dtype
            and view.numel() == base.numel() > 0
            and view.storage_offset() == base.storage_offset()
            and _dense(view)
            and _dense(base)
        )
    except Exception:
        return False


def _dense(t: Tensor) -> bool:
    """Non-overlapping and without gaps, in some order of dimensions."""
    if t.is_contiguous():
        return True
    expected = 1
    for stride, size in sorted(zip(t.stride(), t.shape)):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True
