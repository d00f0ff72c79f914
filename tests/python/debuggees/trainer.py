"""Debuggee: a training loop in a plain Trainer class (not a module) that holds the model as
`self.model`; `deep`, a model of thousands of small blocks (never run by the program)
whose graph is well over 20 MB; and `spin`, a model whose forward loops in Python without
a torch call (never run by the program). The program has its own SIGALRM handler."""

import random
import signal
import sys

import torch
from torch import nn

torch.manual_seed(0)
random.seed(0)
BLOCKS = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
REPEAT = int(sys.argv[2]) if len(sys.argv) > 2 else 12


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 512)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(512, 64)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        for _ in range(REPEAT):
            h = torch.tanh(h) * 0.5 + x
        return h


class Deep(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


class Spin(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0

    def forward(self, x):
        h = self.lin(x)
        self.calls += 1
        n = 0
        while n >= 0:  # a runaway loop, no torch call in it
            n += 1
        return h


def on_alarm(signum, frame):
    print("the program's own alarm")


class Trainer:
    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01)
        self.history = []

    def batch(self, step: int):
        g = torch.Generator().manual_seed(step)
        return torch.randn(8, 64, generator=g), torch.randn(8, 64, generator=g)

    def fit(self, steps: int) -> None:
        for step in range(steps):
            inputs, target = self.batch(step)
            out = self.model(inputs)  # BREAK: step
            loss = ((out - target) ** 2).mean()
            loss.backward()
            self.opt.step()
            self.opt.zero_grad()
            self.history.append(loss.item())
            print("step", step, f"{loss.item():.6f}")


signal.signal(signal.SIGALRM, on_alarm)
deep = Deep(BLOCKS)
spin = Spin()
trainer = Trainer(MLP())
trainer.fit(2)
print("rng", f"{torch.rand(1).item():.6f}", f"{random.random():.6f}")
print("done")  # BREAK: end
