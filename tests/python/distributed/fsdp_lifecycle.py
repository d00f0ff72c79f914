"""One rank of a test program (tests/python/test_distributed.py): an FSDP2 model traced at a
point of its life where FSDP's own state is not the usual "sharded, lazily initialised":
before its first forward (through the root, or through one `fully_shard` block), and between the
micro-batches of gradient accumulation (its parameters left unsharded after a backward).
Writes OUT/rankR.json.

Usage: torchrun --nproc_per_node 2 fsdp_lifecycle.py block-first|model-first|accumulating OUT
       [--no-trace]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from ending import end_program
from torch import nn
from torch.distributed.fsdp import fully_shard

when, out = sys.argv[1], Path(sys.argv[2])
traced = "--no-trace" not in sys.argv
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self, w: int = 16) -> None:
        super().__init__()
        self.up = nn.Linear(w, 4 * w)
        self.down = nn.Linear(4 * w, w)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(MLP() for _ in range(2))
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        for b in self.blocks:
            x = x + b(x)
        return self.head(x)


model = Net()
for b in model.blocks:
    fully_shard(b)
fully_shard(model)
x = torch.randn(4, 16, generator=torch.Generator().manual_seed(rank))
result: dict = {"rank": rank, "warnings": []}


def weight() -> dict:
    w = model.blocks[0].up.weight
    local = w.to_local() if hasattr(w, "to_local") else w
    return {"type": type(w).__name__, "sum": float(local.detach().sum())}


def trace(module: nn.Module) -> None:
    if traced:
        import torchscope

        result["warnings"] = torchscope.trace(module, x).warnings


if when == "block-first":
    trace(model.blocks[0])  # one block looked at before the program's first forward
elif when == "model-first":
    trace(model)  # the model looked at before the program's first forward
else:  # accumulating: micro-batch 1 leaves the parameters unsharded, without a gradient sync
    model(x)
    model.set_reshard_after_backward(False)
    model.set_requires_gradient_sync(False)
    model(x).pow(2).mean().backward()
    model.set_requires_gradient_sync(True)
    result["before"] = weight()
    trace(model)
    result["after"] = weight()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for _ in range(2):
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    losses.append(float(loss))
result["losses"] = losses
with torch.no_grad():
    model(x)  # (the root keeps its parameters gathered after a forward)
# the state dict as FSDP gives it: its shards, even of the gathered root (FSDP's own hooks,
# registered at the first forward, reshard first)
result["state_dict"] = sorted(type(v).__name__ for v in model.state_dict().values())
(out / f"rank{rank}.json").write_text(json.dumps(result))
end_program()
