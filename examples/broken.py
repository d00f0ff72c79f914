"""A model whose forward raises: torchscope still shows the graph up to the failing call."""

import torch
from torch import nn


class Broken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.head = nn.Linear(64, 4)  # wrong: the encoder gives 32 features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(x)
        return self.head(h)


example_input = torch.randn(2, 16)
model = Broken()
model.example_input_array = example_input
