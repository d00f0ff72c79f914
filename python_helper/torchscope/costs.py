"""What a forward costs: FLOPs counted as `torch.utils.flop_counter` counts them, the bytes
each call outputs, and sums of both into enclosing module calls and ×N groups.

FLOPs come from torch's own `flop_registry` (a multiply-add is 2 FLOPs), so they equal
`FlopCounterMode`'s, on real tensors and on the meta device alike. Three exceptions, kernels
the registry lacks (torch counts them 0): an LSTM layer on CPU (one oneDNN kernel), counted
as its matmuls, as on meta (`_rnn_layer_flops`); scaled_dot_product_attention's CPU kernel,
counted with the registry's attention formula, as on meta; and `torch._grouped_mm`, the
mixture-of-experts kernel, and its FP8 form `_scaled_grouped_mm`, on every device, counted
as its groups' matmuls (`grouped_mm_flops`). A Python dispatch mode costs tens of µs per
aten op, so the tracer routes each torch call one of four ways (`route`): calls that can't
reach a matmul, convolution or attention kernel run as they are (0 FLOPs); `F.linear`, the
most frequent call there is, gets the registry's mm formula from its shapes; so do `addmm` and
`mm` of two plain matrices (GPT-2's Conv1D); every other call runs under `FlopCounter`, a
dispatch mode that looks each aten op up in the registry.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Optional

import torch
from torch._ops import HigherOrderOperator
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from .distributed import inner_tensor
from .graph import Node

_ns = time.perf_counter_ns

_CIA = torch._C.DispatchKey.CompositeImplicitAutograd
# the registry's mm formula on plain shapes (its registered form maps a pytree per call)
_MM = getattr(flop_registry[torch.ops.aten.mm], "__wrapped__", flop_registry[torch.ops.aten.mm])
_PLAIN = (torch.Tensor, torch.nn.Parameter)
# an LSTM layer on CPU: one fused kernel, not in the registry (see _rnn_layer_flops)
_MKLDNN_RNN_LAYER = getattr(torch.ops.aten, "mkldnn_rnn_layer", None)
# attention on CPU: a fused kernel the registry lacks, with the flash kernel's arguments
# (query, key, value first): counted with that kernel's formula, as on meta and on GPUs
_SDPA_FOR_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_SDPA_FORMULA = flop_registry.get(torch.ops.aten._scaled_dot_product_flash_attention)
# mixture-of-experts layers (transformers 5: Mixtral, Qwen2-MoE, GPT-OSS …) on every device:
# a matmul per group, not in the registry (see grouped_mm_flops)
_GROUPED_MM = getattr(torch.ops.aten, "_grouped_mm", None)
# its FP8 form (scales per row or column), counted from the same two shapes
_SCALED_GROUPED_MM = getattr(torch.ops.aten, "_scaled_grouped_mm", None)

# How a call is counted (see the module docstring).
FREE, LINEAR, COUNTED, MATMUL = 0, 1, 2, 3

# Short names of torch functions and Tensor methods (in-place `_` and dunder forms
# included) that never reach an op of the flop registry: elementwise math, activations,
# normalisations, reductions, indexing, views and copies, factories, pooling.
_FREE_NAMES = frozenset(
    """
    add sub subtract rsub mul multiply div divide true_divide floor_divide remainder fmod
    neg negative abs absolute pow float_power sqrt rsqrt square exp exp2 expm1 log log2 log10
    log1p sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh sigmoid logit erf
    erfc erfinv reciprocal sign sgn clamp clamp_min clamp_max clip maximum minimum fmax fmin
    where masked_fill lerp addcmul addcdiv round floor ceil trunc frac nan_to_num isnan isinf
    isfinite isclose logical_and logical_or logical_not logical_xor bitwise_and bitwise_or
    bitwise_not bitwise_xor and or xor invert lshift rshift eq ne lt le gt ge radd rsub rmul
    rtruediv rdiv rpow truediv floordiv mod iadd isub imul itruediv ifloordiv imod ipow iand
    ior ixor relu relu6 gelu silu mish hardswish hardsigmoid elu selu celu leaky_relu
    softplus softsign threshold glu logsigmoid hardtanh tanhshrink softshrink hardshrink rrelu
    layer_norm group_norm batch_norm instance_norm rms_norm local_response_norm normalize
    softmax log_softmax softmin dropout dropout1d dropout2d dropout3d alpha_dropout
    feature_alpha_dropout sum nansum mean nanmean amax amin max min aminmax argmax argmin prod
    std var var_mean std_mean logsumexp cumsum cumprod cummax cummin all any count_nonzero
    median nanmedian mode topk sort argsort msort unique view view_as reshape reshape_as
    permute transpose t T mT H mH adjoint contiguous flatten unflatten ravel squeeze unsqueeze
    expand expand_as broadcast_to repeat repeat_interleave tile split split_with_sizes
    tensor_split chunk unbind narrow select index_select gather scatter scatter_add
    scatter_reduce index_add index_copy index_fill index_put masked_select masked_scatter
    take take_along_dim getitem setitem cat concat concatenate stack hstack vstack dstack flip
    fliplr flipud roll rot90 movedim moveaxis swapaxes swapdims diagonal diag_embed triu tril
    pad interpolate upsample pixel_shuffle pixel_unshuffle one_hot embedding embedding_bag
    arange zeros ones full empty zeros_like ones_like full_like empty_like rand randn randint
    rand_like randn_like randint_like randperm normal bernoulli multinomial tensor as_tensor
    linspace logspace eye clone detach to type type_as float half double bfloat16 int long
    short bool byte char cpu cuda new_zeros new_ones new_full new_empty new_tensor fill zero
    copy masked_fill avg_pool1d avg_pool2d avg_pool3d max_pool1d max_pool2d max_pool3d
    adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d
    adaptive_max_pool2d adaptive_max_pool3d max_pool1d_with_indices max_pool2d_with_indices
    contiguous_ data numpy item tolist requires_grad_ retain_grad
    """.split()
)


# torch.addmm(input, mat1, mat2) and torch.mm(input, mat2), as functions and methods:
# where their two matrices start among the positional arguments
_MATMULS = {"torch.addmm": 1, "Tensor.addmm": 1, "torch.mm": 0, "Tensor.mm": 0}


def route(target: str, name: str) -> int:
    """How the tracer counts a call with this target (FuncInfo.target) and short name."""
    if target == "torch.nn.functional.linear" or target == "torch._C._nn.linear":
        return LINEAR
    if target in _MATMULS:
        return MATMUL
    if target.startswith("torch.ops."):  # custom and aten ops: anything may run inside
        return COUNTED
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    return FREE if base.strip("_") in _FREE_NAMES else COUNTED


def linear_flops(args: tuple[Any, ...], kwargs: Optional[dict[str, Any]]) -> Optional[int]:
    """F.linear(input, weight, bias) as the registry counts it (one mm of the flattened
    input by the weight; the bias add is free); None when the arguments are unusual."""
    x = args[0] if args else (kwargs or {}).get("input")
    w = args[1] if len(args) > 1 else (kwargs or {}).get("weight")
    if not (isinstance(x, _PLAIN) and isinstance(w, _PLAIN)):
        return None
    if type(x) not in _PLAIN or type(w) not in _PLAIN or w.dim() != 2:  # subclasses: own rules
        return None
    if x.is_nested:  # (rows of other lengths: it has no one shape)
        return None
    n_out, k = w.shape
    if x.dim() == 0 or x.shape[-1] != k:
        return None
    rows = x.numel() // k if k else 0
    return _mm_flops(rows, k, n_out)


def matmul_flops(
    target: str, args: tuple[Any, ...], kwargs: Optional[dict[str, Any]]
) -> Optional[int]:
    """A MATMUL-routed call (`_MATMULS`) of two plain 2-D matrices as the registry counts it
    (one mm; addmm's added input is free); None for anything else: keyword arguments,
    subclasses, other shapes (the call runs under the counter)."""
    first = _MATMULS.get(target)
    if first is None or kwargs or len(args) != first + 2:
        return None
    if any(type(a) not in _PLAIN for a in args):  # (subclasses: their own rules)
        return None
    a, b = args[first], args[first + 1]
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        return None
    m, k = a.shape
    return _mm_flops(m, k, b.shape[1])


def _mm_flops(m: int, k: int, n: int) -> int:
    """An (m × k) by (k × n) matrix product as the registry counts it."""
    return int(_MM((m, k), (k, n), out_shape=(m, n)))


class FlopCounter(TorchDispatchMode):
    """Adds the registry's FLOPs of every aten op that runs while it is entered to `flops`."""

    # As FlopCounterMode: higher-order ops run as if the mode were not there.
    supports_higher_order_operators = True

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # else torch wraps __torch_dispatch__ in torch._dynamo.disable: importing dynamo
        # costs seconds on the first op, and the wrapper a little on every aten op
        return False

    def __init__(self) -> None:
        super().__init__()
        self.flops = 0
        # ns spent in the aten ops it ran: a call's time without this mode's own (a Python
        # dispatch per aten op costs far more than a small matmul)
        self.ns = 0
        self._decomposes: dict[Any, bool] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        try:
            return self._count(func, args, kwargs or {})
        except Exception as exc:
            # a failing op's traceback ends in the user's code, as without the counter: drop
            # the frames of this mode and of torch's op call that it added
            exc.__traceback__ = None
            raise

    def _count(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        if isinstance(func, HigherOrderOperator):
            # torch.cond, while_loop …: run as if the counter were not there (torch took it
            # off the stack for this call); NotImplemented would fail the call, as torch's
            # own counter does for every such op but cond
            return self._run(func, args, kwargs)
        packet = func._overloadpacket
        formula = flop_registry.get(packet)
        if formula is None and packet is _SDPA_FOR_CPU:
            formula = _SDPA_FORMULA
        if formula is None and (packet is _GROUPED_MM or packet is _SCALED_GROUPED_MM):
            formula = grouped_mm_flops
        if formula is None and packet is _MKLDNN_RNN_LAYER:
            out = self._run(func, args, kwargs)
            self.flops += _rnn_layer_flops(args)
            return out
        if formula is None:
            # FlopCounterMode runs an op it has no formula for through its composite
            # decomposition, under the mode, so the matmuls inside are counted (and timed)
            if self._decomposable(func):
                with self:
                    out = func.decompose(*args, **kwargs)
                if out is not NotImplemented:
                    return out
            return self._run(func, args, kwargs)
        out = self._run(func, args, kwargs)
        try:
            self.flops += int(formula(*args, **kwargs, out_val=out))
        except Exception:  # (shapes the formula can't read, a nested tensor's: not counted)
            pass
        return out

    def _run(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        start = _ns()
        try:
            return func(*args, **kwargs)
        finally:
            self.ns += _ns() - start

    def _decomposable(self, func: Any) -> bool:
        known = self._decomposes.get(func)
        if known is None:
            known = self._decomposes[func] = _CIA in func.py_kernels or bool(
                torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _CIA)
            )
        return known


def _rnn_layer_flops(args: Any) -> int:
    """One LSTM layer run as one oneDNN kernel on CPU (`mkldnn_rnn_layer(input, w_ih, w_hh,
    …)`), counted as the matmuls its decomposition runs on meta: every time step's input and
    hidden state times the gate weights (2 FLOPs a multiply-add; the biases' adds free)."""
    x, w_ih, w_hh = args[0], args[1], args[2]
    steps = x.numel() // x.shape[-1] if x.dim() and x.shape[-1] else 0
    return 2 * steps * (w_ih.numel() + w_hh.numel())


def grouped_mm_flops(mat_a: Any, mat_b: Any, *args: Any, **kwargs: Any) -> int:
    """`aten._grouped_mm(mat_a, mat_b, offs=None, bias=None, out_dtype=None)` (and its FP8
    form `_scaled_grouped_mm(mat_a, mat_b, scale_a, scale_b, offs=None, …)`): one matmul a
    group, summed (2 FLOPs a multiply-add; the bias's adds and the scales' multiplies free),
    for each of its layouts:
    - (T, K) × (G, K, N), `offs` grouping the rows (experts' tokens): 2·T·K·N;
    - (G, M, K) × (G, K, N), no `offs` (a batched mm): 2·G·M·K·N;
    - (G, M, K) × (K, N), `offs` grouping the columns: 2·M·K·N;
    - (M, K) × (K, N), `offs` grouping the contraction (a weight gradient): 2·M·K·N.
    From the shapes alone, as the registry's formulas and on meta (`offs` is not read: rows
    or columns past `offs[-1]`, which the kernel skips, are counted too)."""
    a, b = tuple(mat_a.shape), tuple(mat_b.shape)
    if len(a) == 3 and len(b) == 3:
        return a[0] * _mm_flops(a[1], a[2], b[2])
    if len(a) == 2 and len(b) == 3:
        return _mm_flops(a[0], a[1], b[2])
    if len(a) == 3 and len(b) == 2:
        return _mm_flops(a[1], a[2], b[1])
    if len(a) == 2 and len(b) == 2:
        return _mm_flops(a[0], a[1], b[1])
    return 0


def output_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the tensors a call outputs (numel × element size; a view counts its own; a
    DTensor its local shard's, this rank's, as its edge shows)."""
    total = 0
    for t in tensors:
        try:
            if type(t) is not torch.Tensor:
                inner = inner_tensor(t)
                t = inner if inner is not None else t
            total += int(t.numel()) * t.element_size()
        except Exception:  # symbolic sizes
            pass
    return total


def roll_up(nodes: list[Node]) -> None:
    """Add every node's FLOPs and bytes into its enclosing module calls (inclusive sums).

    Children come after their parent, so one pass from the end reaches every parent after
    all of its descendants."""
    for n in reversed(nodes):
        cost = n.cost
        if cost is None or n.parent is None:
            continue
        parent = nodes[n.parent].cost
        if parent is not None:
            parent.flops += cost.flops
            parent.bytes += cost.bytes
