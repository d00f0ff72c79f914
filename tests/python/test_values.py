"""Values and costs on the graph (docs/graph-format.md) against independent ground truth:
statistics against torch's own reductions of the same tensors (kept by a recorder of our
own on a twin model), FLOPs against torch's FlopCounterMode, the NaN origin on models
that make NaN/Inf in different ways, times that nest."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
import zoo
from torch import nn
from torch.nn import functional as F
from torch.overrides import TorchFunctionMode
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

import torchscope
from torchscope.graph import Graph
from torchscope.ops import func_info
from torchscope.stats import BINS, HIST_SAMPLE, STAGED_MAX, Reader, tensor_stats

THIS_FILE = __file__


# -- ground truth --------------------------------------------------------------------


def reductions(t: torch.Tensor) -> dict[str, Any]:
    """What Edge.stats must say about t, from torch's plain reductions in float64."""
    t = t.detach()
    if t.dtype.is_complex:
        t = t.abs()
    n = t.numel()
    if t.dtype == torch.bool or not t.dtype.is_floating_point:
        x = t.to(torch.float64)
        return {"min": x.min().item(), "max": x.max().item(), "mean": x.mean().item(), "numel": n}
    x = t.to(torch.float64).reshape(-1)
    finite = x[torch.isfinite(x)]
    out: dict[str, Any] = {
        "zeros": (x == 0).sum().item() / n,
        "nan": int(torch.isnan(x).sum()),
        "inf": int(torch.isinf(x).sum()),
        "numel": n,
    }
    if finite.numel():
        out.update(
            min=finite.min().item(),
            max=finite.max().item(),
            mean=finite.mean().item(),
            std=finite.std(correction=0).item(),
            absmax=finite.abs().max().item(),
        )
    return out


def assert_stats(got: dict[str, Any], t: torch.Tensor, where: str = "") -> None:
    want = reductions(t)
    for key, value in want.items():
        assert key in got, (where, key)
        if key in ("numel", "nan", "inf"):
            assert got[key] == value, (where, key, got[key], value)
        elif key in ("min", "max", "absmax"):
            assert got[key] == pytest.approx(value, rel=1e-6, abs=1e-30), (where, key)
        else:
            # float32 sums: relative to the spread of the values
            scale = abs(value) + want.get("std", 0.0) + 1e-12
            assert abs(got[key] - value) <= 1e-4 * scale, (where, key, got[key], value)


def assert_hist(hist: dict[str, Any], t: torch.Tensor, where: str = "") -> None:
    """lo/hi: the exact min/max of the finite values; counts: torch.histc's, in the
    tensor's precision (half precisions in float32; past float32's range in float64)."""
    values = t.detach()
    values = (values.abs() if values.dtype.is_complex else values).reshape(-1)
    values = values[torch.isfinite(values)]
    assert hist["lo"] == values.min().item() and hist["hi"] == values.max().item(), where
    counts = hist["counts"]
    assert len(counts) == BINS and all(isinstance(c, int) and c >= 0 for c in counts), where
    if values.numel() <= HIST_SAMPLE:
        single = values if values.dtype == torch.float64 else values.float()
        lo, hi = single.min(), single.max()
        if not torch.isfinite(hi - lo):  # histc overflows there (all zeros): float64
            x = values.double()
            pos = ((x - x.min()) / (x.max() - x.min()) * BINS).long().clamp(max=BINS - 1)
            assert counts == torch.bincount(pos, minlength=BINS).tolist(), where
        elif lo < hi:
            want = torch.histc(single, BINS, lo.item(), hi.item()).int().tolist()
            assert counts == want, (where, counts, want)
        else:
            assert counts == [values.numel()] + [0] * (BINS - 1), where
    else:  # an evenly spaced sample: a picture of the values, not a statistic
        assert 0 < sum(counts) <= HIST_SAMPLE, where


class CallsSeen(TorchFunctionMode):
    """Our own recorder: clones of what every outermost torch call with tensor arguments
    returned (or wrote, for `x[i] = v`), in call order: the tensors the graph's op nodes made."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[torch.Tensor]]] = []
        # per call: the bytes of the inputs it handed back as they were (no new memory)
        self.handed_back: list[int] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        result = func(*args, **(kwargs or {}))
        inputs = zoo.flat_tensors((args, kwargs or {}))
        outs = zoo.flat_tensors(result) if isinstance(result, (torch.Tensor, tuple, list)) else []
        info = func_info(func)
        name = info.name
        if result is None and name == "setitem" and args:
            outs = [args[0]]
        if inputs and outs:
            self.calls.append((name, [o.detach().clone() for o in outs]))
            writes = info.writes_first_arg or "out" in (kwargs or {})
            back = {id(o): o for o in outs if not writes and any(o is i for i in inputs)}
            self.handed_back.append(sum(o.numel() * o.element_size() for o in back.values()))
        return result


def ops_and_calls(name: str) -> tuple[Graph, list[tuple[str, list[torch.Tensor]]]]:
    graph, seen = ops_and_seen(name)
    return graph, seen.calls


def ops_and_seen(name: str) -> tuple[Graph, CallsSeen]:
    model, args, kwargs = zoo.build(name)
    graph = torchscope.trace(model, *args, **kwargs)
    twin, targs, tkwargs = zoo.build(name)
    seen = CallsSeen()
    with torch.no_grad(), seen:
        twin(*targs, **tkwargs)
    return graph, seen


STATS_MODELS = ["mlp", "gpt2", "bert", "resnet", "mixtral", "lstm_gru", "inplace_view", "llama"]


@pytest.mark.parametrize("name", STATS_MODELS)
def test_edge_statistics_are_torchs_reductions_of_the_same_tensors(name):
    graph, calls = ops_and_calls(name)
    ops = [n for n in graph.nodes if n.kind == "op"]
    assert [n.name for n in ops] == [c[0] for c in calls], "both recorders saw the same calls"
    checked = 0
    for node, (_, outs) in zip(ops, calls):
        if node.name.startswith("empty"):
            continue  # uninitialised memory: different in every run
        for e in (e for e in graph.edges if e.src == node.id):
            same = [t for t in outs if list(t.shape) == e.shape]
            if not same and (node.name.endswith("_") or node.name == "setitem"):
                continue  # a write into a view: the edge carries its base, written too
            assert same, (node.name, e.shape)
            assert e.stats is not None, f"{node.name}: an edge of real data without stats"
            # several outputs of one shape (split, chunk): the edge is one of them
            errors = []
            for t in same:
                try:
                    assert_stats(e.stats, t, f"{name}:{node.name}")
                    if t.dtype.is_floating_point or t.dtype.is_complex:
                        assert e.hist is not None
                        assert_hist(e.hist, t, f"{name}:{node.name}")
                    else:
                        assert e.hist is None
                    break
                except AssertionError as exc:
                    errors.append(exc)
            else:
                raise errors[0]
            checked += 1
    assert checked > len(ops) // 2


def test_input_and_constant_edges_have_statistics():
    model, args, kwargs = zoo.build("param_direct")
    graph = torchscope.trace(model, *args, **kwargs)
    x = graph.find("input", "x")[0]
    [e] = [e for e in graph.edges if e.src == x.id][:1]
    assert_stats(e.stats, args[0])
    constants = [n for n in graph.nodes if n.kind == "constant" and n.target]
    assert constants
    params = dict(model.named_parameters())
    for c in constants:
        for e in (e for e in graph.edges if e.src == c.id):
            if c.target in params:
                assert_stats(e.stats, params[c.target], c.target)


TENSORS = {
    "gauss": lambda: torch.randn(3, 5),
    "large mean": lambda: torch.randn(64, 64) * 0.01 + 1000.0,
    "relu": lambda: torch.randn(4096).relu(),
    "transposed": lambda: torch.randn(48, 40).t(),
    "sliced": lambda: torch.randn(10, 20)[:, 3:9],
    "big": lambda: torch.randn(STAGED_MAX + 123),
    "constant": lambda: torch.full((7,), 2.5),
    "one": lambda: torch.tensor([3.0]),
    "empty": lambda: torch.zeros(0, 4),
    "half": lambda: torch.randn(300).half(),
    "bfloat16": lambda: torch.randn(2, 150).bfloat16(),
    "float64": lambda: torch.randn(5, 5, dtype=torch.float64),
    "complex": lambda: torch.randn(9, dtype=torch.complex64),
    "int": lambda: torch.randint(-5, 50, (4, 6)),
    "bool": lambda: torch.rand(30) > 0.3,
    "nan and inf": lambda: torch.tensor(
        [1.0, float("nan"), float("inf"), -float("inf"), 0.0, -2.0]
    ),
    "all nan": lambda: torch.full((4,), float("nan")),
    "huge": lambda: torch.tensor([3e38, -3e38, 1e38]),
    # zeros of both signs (-0.0: a negative value times a zero mask), few and many, in
    # tensors read directly and staged, in both precisions
    "signed zeros": lambda: torch.randn(300) * (torch.arange(300) % 7 != 0),
    "big signed zeros": lambda: (
        torch.randn(STAGED_MAX + 123) * (torch.arange(STAGED_MAX + 123) % 5 != 0)
    ),
    "big negative zeros only": lambda: (
        -torch.rand(STAGED_MAX + 9) * (torch.arange(STAGED_MAX + 9) % 3 != 0)
    ),
    "big one negative zero": lambda: torch.cat(
        (torch.randn(STAGED_MAX + 9) + 5, torch.tensor([-0.0]))
    ),
    "big positive zeros only": lambda: (
        torch.rand(STAGED_MAX + 9) * (torch.arange(STAGED_MAX + 9) % 3 != 0)
    ),
    "float64 signed zeros": lambda: (
        torch.randn(STAGED_MAX + 9, dtype=torch.float64) * (torch.arange(STAGED_MAX + 9) % 4 != 0)
    ),
    "relu big": lambda: torch.randn(STAGED_MAX + 9).relu(),
    "overflowed half": lambda: torch.tensor([60000.0, 1.0]).half() * 2,
}


@pytest.mark.parametrize("kind", list(TENSORS))
def test_statistics_of_one_tensor(kind):
    torch.manual_seed(0)
    t = TENSORS[kind]()
    st = tensor_stats(t)
    assert st is not None and st.stats is not None
    if t.numel() == 0:
        assert st.stats["numel"] == 0 and st.stats["min"] is None
        return
    assert_stats(st.stats, t, kind)
    floating = t.dtype.is_floating_point or t.dtype.is_complex
    finite = floating and bool(torch.isfinite(t.abs() if t.dtype.is_complex else t).any())
    if finite:
        assert_hist(st.hist, t, kind)
    else:
        assert st.hist is None
    assert st.nonfinite == (floating and not bool(torch.isfinite(t).all()))
    # strict JSON: no NaN or Inf in the numbers themselves
    for v in [*st.stats.values(), *((st.hist or {}).values())]:
        assert not (isinstance(v, float) and not math.isfinite(v))


def _formula_counts(x: torch.Tensor) -> list[int]:
    """16 bins over [min, max] by (x - lo) / (hi - lo) * 16 truncated, in x's precision, the
    max in the last bin: the histogram's documented formula, written out."""
    lo, hi = x.min(), x.max()
    pos = ((x - lo) / (hi - lo) * BINS).to(torch.int64).clamp(max=BINS - 1)
    return torch.bincount(pos, minlength=BINS).tolist()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "kind", ["normal", "on the edges", "one edge apart", "wide", "tiny", "integers"]
)
def test_a_directly_read_histogram_bins_by_the_documented_formula(kind, dtype):
    """A tensor read on its own is binned with torch.histc where (x - lo) * 16 stays finite,
    else by the formula in float64: the same counts as the formula either way."""
    from torchscope import stats

    torch.manual_seed(3)
    if kind == "normal":
        x = torch.randn(500, dtype=dtype)
    elif kind == "on the edges":  # every bin edge, and values a hair either side of them
        lo, hi = -3.0, 5.0
        edges = torch.linspace(lo, hi, BINS + 1, dtype=dtype)
        x = torch.cat((edges, torch.nextafter(edges, edges + 1), torch.nextafter(edges, edges - 1)))
        x = x.clamp(lo, hi)
    elif kind == "one edge apart":
        x = torch.tensor([0.1, 0.1 + 1e-7, 0.3, 0.7], dtype=dtype)
    elif kind == "wide":  # (x - lo) * 16 past float32's range: the formula in float64
        x = torch.tensor([-3e37, 1e37, 2.9e37, 0.0], dtype=dtype)
    elif kind == "tiny":
        x = torch.tensor([1e-40, 2e-40, 3e-40, 1e-39], dtype=dtype)
    else:
        x = torch.arange(-7, 9, dtype=dtype).repeat(3)
    mn, mx = x.min(), x.max()
    hist = stats._histogram(x, mn, mx, mn.item(), mx.item(), 1)
    want = _formula_counts(x)
    assert hist["counts"] == want and all(type(c) is int for c in hist["counts"]), (hist, want)
    assert (hist["lo"], hist["hi"]) == (mn.item(), mx.item())


def test_batched_reading_equals_reading_one_by_one():
    """The staging path (many tensors of a few sizes, flushed together) gives each tensor
    its own statistics, NaN rows included."""
    torch.manual_seed(1)
    tensors = [torch.randn(64, 8) * (i + 1) + i for i in range(300)]
    tensors[7][3, 2] = float("nan")
    tensors[8][0, 0] = float("inf")
    # rows whose sums of squares would cancel (a mean far from a small spread), between
    # rows that don't, in one buffer: each centred alone
    tensors += [torch.randn(64, 8) * 0.01 + 1000.0 * (i % 2) for i in range(20)]
    tensors += [torch.randn(64, 8) * 1e15 + 1e19 for _ in range(3)]  # squares past float32
    tensors += [torch.randn(3, 100).half() for _ in range(5)] + [torch.zeros(5, 5)]
    tensors += [torch.tensor(float(i) - 150.0) for i in range(300)]  # scalars: many buffers' rows
    tensors += [torch.randn(4, 6).t() for _ in range(3)]  # transposed: staged in logical order
    # zeros of either sign in some rows of a buffer, none in its other rows
    tensors += [
        torch.randn(64, 8) * (torch.rand(64, 8) > 0.5) if i % 3 else torch.randn(64, 8)
        for i in range(9)
    ]
    tensors += [torch.full((64, 8), -0.0) if i == 4 else torch.randn(64, 8) + 3 for i in range(9)]
    reader = Reader()
    read = [reader.read(t) for t in tensors]
    reader.flush()
    for i, (t, st) in enumerate(zip(tensors, read)):
        assert st is not None and st.stats is not None, i
        assert_stats(st.stats, t, str(i))
        assert_hist(st.hist, t, str(i))
        assert st.nonfinite == (i in (7, 8))


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "read alone"])
def test_the_spread_of_values_far_from_zero_is_exact(staged):
    """Values far from 0 with a small spread: the spread was measured around a mean summed in
    float32, so a constant 1000001.0 had std 0.125 and x * 0.01 + 1e6 had 0.0626 (not
    0.00267). Measured in float64 now."""
    n = 4096 if staged else 100_000
    assert (n <= STAGED_MAX) == staged
    torch.manual_seed(3)
    cases = [torch.full((n,), 1000001.0), torch.randn(n) * 0.01 + 1e6, torch.randn(n) + 3e4]
    reader = Reader()
    read = [reader.read(t) if staged else tensor_stats(t) for t in cases]
    reader.flush()
    for t, st in zip(cases, read):
        want = torch.std(t.double(), correction=0).item()
        assert st.stats["std"] == pytest.approx(want, rel=1e-3, abs=1e-9), (st.stats, want)
        assert st.stats["mean"] == pytest.approx(t.double().mean().item(), rel=1e-7)  # (float32)


def test_meta_fake_and_subclass_tensors_have_no_statistics():
    from torch._subclasses.fake_tensor import FakeTensorMode

    assert tensor_stats(torch.empty(3, device="meta")) is None
    with FakeTensorMode():
        fake = torch.empty(3)
    assert tensor_stats(fake) is None
    assert tensor_stats(torch.randn(4, 4).to_sparse()) is None


def test_meta_trace_has_costs_but_no_statistics():
    with torch.device("meta"):
        model, args, kwargs = zoo.build("llama")
    graph = torchscope.trace(model, *args, **kwargs)
    assert all(e.stats is None and e.hist is None for e in graph.edges)
    assert graph.values.stats and graph.values.costs and graph.nan_origin is None
    assert graph.module_call("").cost.flops > 0


# -- FLOPs ----------------------------------------------------------------------------


def flop_counter(name: str, device: str = "cpu") -> FlopCounterMode:
    with torch.device(device):
        model, args, kwargs = zoo.build(name)
    if name == "mixtral":
        # its experts run torch._grouped_mm, for which torch's counter has no formula (0): the
        # same experts as a loop of F.linear, which it counts (test_grouped_mm_flops.py)
        model.config._experts_implementation = "eager"

    # attention's fused CPU kernel, which torch's counter leaves out, with torch's own formula
    # for attention (test_attention_on_cpu_counts_its_matmuls)
    def attention(q: Any, k: Any, v: Any, *args: Any, out_shape: Any = None, **kw: Any) -> int:
        return sdpa_flop_count(q, k, v)  # (shapes: the counter passes them)

    aten = torch.ops.aten
    counter = FlopCounterMode(
        display=False, custom_mapping={aten._scaled_dot_product_flash_attention_for_cpu: attention}
    )
    with torch.no_grad(), counter:
        model(*args, **kwargs)
    return counter


@pytest.mark.parametrize(
    "name", ["gpt2", "bert", "resnet", "cnn_bn_eval", "mixtral", "llama", "lstm_gru", "t5"]
)
def test_flops_equal_flop_counter_mode(name):
    model, args, kwargs = zoo.build(name)
    graph = torchscope.trace(model, *args, **kwargs)
    # an LSTM on CPU is one oneDNN kernel torch's counter has no formula for: its matmuls are
    # what it counts on meta (test_an_lstm_on_cpu_counts_its_matmuls); attention's CPU kernel
    # gets torch's attention formula (flop_counter)
    counter = flop_counter(name, "meta" if name == "lstm_gru" else "cpu")
    root = graph.module_call("")
    assert root.cost.flops == counter.get_total_flops() > 0
    # per module call: FlopCounterMode names modules ClassName.path
    per_module = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
    calls: dict[str, int] = {}
    for n in graph.nodes:
        if n.kind == "module":
            calls[n.path] = calls.get(n.path, 0) + 1
    prefix = type(model).__name__
    for n in graph.nodes:
        if n.kind == "module" and n.path and calls[n.path] == 1:
            assert n.cost.flops == per_module.get(f"{prefix}.{n.path}", 0), n.path


# (without torchscope too, Mixtral fails on meta: torch's meta grouped_mm wants bf16; BERT
# calls .item())
@pytest.mark.parametrize("name", ["gpt2", "llama", "resnet", "t5"])
def test_flops_on_meta_equal_flop_counter_mode(name):
    with torch.device("meta"):
        model, args, kwargs = zoo.build(name)
    graph = torchscope.trace(model, *args, **kwargs)
    assert graph.module_call("").cost.flops == flop_counter(name, "meta").get_total_flops() > 0


@pytest.mark.parametrize(
    "kw",
    [{}, {"num_layers": 2, "bidirectional": True}, {"proj_size": 4}, {"bias": False}],
    ids=["plain", "two-layers-bidirectional", "projection", "no-bias"],
)
def test_an_lstm_on_cpu_counts_its_matmuls(kw):
    """On CPU an LSTM runs as one fused oneDNN kernel per layer (aten.mkldnn_rnn_layer), for
    which torch's counter has no formula: it said 0 FLOPs, where the same LSTM on meta (run as
    its decomposition) counts its matmuls. The trace counts those matmuls on both."""
    layer = nn.LSTM(8, 6, batch_first=True, **kw)
    x = torch.randn(3, 5, 8)
    graph = torchscope.trace(layer, x)
    with torch.device("meta"):
        twin = nn.LSTM(8, 6, batch_first=True, **kw)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        twin(x.to("meta"))
    assert graph.module_call("").cost.flops == counter.get_total_flops() > 0
    unbatched = torchscope.trace(layer, x[0])
    assert unbatched.module_call("").cost.flops * 3 == graph.module_call("").cost.flops


class _Attention(nn.Module):
    def __init__(self, grouped: bool) -> None:
        super().__init__()
        self.grouped = grouped

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.grouped)


@pytest.mark.parametrize(
    "shapes",
    [((2, 4, 64, 32),) * 3, ((2, 8, 16, 32), (2, 2, 16, 32), (2, 2, 16, 32))],
    ids=["self-attention", "grouped-query"],
)
def test_attention_on_cpu_counts_its_matmuls(shapes):
    """On CPU, scaled_dot_product_attention runs a fused kernel
    (aten._scaled_dot_product_flash_attention_for_cpu) torch's counter has no formula for: it
    said 0 FLOPs, and GPT-2 on CPU counted less than on meta. Counted as on meta now."""
    model = _Attention(grouped=shapes[0] != shapes[1])
    tensors = [torch.randn(*s) for s in shapes]
    graph = torchscope.trace(model, *tensors)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(*(t.to("meta") for t in tensors))
    [op] = [n for n in graph.nodes if n.kind == "op"]
    assert op.cost.flops == counter.get_total_flops() > 0


def test_gpt2_counts_the_same_flops_on_cpu_as_on_meta():
    config = dict(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=64)
    config.update(bos_token_id=0, eos_token_id=0)
    from transformers import GPT2Config, GPT2Model

    ids = torch.randint(0, 1000, (2, 32))
    cpu = torchscope.trace(GPT2Model(GPT2Config(**config)).eval(), ids)
    with torch.device("meta"):
        meta_model = GPT2Model(GPT2Config(**config)).eval()
    meta = torchscope.trace(meta_model, ids.to("meta"))
    assert cpu.module_call("").cost.flops == meta.module_call("").cost.flops > 0


@pytest.mark.parametrize("shape", [(7,), (3, 7), (2, 3, 7), (2, 2, 3, 7)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_flops_equal_flop_counter_mode(shape, bias):
    """F.linear is counted from its shapes (no dispatch mode): the same number."""
    layer = nn.Linear(7, 5, bias=bias)
    x = torch.randn(*shape)
    graph = torchscope.trace(layer, x)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(x)
    [op] = [n for n in graph.nodes if n.kind == "op"]
    assert op.cost.flops == counter.get_total_flops()


class _Sub(torch.Tensor):
    """A tensor subclass, as DTensor is: its linear is counted by torch's counter."""


def test_linear_of_a_tensor_subclass_is_counted_not_zero():
    """A tensor-parallel Linear (DTensor input and weight) traced with 0 FLOPs: the shape
    formula steps aside for subclasses, and nothing counted in its place."""
    layer = nn.Linear(7, 5)
    x = torch.randn(3, 7).as_subclass(_Sub)
    graph = torchscope.trace(layer, x)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        layer(x)
    [op] = [n for n in graph.nodes if n.kind == "op" and n.name == "linear"]
    assert counter.get_total_flops() == 2 * 3 * 7 * 5
    assert op.cost.flops == counter.get_total_flops()


class _MatMuls(nn.Module):
    """addmm and mm, as functions and methods, in the forms the registry's formula takes
    from shapes and in forms the counter must see (keywords, a batch)."""

    def __init__(self, form: str) -> None:
        super().__init__()
        self.form = form
        self.w = nn.Parameter(torch.randn(7, 5))
        self.b = nn.Parameter(torch.randn(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.form == "addmm":
            return torch.addmm(self.b, x, self.w)
        if self.form == "addmm-method":
            return self.b.addmm(x, self.w)
        if self.form == "addmm-beta":
            return torch.addmm(self.b, x, self.w, beta=0.5)
        if self.form == "mm":
            return torch.mm(x, self.w)
        if self.form == "mm-method":
            return x.mm(self.w)
        return torch.matmul(x, self.w)  # a batch of matrices: not this shortcut


@pytest.mark.parametrize(
    "form", ["addmm", "addmm-method", "addmm-beta", "mm", "mm-method", "batched"]
)
def test_matmul_flops_equal_flop_counter_mode(monkeypatch, form):
    """addmm and mm of two plain matrices are counted from their shapes (no dispatch mode),
    anything else under the counter: the same number either way."""
    from torchscope import costs

    dispatched: list[str] = []
    real = costs.FlopCounter.__torch_dispatch__

    def spy(self, func, types, args=(), kwargs=None):
        dispatched.append(str(func))
        return real(self, func, types, args, kwargs)

    monkeypatch.setattr(costs.FlopCounter, "__torch_dispatch__", spy)
    model = _MatMuls(form)
    x = torch.randn(2, 3, 7) if form == "batched" else torch.randn(3, 7)
    graph = torchscope.trace(model, x)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(x)
    [op] = [n for n in graph.nodes if n.kind == "op"]
    assert (
        op.cost.flops
        == counter.get_total_flops()
        == 2 * 3 * 7 * 5 * (2 if form == "batched" else 1)
    )
    from_shapes = form in ("addmm", "addmm-method", "mm", "mm-method")
    assert (dispatched == []) == from_shapes, dispatched


def test_costs_roll_up_into_modules_and_groups():
    model, args, kwargs = zoo.build("gpt2")
    graph = torchscope.trace(model, *args, **kwargs)
    children: dict[int, list] = {}
    for n in graph.nodes:
        if n.parent is not None:
            children.setdefault(n.parent, []).append(n)
    for n in graph.nodes:
        if n.kind == "module" and n.id in children:
            kids = [c for c in children[n.id] if c.cost is not None]
            assert n.cost.flops == sum(c.cost.flops for c in kids), n.path
            assert n.cost.bytes == sum(c.cost.bytes for c in kids), n.path
    assert graph.groups
    for g in graph.groups:
        members = [graph.nodes[m].cost for m in g.members]
        assert g.cost.flops == sum(c.flops for c in members)
        assert g.cost.time_ns == sum(c.time_ns for c in members)


@pytest.mark.parametrize("name", ["mlp", "gpt2", "resnet"])
def test_op_bytes_are_the_bytes_of_its_outputs(name):
    """Less an input handed back as it was (`x.to(x.dtype)`): no new memory."""
    graph, seen = ops_and_seen(name)
    ops = [n for n in graph.nodes if n.kind == "op"]
    assert any(seen.handed_back) == (name == "gpt2")  # (GPT-2's `.to()` of its mask)
    for node, (_, outs), back in zip(ops, seen.calls, seen.handed_back):
        unique = {id(t): t for t in outs}.values()
        made = sum(t.numel() * t.element_size() for t in unique) - back
        assert node.cost.bytes == made, node.name


@pytest.mark.parametrize("name", ["gpt2", "bert", "resnet", "lstm_gru", "deep_nesting"])
def test_a_module_takes_at_least_as_long_as_its_children(name):
    model, args, kwargs = zoo.build(name)
    graph = torchscope.trace(model, *args, **kwargs)
    inside: dict[int, int] = {}
    for n in graph.nodes:
        if n.parent is not None and n.cost is not None:
            inside[n.parent] = inside.get(n.parent, 0) + n.cost.time_ns
    modules = [n for n in graph.nodes if n.kind == "module"]
    assert modules
    for m in modules:
        assert m.cost.time_ns >= inside.get(m.id, 0) >= 0, m.path
    assert all(n.cost.time_ns > 0 for n in graph.nodes if n.kind == "op")


# -- the NaN origin -------------------------------------------------------------------------


class LogOfNegative(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        shifted = h - 100.0
        bad = torch.log(shifted)  # NAN_LOG
        return bad.sum()


class ZeroByZero(nn.Module):
    def forward(self, x):
        zero = x * 0
        ratio = zero / zero  # NAN_DIV
        return ratio + x


class Inner(nn.Module):
    def forward(self, h):
        grown = h * 300.0
        return grown * grown  # NAN_OVERFLOW


class HalfOverflow(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        h = x.half()
        return self.inner(h).float()


class PassesInfOn(nn.Module):
    def forward(self, x):
        y = x * 2
        return y + 1


def _line(marker: str) -> int:
    with open(THIS_FILE) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return i
    raise AssertionError(marker)


@pytest.mark.parametrize(
    "model, x, op, marker",
    [
        (LogOfNegative(), torch.randn(2, 4), "log", "NAN_LOG"),
        (ZeroByZero(), torch.randn(3), "truediv", "NAN_DIV"),
        (HalfOverflow(), torch.tensor([1.0, 2.0, -3.0]), "mul", "NAN_OVERFLOW"),
    ],
    ids=["log of a negative", "0 / 0", "float16 overflow"],
)
def test_nan_origin_is_the_first_op_that_made_non_finite_values(model, x, op, marker):
    graph = torchscope.trace(model, x)
    assert graph.nan_origin is not None
    origin = graph.nodes[graph.nan_origin]
    assert origin.kind == "op" and origin.name.strip("_") in (op, "div")
    assert origin.site is not None and origin.site.line == _line(marker)
    assert (origin.site.file, origin.site.line) == (THIS_FILE, _line(marker))
    # its inputs are finite, its output is not: visible in the statistics of the edges
    ins = [e for e in graph.edges if e.dst == origin.id]
    outs = [e for e in graph.edges if e.src == origin.id]
    assert ins and all(e.stats["nan"] == 0 and e.stats["inf"] == 0 for e in ins)
    assert outs and all(e.stats["nan"] + e.stats["inf"] > 0 for e in outs)
    # and nothing before it made any
    for e in graph.edges:
        if e.src < origin.id and e.stats is not None and "nan" in e.stats:
            assert e.stats["nan"] == 0 and e.stats["inf"] == 0
    assert graph.to_wire()["nan_origin"] == origin.id


class MaskedAttention(nn.Module):
    """nanoGPT's causal mask: an -inf asked for (masked_fill), which softmax turns into 0."""

    def __init__(self, masked_row: bool = False) -> None:
        super().__init__()
        mask = torch.tril(torch.ones(4, 4))
        if masked_row:
            mask[0] = 0  # a row with nothing to attend to: softmax of all -inf is NaN
        self.register_buffer("bias", mask.view(1, 1, 4, 4))

    def forward(self, x, y):
        att = (x @ x.transpose(-1, -2)) * 0.5
        att = att.masked_fill(self.bias == 0, float("-inf"))
        att = (att + 0.0).softmax(-1)  # MASKED_SOFTMAX
        z = torch.log(y - 100)  # MASKED_LOG
        return att, z


def test_an_inf_the_model_asks_for_is_not_the_nan_origin():
    """`masked_fill(mask, float('-inf'))` makes -inf on purpose: it was named the origin of
    every nanoGPT-style model, and a real NaN later (a log of a negative) never was."""
    graph = torchscope.trace(MaskedAttention(), torch.randn(1, 1, 4, 8), torch.randn(3))
    origin = graph.nodes[graph.nan_origin]
    assert origin.name == "log" and origin.site.line == _line("MASKED_LOG")
    # the asked-for -inf, and an add that carries it on, are no origin; a NaN made from it is
    masked = torchscope.trace(MaskedAttention(True), torch.randn(1, 1, 4, 8), torch.ones(3) * 200)
    origin = masked.nodes[masked.nan_origin]
    assert origin.name == "softmax" and origin.site.line == _line("MASKED_SOFTMAX")


class NanGate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Parameter(torch.tensor([1.0, float("nan")]))

    def forward(self, x):
        return x * self.gate


def test_a_parameter_holding_nan_is_the_origin():
    """A parameter used directly that holds NaN (a corrupt checkpoint) gave no origin at all:
    the op using it had a non-finite input. The parameter's node is where they come from, as
    a factory constant's is."""
    graph = torchscope.trace(NanGate(), torch.randn(3, 2))
    origin = graph.nodes[graph.nan_origin]
    assert (origin.kind, origin.name, origin.target) == ("constant", "gate", "gate")


class MaskBuffer(nn.Module):
    """A causal mask kept as a buffer of 0 and -inf (fairseq's, older transformers')."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mask", torch.full((4, 4), float("-inf")).triu(1))

    def forward(self, x):
        return ((x @ x.transpose(-1, -2)) + self.mask).softmax(-1)


def test_a_buffer_of_minus_inf_is_no_origin():
    graph = torchscope.trace(MaskBuffer(), torch.randn(4, 8))
    assert graph.nan_origin is None


def test_inf_in_the_input_has_no_origin_inside():
    graph = torchscope.trace(PassesInfOn(), torch.tensor([float("inf"), 1.0]))
    assert graph.nan_origin is None
    x = graph.find("input", "x")[0]
    assert all(e.stats["inf"] == 1 for e in graph.edges if e.src == x.id)
    assert any(e.stats["inf"] == 1 for e in graph.edges if graph.nodes[e.src].kind == "op")
    assert graph.to_wire()["nan_origin"] is None


class LogOf(nn.Module):
    def forward(self, x, y):
        z = x @ y  # a NaN in x spreads over its row: no new NaN made here
        return torch.log(x) * 2, z.sum()


def test_one_nan_in_the_input_does_not_hide_a_nan_the_model_makes():
    """log of 5 negative values makes 5 NaN beside the input's one (1 in, 6 out): the origin
    is log, though its input was not finite (QA: one bad sample hid a real bug). An op that
    mixes values (matmul) spreads a NaN over many: no origin."""
    x = torch.linspace(-1, 1, 12).reshape(3, 4)
    x[2, 3] = float("nan")  # (not a negative: log of it would be NaN anyway)
    graph = torchscope.trace(LogOf(), x, torch.ones(4, 4))
    assert graph.nan_origin is not None and graph.nodes[graph.nan_origin].name == "log"
    spread = torch.ones(3, 4)
    spread[0, 0] = float("nan")
    graph = torchscope.trace(LogOf(), spread, torch.ones(4, 4))
    assert graph.nan_origin is None  # log of ones; matmul spreads one NaN over a row: 4 out


def test_nan_origin_in_a_submodule_names_the_op_inside_it():
    graph = torchscope.trace(HalfOverflow(), torch.tensor([1.0, 2.0, -3.0]))
    origin = graph.nodes[graph.nan_origin]
    assert graph.nodes[origin.parent].path == "inner"


class PositionBuckets(nn.Module):
    """T5's relative position buckets: log(0) is -inf for the nearby positions, turned into
    an integer bucket that `where` then passes over; nothing non-finite leaves the model."""

    def __init__(self, reaches_output: bool = False) -> None:
        super().__init__()
        self.reaches_output = reaches_output

    def forward(self, x):
        n = (torch.arange(6)[None, :] - torch.arange(6)[:, None]).abs()
        far = torch.log(n.float() / 2) / math.log(4) * 2  # BUCKET_LOG
        if self.reaches_output:
            return x + far.sum()
        large = torch.clamp(2 + far.to(torch.long), max=3)
        buckets = torch.where(n < 2, n, large)
        return x + buckets.float().sum()


class MaskedNan(nn.Module):
    def forward(self, x):
        return torch.where(x > 0, torch.log(x), 0.0)


def test_an_inf_that_never_reaches_the_outputs_is_no_origin():
    """Every healthy T5 showed the red NaN/Inf banner: its log(0) makes -inf, which the cast
    to long and `where` leave behind. An infinity that never reaches an output is no alarm
    (the edges still count it); one that does is, and so is a NaN anywhere."""
    graph = torchscope.trace(PositionBuckets(), torch.randn(3))
    assert graph.nan_origin is None
    [log] = [n for n in graph.nodes if n.name == "log"]
    assert any(e.stats["inf"] > 0 for e in graph.edges if e.src == log.id)
    reaches = torchscope.trace(PositionBuckets(reaches_output=True), torch.randn(3))
    origin = reaches.nodes[reaches.nan_origin]
    assert origin.name == "log" and origin.site.line == _line("BUCKET_LOG")
    # a NaN that a mask drops before the outputs is still the origin (its gradient is not)
    graph = torchscope.trace(MaskedNan(), torch.tensor([-1.0, 2.0]))
    assert graph.nodes[graph.nan_origin].name == "log"


class DyingInfThenNan(nn.Module):
    """A -inf mask made with log (it dies in softmax), then a real NaN later."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        bias = torch.log((torch.arange(4) < 3).float())  # -inf for the last column
        att = torch.softmax(x + bias, -1)
        return torch.sqrt(self.fc(att) - 10)  # LATE_SQRT


class BucketsThenNanWeight(nn.Module):
    """T5's log(0) buckets (an Inf that dies), then a layer whose weight holds NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.buckets = PositionBuckets()
        self.fc = nn.Linear(3, 3)
        with torch.no_grad():
            self.fc.weight[0, 0] = float("nan")

    def forward(self, x):
        return self.fc(self.buckets(x))


def test_an_inf_that_dies_out_is_no_origin_when_a_nan_comes_later():
    """With a NaN in the outputs, the dying infinity before it was named (a -inf mask made
    with log, T5's position buckets): the origin is the op whose non-finite values reach
    the outputs."""
    graph = torchscope.trace(DyingInfThenNan(), torch.randn(2, 4))
    origin = graph.nodes[graph.nan_origin]
    assert origin.name == "sqrt" and origin.site.line == _line("LATE_SQRT")
    graph = torchscope.trace(BucketsThenNanWeight(), torch.randn(3))
    origin = graph.nodes[graph.nan_origin]
    assert origin.name == "linear" and graph.nodes[origin.parent].path == "fc"


class BufferNan(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.tensor([1.0, float("nan"), 1.0, 1.0]))

    def forward(self, x):
        return (x + 1) * self.scale


class InfTemperature(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.temp = nn.Parameter(torch.tensor(float("inf")))

    def forward(self, x):
        return self.fc(x) * self.temp


def test_a_buffer_holding_nan_and_a_parameter_holding_inf_are_the_origin():
    """Non-finite values from the model's own tensors used directly gave no origin and no
    banner: a buffer holding NaN (a -inf buffer is still a mask), a parameter holding Inf
    that reaches the outputs."""
    graph = torchscope.trace(BufferNan(), torch.randn(3, 4))
    origin = graph.nodes[graph.nan_origin]
    assert (origin.kind, origin.name) == ("constant", "scale")
    graph = torchscope.trace(InfTemperature(), torch.randn(2, 4))
    origin = graph.nodes[graph.nan_origin]
    assert (origin.kind, origin.name) == ("constant", "temp")
    assert torchscope.trace(MaskBuffer(), torch.randn(4, 8)).nan_origin is None


def test_finite_model_has_null_nan_origin():
    graph = torchscope.trace(*zoo.build("mlp")[:1], *zoo.build("mlp")[1])
    assert graph.nan_origin is None and graph.values.stats
    assert "nan_origin" in graph.to_wire() and graph.to_wire()["nan_origin"] is None


# -- on and off -------------------------------------------------------------------------


@pytest.mark.parametrize("values, costs", [(False, False), (True, False), (False, True)])
def test_switched_off_means_not_on_the_wire(values, costs):
    model, args, kwargs = zoo.build("gpt2")
    graph = torchscope.trace(model, *args, values=values, costs=costs, **kwargs)
    wire = graph.to_wire()
    assert wire["values"] == {"stats": values, "costs": costs}
    assert all(("stats" in e) == values for e in wire["edges"])
    floats = [e for e in wire["edges"] if e["dtype"].startswith("float") and e["shape"] != [0]]
    assert floats and all(("hist" in e) == values for e in floats)
    assert ("nan_origin" in wire) == values
    modules_and_ops = [n for n in wire["nodes"] if n["kind"] in ("op", "module")]
    assert all(("cost" in n) == costs for n in modules_and_ops)
    assert all(("cost" in g) == costs for g in wire["groups"])
    # the structure is the same either way
    full = torchscope.trace(model, *args, **kwargs)
    assert [(n.kind, n.name, n.parent) for n in graph.nodes] == [
        (n.kind, n.name, n.parent) for n in full.nodes
    ]
    assert [(e.src, e.dst, e.shape) for e in graph.edges] == [
        (e.src, e.dst, e.shape) for e in full.edges
    ]


def test_trace_call_takes_the_switches():
    model, args, kwargs = zoo.build("mlp")
    graph = torchscope.trace_call(model, args, kwargs, values=False, costs=False)
    assert (graph.values.stats, graph.values.costs) == (False, False)


def test_a_forward_with_its_own_values_argument_goes_through_trace_call():
    class Takes(nn.Module):
        def forward(self, x, values):
            return x * values

    x, v = torch.randn(3), torch.randn(3)
    graph = torchscope.trace_call(Takes(), (x,), {"values": v})
    assert [n.name for n in graph.nodes if n.kind == "input"] == ["x", "values"]


def test_malformed_values_are_dropped_not_fatal():
    model, args, kwargs = zoo.build("mlp")
    wire = torchscope.trace(model, *args, **kwargs).to_wire()
    wire["nan_origin"] = 10_000
    wire["nodes"][1]["cost"] = {"flops": "many"}
    wire["edges"][0]["stats"] = [1, 2]
    graph = Graph.from_wire(wire)
    assert graph.nan_origin is None and graph.nodes[1].cost is None
    assert graph.edges[0].stats is None


def test_old_files_without_values_still_read():
    model, args, kwargs = zoo.build("mlp")
    wire = torchscope.trace(model, *args, values=False, costs=False, **kwargs).to_wire()
    del wire["values"]
    graph = Graph.from_wire(wire)
    assert (graph.values.stats, graph.values.costs, graph.nan_origin) == (False, False, None)
    wire = torchscope.trace(model, *args, **kwargs).to_wire()
    back = Graph.from_wire(wire)
    assert back.to_wire() == wire


class FillsUninitialized(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        buf = torch.empty(1000)  # whatever the allocator hands back: often a freed NaN tensor
        buf.copy_(x)
        return buf * 2


def test_uninitialized_memory_is_not_a_nan_origin() -> None:
    x = torch.randn(1000)
    for _ in range(30):  # reuse of freed NaN memory is likely, not certain, on any one call
        junk = torch.full((1000,), float("nan"))
        del junk
        g = torchscope.trace(FillsUninitialized(), x)
        assert g.nan_origin is None, g.nodes[g.nan_origin].name


class GathersIntoABuffer(nn.Module):
    """As FSDP2's all-gather: an empty buffer, a view of it filled, the whole read after."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        buf = torch.empty(8)
        part = buf.narrow(0, 0, 4)  # (FSDP2: this rank's slot, before its shard is copied in)
        part.copy_(x)
        buf.narrow(0, 4, 4).copy_(x * 2)
        return buf + 1


def test_uninitialized_memory_has_no_values() -> None:
    """An empty buffer and views of it before anything wrote it showed the statistics of
    whatever the memory held (FSDP2's all-gather buffers: absmax 1e38, NaN counts; two
    traces of one program then differed): none, until a call writes it."""
    g = torchscope.trace(GathersIntoABuffer(), torch.ones(4))
    by_name = {n.name: n.id for n in g.nodes if n.kind == "op"}
    out_of = {}
    for e in g.edges:
        out_of.setdefault(g.nodes[e.src].name, []).append(e)
    assert all(e.stats is None for e in out_of["empty"])
    first_narrow = min(n.id for n in g.nodes if n.name == "narrow")
    assert all(e.stats is None for e in g.edges if e.src == first_narrow)
    # once written, the buffer's values are read: 1 1 1 1 2 2 2 2, plus one
    [into_add] = [e for e in g.edges if e.dst == by_name["add"] and e.shape == [8]]
    assert into_add.stats is not None and into_add.stats["mean"] == pytest.approx(1.5)
    assert g.nan_origin is None
