"""Debuggee: a model in train mode (Dropout draws from the RNG, BatchNorm updates its running
stats, the forward writes into its input tensor and into a list argument) called twice; a
breakpoint in the nested block's forward after it rebinds `x`."""

import random

import torch
from torch import nn

torch.manual_seed(0)
random.seed(0)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 16)
        self.norm = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(16, 8)

    def forward(self, x):
        print("block forward", tuple(x.shape))
        x = self.proj(x)
        x = self.norm(x)  # BREAK: block
        return self.out(self.drop(torch.relu(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.block = Block()
        self.head = nn.Linear(8, 2)

    def forward(self, x, log):
        x.add_(1.0)  # writes into its input: a trace must not do it again
        log.append(tuple(x.shape))  # and into a list it was given
        return self.head(self.block(self.inp(x)))


class Broken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        h = torch.relu(self.lin(x))
        return h @ torch.ones(4, 4)  # shapes do not match: raises


model = Net()
broken = Broken()
log = []
x1, x2 = torch.randn(4, 4), torch.randn(4, 4)
y = model(x1, log)
print("first", f"{y.sum().item():.6f}")
y = model(x2, log=log)
print("second", f"{y.sum().item():.6f}")
print("after")  # BREAK: after
print("inputs", f"{x1.sum().item():.6f}", f"{x2.sum().item():.6f}", "log", log)
print("running_mean", f"{model.block.norm.running_mean.sum().item():.6f}")
print("training", model.training, model.block.norm.training)
print("rng", f"{torch.rand(1).item():.6f}", f"{random.random():.6f}")
print(
    "hooks", len(model._forward_pre_hooks), len(torch.nn.modules.module._global_forward_pre_hooks)
)
