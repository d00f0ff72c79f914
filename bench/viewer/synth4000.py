"""4,000 ops: 40 stages x 25 blocks (Linear, LayerNorm, GELU, add), the viewer benchmarks'
synthetic model. Plain torch only: bench/vscode_panel.ts copies this file into code-server's
workspace, bench/viewer/make_pages.py imports it."""

import torch
from torch import nn


class Block(nn.Module):
    """Linear, LayerNorm, GELU and a residual add: 4 ops."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.norm(self.fc(x)))


class Stage(nn.Module):
    """25 blocks; 40 stages make 1,000 blocks, 4,000 ops, two module levels above the ops."""

    def __init__(self, n: int = 25, dim: int = 32) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def make_synth4000() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(*[Stage() for _ in range(40)]).eval()
    return model, torch.randn(1, 8, 32)
