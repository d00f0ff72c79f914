"""Statistics of tensors at the edges of the reader's arithmetic, against ground truth of our
own: broadcast views (stride-0 dimensions, as `expand` makes them), which must be read from
the values they repeat rather than copied whole, and values so small (or so large) that
their squares underflow (or overflow) float32."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

import torchscope
from torchscope import stats
from torchscope.stats import BINS, HIST_SAMPLE, STAGED_MAX, Reader, tensor_stats

COUNTS = ("numel", "nan", "inf", "zeros")  # zeros: a fraction, the same either way
EXACT = ("min", "max", "absmax")


def exact_std(t: torch.Tensor) -> float:
    """Population std of t's finite values (magnitudes of complex ones) in float64, scaled by
    a power of two to about 1 first (exact both ways): torch's own std underflows or
    overflows float64 too, past 1e-154 or 1e154."""
    x = (t.abs() if t.dtype.is_complex else t).detach().double().reshape(-1)
    x = x[torch.isfinite(x)]
    exponent = math.frexp(x.abs().max().item())[1]
    return math.ldexp(
        torch.std(torch.ldexp(x, torch.tensor(-exponent)), correction=0).item(), exponent
    )


def histc_counts(values: torch.Tensor, lo: float, hi: float) -> list[int]:
    """torch.histc's 16 bins over [lo, hi] (all in the first bin when lo == hi)."""
    if not hi > lo:
        return [values.numel()] + [0] * (BINS - 1)
    return [int(c) for c in torch.histc(values.float(), BINS, lo, hi).tolist()]


# -- broadcast views ------------------------------------------------------------------


def _row_with_nonfinite(n: int, finite: int) -> torch.Tensor:
    """n values, the first `finite` of them finite and 0 among them, the rest NaN and ±Inf."""
    row = torch.randn(n)
    row[0] = 0.0
    row[finite:] = float("nan")
    row[finite::3] = float("inf")
    row[finite + 1 :: 3] = -float("inf")
    return row


# past STAGED_MAX (a smaller view's copy is small: read as any tensor), all with stride-0
# dimensions of size > 1
BROADCASTS = {
    "row": lambda: torch.randn(1, 300).expand(400, 300),
    "column": lambda: torch.randn(300, 1).expand(300, 400),
    "middle, transposed": lambda: torch.randn(7, 1, 50).expand(7, 300, 50).transpose(0, 2),
    "two dims": lambda: torch.randn(1, 9, 1, 40).expand(30, 9, 20, 40),
    "one value": lambda: torch.tensor(2.5).expand(300, 300),
    "relu row": lambda: torch.randn(1, 2000).relu().expand(40, 2000),
    "float64": lambda: torch.randn(300, 1, dtype=torch.float64).expand(300, 300),
    "half": lambda: torch.randn(1, 500).half().expand(200, 500),
    "bfloat16": lambda: torch.randn(1, 500).bfloat16().expand(200, 500),
    "complex": lambda: torch.randn(1, 40, dtype=torch.complex64).expand(2000, 40),
    "int": lambda: torch.randint(-5, 50, (1, 9)).expand(8000, 9),
    "bool": lambda: (torch.rand(300, 1) > 0.5).expand(300, 300),
    "nan and inf, few finite": lambda: _row_with_nonfinite(1000, 3).expand(70, 1000),
    "nan and inf, many finite": lambda: _row_with_nonfinite(300, 280).expand(300, 300),
    "all nan": lambda: torch.full((1, 10), float("nan")).expand(7000, 10),
}


@pytest.mark.parametrize("kind", list(BROADCASTS))
def test_a_broadcast_view_has_the_statistics_of_its_copy(kind):
    """Its statistics are those of the same values copied out (the counts exactly, the
    moments up to float32's summation order); its histogram too, where all its finite values
    are binned or it has no NaN/Inf (every k-th of its values, as documented)."""
    torch.manual_seed(0)
    view = BROADCASTS[kind]()
    assert 0 in view.stride() and view.numel() > STAGED_MAX
    copy = view.contiguous()
    got, want = tensor_stats(view), tensor_stats(copy)
    assert got is not None and got.stats is not None and want is not None and want.stats
    for key, value in want.stats.items():
        if value is None or key in COUNTS or key in EXACT:
            assert got.stats[key] == value, (key, got.stats[key], value)
        else:
            assert got.stats[key] == pytest.approx(value, rel=1e-6, abs=1e-12), key
    assert got.nonfinite == want.nonfinite
    if want.hist is None:
        assert got.hist is None
        return
    assert got.hist is not None
    assert (got.hist["lo"], got.hist["hi"]) == (want.hist["lo"], want.hist["hi"])
    finite = copy[torch.isfinite(copy.abs() if copy.dtype.is_complex else copy)]
    if not want.nonfinite or finite.numel() <= HIST_SAMPLE:
        assert got.hist["counts"] == want.hist["counts"]
    else:
        # more finite values than are binned, and NaN/Inf among them: the values the view
        # repeats are binned, each once (in proportion to the whole tensor's histogram)
        counts = got.hist["counts"]
        repeats = view.numel() // view[:1].numel()
        whole = histc_counts(finite, got.hist["lo"], got.hist["hi"])
        assert [c * repeats for c in counts] == whole and sum(counts) <= HIST_SAMPLE


def test_a_broadcast_view_is_not_copied_whole():
    """2**58 values (2**60 bytes: no machine holds a copy) from 4096 distinct ones: the
    statistics of those, the counts times the repeats; the histogram bins every k-th value
    of the whole view, as for any tensor."""
    torch.manual_seed(1)
    row = torch.randn(4096)
    row[::5] = 0.0
    view = row.expand(1 << 23, 1 << 23, 4096)
    n = view.numel()
    st = tensor_stats(view)
    assert st is not None and st.stats is not None and st.hist is not None
    want = tensor_stats(row)
    assert want is not None and want.stats is not None
    assert st.stats["numel"] == n and st.stats["zeros"] == want.stats["zeros"]
    for key in ("min", "max", "absmax", "mean", "std"):
        assert st.stats[key] == pytest.approx(want.stats[key], rel=1e-6, abs=0.0), key
    step = stats._sample_step(n, [4096])
    sample = row[torch.arange(0, n, step) % 4096]  # the leading dims repeat the row
    assert st.hist["counts"] == histc_counts(sample, st.hist["lo"], st.hist["hi"])
    assert sum(st.hist["counts"]) <= HIST_SAMPLE


def test_a_traced_broadcast_view_has_statistics():
    """The repro: an attention-mask-like expand in a forward, traced with values on."""

    class Expand(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.expand(1 << 23, 1 << 23, 4096)

    x = torch.randn(1, 1, 4096)
    graph = torchscope.trace(Expand(), x, values=True)
    [edge] = [e for e in graph.edges if e.shape == [1 << 23, 1 << 23, 4096]][:1]
    assert edge.stats is not None and edge.stats["numel"] == 1 << 58
    std = x.double().std(correction=0).item()
    assert edge.stats["std"] == pytest.approx(std, rel=1e-6, abs=0.0)


# -- magnitudes far from 1 ------------------------------------------------------------


def _tiny_with_nan() -> torch.Tensor:
    return torch.cat((torch.randn(100) * 1e-25, torch.tensor([float("nan"), -float("inf")])))


MAGNITUDES = {
    "1e-25": lambda: torch.randn(4, 8) * 1e-25,
    "exp(x - 60)": lambda: torch.exp(torch.randn(4, 8) - 60),
    "1e-30": lambda: torch.randn(1000) * 1e-30,
    "1e-30 read alone": lambda: torch.randn(STAGED_MAX + 1) * 1e-30,
    "subnormal": lambda: torch.randn(1000) * 1e-40,
    "tiny spread, tiny mean": lambda: torch.randn(1000) * 1e-32 + 1e-28,
    "tiny spread, tiny mean, read alone": lambda: torch.randn(STAGED_MAX + 1) * 1e-32 + 1e-28,
    "tiny with nan": _tiny_with_nan,
    "tiny bfloat16": lambda: (torch.randn(100) * 1e-30).bfloat16(),
    "tiny complex": lambda: torch.randn(100, dtype=torch.complex64) * 1e-25,
    "tiny broadcast": lambda: (torch.randn(1, 300) * 1e-25).expand(300, 300),
    "1e30": lambda: torch.randn(1000) * 1e30,
    "1e30 read alone": lambda: torch.randn(STAGED_MAX + 1) * 1e30,
    "near float32's max": lambda: torch.randn(100) * 1e37,
    "float64 1e-170": lambda: torch.randn(1000, dtype=torch.float64) * 1e-170,
    "float64 1e200": lambda: torch.randn(1000, dtype=torch.float64) * 1e200,
}


def _assert_moments(got: dict[str, Any], t: torch.Tensor, where: str) -> None:
    x = (t.abs() if t.dtype.is_complex else t).double()
    finite = x[torch.isfinite(x)]
    std = exact_std(t)
    assert std > 0.0
    assert got["std"] == pytest.approx(std, rel=1e-6, abs=0.0), (where, got["std"], std)
    mean = finite.mean().item()
    assert got["mean"] == pytest.approx(mean, rel=1e-6, abs=1e-6 * std), (where, got["mean"], mean)
    assert all(math.isfinite(v) for v in got.values() if isinstance(v, float)), where


@pytest.mark.parametrize("kind", list(MAGNITUDES))
def test_the_spread_of_tiny_and_huge_values_is_exact(kind):
    """float32's squares underflow below about 1e-19 (x * 1e-25 had std 0.0) and overflow
    above about 1e19: the spread of such values is still the population std's."""
    torch.manual_seed(2)
    t = MAGNITUDES[kind]()
    st = tensor_stats(t)
    assert st is not None and st.stats is not None
    _assert_moments(st.stats, t, kind)


def test_tiny_rows_staged_among_ordinary_ones():
    """One staging buffer, rows of every magnitude: each row its own spread."""
    torch.manual_seed(3)
    scales = [1.0, 1e-25, 1e-40, 1e3, 1e-30, 1e30, 1e-12, 0.5]
    tensors = [torch.randn(16, 8) * s for s in scales] + [torch.zeros(16, 8)]
    reader = Reader()
    read = [reader.read(t) for t in tensors]
    reader.flush()
    for scale, t, st in zip(scales, tensors, read):
        assert st is not None and st.stats is not None
        _assert_moments(st.stats, t, str(scale))
    assert read[-1] is not None and read[-1].stats is not None and read[-1].stats["std"] == 0.0


def test_a_traced_forward_reports_the_spread_of_tiny_values():
    class Tiny(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return x * 1e-25, torch.exp(x - 60)

    torch.manual_seed(4)
    x = torch.randn(4, 8)
    graph = torchscope.trace(Tiny(), x, values=True)
    for name, t in (("output[0]", x * 1e-25), ("output[1]", torch.exp(x - 60))):
        [out] = graph.find("output", name)
        [edge] = [e for e in graph.edges if e.dst == out.id]
        assert edge.stats is not None
        assert edge.stats["std"] == pytest.approx(exact_std(t), rel=1e-6, abs=0.0), name


# -- the spread of large tensors -------------------------------------------------------------


@pytest.mark.parametrize("n", [120_000, 4_000_000], ids=["120k", "4M"])
@pytest.mark.parametrize("nonfinite", [False, True], ids=["finite", "with nan"])
def test_the_spread_of_a_large_tensor_is_float64_close_whatever_the_blas(n, nonfinite):
    """The sum of squares was one float32 BLAS dot product: MKL on an AMD CPU summed 4M
    values 1e-4 off (the std 5e-5 off) and 120k values 5e-6 off, where torch's own
    reduction, summed in chunks, is within float32's rounding of each value."""
    torch.manual_seed(0)
    x = torch.randn(n) * 0.9 + 0.007
    if nonfinite:
        x[::1000] = float("nan")
    st = tensor_stats(x)
    assert st is not None and st.stats is not None
    finite = x[torch.isfinite(x)].double()
    assert st.stats["std"] == pytest.approx(finite.std(correction=0).item(), rel=1e-6)
    assert st.stats["mean"] == pytest.approx(finite.mean().item(), rel=1e-5)


def test_a_large_tensor_is_read_without_float64_on_its_device(monkeypatch):
    """Apple's MPS has no float64: converting there raises, and every tensor read directly
    (over 65,536 values) lost its statistics. The sums come to the CPU as float32."""
    torch.manual_seed(0)
    x = torch.randn(300_000)
    want = x.double().std(correction=0).item()

    def refused(self, *args, **kwargs):
        raise TypeError("Cannot convert a MPS Tensor to float64 dtype")

    monkeypatch.setattr(torch.Tensor, "double", refused)
    st = tensor_stats(x)
    assert st is not None and st.stats is not None
    assert st.stats["std"] == pytest.approx(want, rel=1e-6)
