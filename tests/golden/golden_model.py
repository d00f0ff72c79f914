"""The model behind the golden graph file that the Python and the viewer tests decode."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.fc(x))


class GoldenMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.skip = nn.Identity()
        self.gate = nn.Parameter(torch.ones(8))
        self.out = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.skip(self.blocks(self.inp(x)))
        h = h * self.gate
        return {"logits": self.out(h), "hidden": h.mean(dim=-1, keepdim=True)}


def make_graph():
    import torchscope

    torch.manual_seed(0)
    return torchscope.trace(GoldenMLP(), torch.randn(3, 4))
