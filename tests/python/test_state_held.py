"""State a model keeps outside its parameters and buffers, which a trace must leave as it
was: plain tensor attributes and tensors in dict attributes written in place, a tensor
outside the model the forward writes (a global), a helper object's attributes, a KV cache
the module holds as an attribute (QA of tracing at a breakpoint: every counter had one
forward more in it after a trace, and the held cache one token more)."""

from __future__ import annotations

import torch
from torch import nn

import torchscope

USAGE = torch.zeros(4)  # a tensor outside the model that its forward writes


class Tracker:
    def __init__(self) -> None:
        self.n = 0
        self.seen: list[int] = []


class Router(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(8, 4)
        self.counts = torch.zeros(4)  # a plain tensor attribute, not a buffer
        self.stats = {"sum": torch.zeros(8)}
        self.tracker = Tracker()

    def forward(self, x):
        probs = self.gate(x).softmax(-1)
        self.counts += torch.bincount(probs.argmax(-1), minlength=4).float()
        self.stats["sum"].add_(x.sum(0))
        self.stats["sum"][:2].mul_(2)  # (a second write, through a view)
        USAGE.add_(probs.sum(0))
        self.tracker.n += 1
        self.tracker.seen.append(self.tracker.n)
        return x * probs.max(-1, keepdim=True).values


def test_tensors_and_objects_the_model_holds_are_put_back():
    router = Router()
    x = torch.randn(5, 8)
    router(x)
    counts, total, usage = router.counts.clone(), router.stats["sum"].clone(), USAGE.clone()
    g = torchscope.trace(router, x)
    assert g.error is None and g.warnings == []
    assert torch.equal(router.counts, counts)
    assert torch.equal(router.stats["sum"], total)
    assert torch.equal(USAGE, usage)
    assert router.tracker.n == 1 and router.tracker.seen == [1]


class Layer:
    """As a KV cache's layer: its tensors rebound, not written in place."""

    def __init__(self) -> None:
        self.keys = torch.zeros(1, 0, 4)


class Cache:
    def __init__(self) -> None:
        self.layers = [Layer()]

    def update(self, k: torch.Tensor) -> torch.Tensor:
        layer = self.layers[0]
        layer.keys = torch.cat([layer.keys, k], dim=1)
        return layer.keys


class Chat(nn.Module):
    """Keeps its own cache between calls (streaming generation)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.past = Cache()

    def forward(self, x):
        return self.past.update(self.proj(x)).sum(1)


def test_a_cache_the_module_holds_keeps_its_length():
    chat = Chat()
    x = torch.randn(1, 1, 4)
    chat(x)
    layer = chat.past.layers[0]
    keys = layer.keys
    torchscope.trace(chat, x)
    assert chat.past.layers[0] is layer and layer.keys is keys and keys.shape[1] == 1


def test_a_real_transformers_cache_held_by_a_module_keeps_its_length():
    from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel

    class Streams(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            config = GPT2Config(vocab_size=50, n_positions=64, n_embd=16, n_layer=1, n_head=2)
            self.lm = GPT2LMHeadModel(config).eval()
            self.past = DynamicCache()

        def forward(self, ids):
            out = self.lm(input_ids=ids, past_key_values=self.past, use_cache=True)
            self.past = out.past_key_values
            return out.logits[:, -1].argmax(-1, keepdim=True)

    model = Streams()
    with torch.no_grad():
        model(torch.tensor([[1, 2, 3]]))
    assert model.past.get_seq_length() == 3
    torchscope.trace(model, torch.tensor([[4]]))
    assert model.past.get_seq_length() == 3
