"""FLOPs of torch._grouped_mm, the kernel transformers 5 runs mixture-of-experts layers
through (Mixtral, Qwen2-MoE, GPT-OSS, Jamba). torch's flop registry has no formula for it
(FlopCounterMode counts 0); the trace counts its matmuls, checked here against an explicit
loop of matmuls for each of its input layouts, on CPU and on meta."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

import torchscope

G = 3  # groups (experts)


def _bounds(offs: list[int]) -> list[tuple[int, int]]:
    return list(zip([0, *offs[:-1]], offs))


# Each layout: (shape of mat_a, shape of mat_b, offs or None, the same product as a loop of
# plain matmuls over the groups). The loop is the ground truth for both the output and the
# FLOPs (FlopCounterMode counts each matmul 2·m·k·n).
def _loop_2d_3d(a: torch.Tensor, b: torch.Tensor, offs: list[int]) -> torch.Tensor:
    # (T, K) rows grouped by offs × (G, K, N) → (T, N)
    return torch.cat([a[s:e] @ b[g] for g, (s, e) in enumerate(_bounds(offs))])


def _loop_3d_3d(a: torch.Tensor, b: torch.Tensor, offs: None) -> torch.Tensor:
    # (G, M, K) × (G, K, N) → (G, M, N), one matmul a group
    return torch.stack([a[g] @ b[g] for g in range(G)])


def _loop_3d_2d(a: torch.Tensor, b: torch.Tensor, offs: list[int]) -> torch.Tensor:
    # (G, M, K) × (K, N_total) columns grouped by offs → (M, N_total)
    return torch.cat([a[g] @ b[:, s:e] for g, (s, e) in enumerate(_bounds(offs))], dim=1)


def _loop_2d_2d(a: torch.Tensor, b: torch.Tensor, offs: list[int]) -> torch.Tensor:
    # (M, K_total) × (K_total, N), the contraction grouped by offs → (G, M, N)
    return torch.stack([a[:, s:e] @ b[s:e] for s, e in _bounds(offs)])


LAYOUTS: dict[str, tuple[tuple[int, ...], tuple[int, ...], Optional[list[int]], Callable]] = {
    "2d-3d": ((24, 16), (G, 16, 8), [5, 13, 24], _loop_2d_3d),
    "3d-3d": ((G, 8, 16), (G, 16, 8), None, _loop_3d_3d),
    "3d-2d": ((G, 8, 16), (16, 24), [8, 16, 24], _loop_3d_2d),
    "2d-2d": ((8, 24), (24, 16), [5, 16, 24], _loop_2d_2d),
}


class _Grouped(nn.Module):
    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, a: torch.Tensor, b: torch.Tensor, offs: Optional[torch.Tensor]):
        return self.fn(a, b, offs=offs)


def _inputs(layout: str, device: str = "cpu", dtype: torch.dtype = torch.float32) -> Any:
    a_shape, b_shape, offs, loop = LAYOUTS[layout]
    torch.manual_seed(0)
    a = torch.randn(*a_shape).to(device=device, dtype=dtype)
    b = torch.randn(*b_shape).to(device=device, dtype=dtype)
    o = None if offs is None else torch.tensor(offs, dtype=torch.int32, device=device)
    return a, b, o, offs, loop


def _loop_flops(layout: str) -> int:
    a, b, _, offs, loop = _inputs(layout)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        loop(a, b, offs)
    return counter.get_total_flops()


def _op(graph: torchscope.Graph) -> Any:
    [op] = [n for n in graph.nodes if n.kind == "op"]
    return op


@pytest.mark.parametrize("fn", [torch._grouped_mm, F.grouped_mm], ids=["_grouped_mm", "F"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_grouped_mm_counts_the_matmuls_of_its_groups(layout, fn):
    """Each layout counts what the same product as a loop of matmuls counts (2·m·k·n a
    group, summed): 2-D×3-D 2·T·K·N, 3-D×3-D 2·G·M·K·N, 3-D×2-D 2·M·K·N_total, 2-D×2-D
    2·M·K_total·N. (torch's own counter: 0.)"""
    a, b, o, offs, loop = _inputs(layout)
    with torch.no_grad():
        assert torch.allclose(fn(a, b, offs=o), loop(a, b, offs), atol=1e-5)  # (the layout)
    graph = torchscope.trace(_Grouped(fn), a, b, o)
    want = _loop_flops(layout)
    assert _op(graph).cost.flops == graph.module_call("").cost.flops == want > 0


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_grouped_mm_on_meta_counts_as_on_cpu(layout):
    """On meta (where torch's grouped_mm wants bf16) the count comes from the shapes alone,
    as on CPU: offs holds no values to read."""
    a, b, o, _, _ = _inputs(layout, device="meta", dtype=torch.bfloat16)
    graph = torchscope.trace(_Grouped(torch._grouped_mm), a, b, o)
    assert _op(graph).cost.flops == _loop_flops(layout) > 0


# -- a mixture-of-experts model -------------------------------------------------------

TOKENS, TOP_K, HIDDEN, INTERMEDIATE = 8, 2, 64, 128


def _mixtral(device: str = "cpu", **kw: Any) -> Any:
    transformers = pytest.importorskip("transformers")
    config = transformers.MixtralConfig(
        num_hidden_layers=1,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=100,
        num_local_experts=4,
        num_experts_per_tok=TOP_K,
        **kw,
    )
    torch.manual_seed(0)
    with torch.device(device):
        return transformers.MixtralForCausalLM(config).eval()


def _experts(graph: torchscope.Graph) -> Any:
    [experts] = [
        n for n in graph.nodes if n.kind == "module" and n.path == "model.layers.0.mlp.experts"
    ]
    return experts


def test_mixtral_experts_count_as_their_eager_implementation():
    """transformers 5 runs the experts through torch._grouped_mm (two: gate_up, down); they
    counted 0 FLOPs. They count what the eager implementation's loop of F.linear counts:
    every routed token through its experts' matmuls."""
    ids = torch.randint(0, 100, (1, TOKENS), generator=torch.Generator().manual_seed(0))
    model = _mixtral()
    graph = torchscope.trace(model, input_ids=ids)
    experts = _experts(graph)
    ops = [n for n in graph.nodes if n.kind == "op" and n.parent == experts.id]
    grouped = [n for n in ops if "grouped_mm" in n.target]
    assert len(grouped) == 2 and all(n.cost.flops > 0 for n in grouped)

    eager = torchscope.trace(_mixtral(experts_implementation="eager"), input_ids=ids)
    want = TOKENS * TOP_K * (2 * HIDDEN * 2 * INTERMEDIATE + 2 * INTERMEDIATE * HIDDEN)
    assert experts.cost.flops == _experts(eager).cost.flops == want
    assert graph.module_call("").cost.flops == eager.module_call("").cost.flops

    # and a meta-device model (bf16: torch's meta grouped_mm wants it) counts the same
    meta = _mixtral("meta").to(torch.bfloat16)
    on_meta = torchscope.trace(meta, input_ids=ids.to("meta"))
    assert _experts(on_meta).cost.flops == want


# -- torch._scaled_grouped_mm: the FP8 form (CUDA kernels; meta here) -------------------------

F8 = torch.float8_e4m3fn

# (shape of mat_a, of mat_b, offs or None, scale_a's shape, scale_b's shape): the layouts
# torch's meta kernel takes (mat_b column-major; 16-byte aligned rows)
SCALED: dict[str, tuple[tuple[int, ...], tuple[int, ...], Optional[list[int]], tuple, tuple]] = {
    "2d-3d": ((24, 16), (G, 16, 8), [5, 13, 24], (24,), (G, 8)),
    "3d-3d": ((G, 8, 16), (G, 16, 8), None, (G, 8), (G, 8)),
    "3d-2d": ((G, 8, 16), (16, 24), [8, 16, 24], (G, 8), (24,)),
    "2d-2d": ((8, 32), (32, 16), [16, 16, 32], (G * 8,), (G * 16,)),
}


class _ScaledGrouped(nn.Module):
    def forward(self, a, b, scale_a, scale_b, offs):
        return torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16)


@pytest.mark.parametrize("layout", list(SCALED))
def test_scaled_grouped_mm_counts_as_its_plain_form(layout):
    """torch._scaled_grouped_mm (FP8 mixture-of-experts) counted 0 FLOPs: it counts the
    matmuls of its groups, as the same product in float32 through a loop of matmuls does
    (the scales' multiplies free, as the bias's adds)."""
    a_shape, b_shape, offs, sa, sb = SCALED[layout]
    a = torch.empty(*a_shape, device="meta", dtype=F8)
    k, n = b_shape[-2:]
    b = torch.empty(*b_shape[:-2], n, k, device="meta", dtype=F8).transpose(-2, -1)
    o = None if offs is None else torch.tensor(offs, dtype=torch.int32, device="meta")
    scale_a = torch.empty(*sa, device="meta")
    scale_b = torch.empty(*sb, device="meta")
    graph = torchscope.trace(_ScaledGrouped(), a, b, scale_a, scale_b, o)

    loop = {"2d-3d": _loop_2d_3d, "3d-3d": _loop_3d_3d, "3d-2d": _loop_3d_2d}.get(
        layout, _loop_2d_2d
    )
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        loop(torch.randn(*a_shape), torch.randn(*b_shape), offs)
    assert _op(graph).cost.flops == counter.get_total_flops() > 0
