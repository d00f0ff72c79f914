"""A small MLP: the simplest model torchscope can show."""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, d_in: int = 64, d_hidden: int = 128, d_out: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(d_hidden, d_out)
        self.example_input_array = torch.randn(2, d_in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.drop(self.act(self.fc1(x)))
        return self.fc2(h).softmax(dim=-1)


if __name__ == "__main__":
    print(MLP()(torch.randn(2, 64)).shape)
