"""A forward that takes several tensors of different shapes: the first layer's guess for each
does not fit (a plain forward with it raises), so Visualize `CrossAttention` asks for the
inputs, starting you off with that tuple; or trace `build`, which gives them."""

import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, context: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q = self.q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k, v = self.kv(context).chunk(2, dim=-1)
        k = k.view(b, -1, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, -1, self.heads, d // self.heads).transpose(1, 2)
        h = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out(h.transpose(1, 2).reshape(b, n, d))


def build():
    """The model and its inputs: a query sequence, a context and a mask."""
    x, context = torch.randn(2, 10, 32), torch.randn(2, 16, 32)
    mask = torch.ones(10, 16, dtype=torch.bool)
    return CrossAttention(), (x, context, mask)
