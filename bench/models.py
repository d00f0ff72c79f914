"""Model factories for the benchmark.

Every factory returns a `Built`: the model (eval mode, random weights, never downloaded),
the positional and keyword inputs, and a few facts for the report. transformers models are
built from their configs; torchvision is never used.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


@dataclass
class Built:
    model: nn.Module
    args: tuple
    kwargs: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"
    threads: int | None = None  # torch.set_num_threads before anything runs
    build_s: float = 0.0
    note: str = ""


@dataclass(frozen=True)
class Spec:
    name: str
    title: str
    factory: Callable[[], Built]
    meta: bool = False
    threads: int | None = None


def _seed() -> None:
    torch.manual_seed(0)


def gpt2() -> Built:
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=12)).eval()
    ids = torch.randint(0, 50257, (1, 64))
    return Built(model, (ids,), note="GPT2LMHeadModel, 12 layers, 1x64 tokens")


def bert_base() -> Built:
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig()).eval()
    ids = torch.randint(0, 30522, (1, 128))
    return Built(model, (ids,), note="BertModel (base config), 1x128 tokens")


def vit_base() -> Built:
    from transformers import ViTConfig, ViTModel

    model = ViTModel(ViTConfig(), add_pooling_layer=True).eval()
    return Built(
        model, (torch.randn(1, 3, 224, 224),), note="ViTModel (base/16 config), 1x3x224x224"
    )


def resnet50() -> Built:
    from transformers import ResNetConfig, ResNetModel

    model = ResNetModel(ResNetConfig()).eval()  # defaults are ResNet-50 (bottleneck, 3-4-6-3)
    return Built(
        model, (torch.randn(1, 3, 224, 224),), note="ResNetModel (default = ResNet-50), 1x3x224x224"
    )


class ResidualBlock(nn.Module):
    def __init__(self, dim: int = 64) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.norm(self.fc(x)))


def blocks2000() -> Built:
    model = nn.Sequential(*[ResidualBlock(64) for _ in range(2000)]).eval()
    return Built(
        model,
        (torch.randn(1, 64, 64),),
        threads=1,
        note="nn.Sequential of 2,000 x (Linear(64,64), LayerNorm, GELU, residual add); "
        "8,000 ops; 1 thread",
    )


LLAMA_70B = dict(
    num_hidden_layers=80,
    hidden_size=8192,
    intermediate_size=28672,
    num_attention_heads=64,
    num_key_value_heads=8,
    vocab_size=128256,
    max_position_embeddings=8192,
    rope_theta=500000.0,
)


def llama70b_meta() -> Built:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**LLAMA_70B)
    with torch.device("meta"):
        model = LlamaForCausalLM(config).eval()
        ids = torch.randint(0, LLAMA_70B["vocab_size"], (1, 64))
    return Built(
        model,
        (ids,),
        device="meta",
        note="LlamaForCausalLM, Llama-3-70B config (80 layers, hidden 8192), meta device, "
        "1x64 tokens",
    )


MODELS: dict[str, Spec] = {
    s.name: s
    for s in [
        Spec("gpt2", "GPT-2 (12 layers, 64 tokens)", gpt2),
        Spec("bert-base", "BERT-base (128 tokens)", bert_base),
        Spec("vit-base", "ViT-base (224x224)", vit_base),
        Spec("resnet50", "ResNet-50 (224x224)", resnet50),
        Spec("blocks2000", "2,000 residual blocks (1 thread)", blocks2000, threads=1),
        Spec("llama3-70b-meta", "Llama-3-70B on meta", llama70b_meta, meta=True),
    ]
}


# One intra-op thread for every model, not only the 2,000-block one: on this 2-core machine,
# shared with other builds, two threads spin at OpenMP barriers whenever the other core is
# busy, and a GPT-2 forward then swings between 0.15 s and 2 s (one thread: 0.25-0.45 s).
THREADS = int(os.environ.get("BENCH_THREADS", "1"))


def build(name: str) -> Built:
    spec = MODELS[name]
    torch.set_num_threads(spec.threads or THREADS)
    _seed()
    t0 = time.perf_counter()
    built = spec.factory()
    built.build_s = time.perf_counter() - t0
    built.threads = torch.get_num_threads()
    return built
