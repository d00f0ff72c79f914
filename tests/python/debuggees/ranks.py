"""Debuggee: one rank of a 2-rank FSDP2 program (torchrun, gloo, CPU) with debugpy in it. Rank 0
listens on DEBUG_PORT and waits for the test to attach; both ranks run a forward, then rank 0
stops at the breakpoint while rank 1 goes on into the next forward and waits there in its
first all-gather for rank 0. Each rank writes its outputs to OUT/rankR.json."""

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "distributed"))
from ending import end_program  # noqa: E402

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank == 0 and os.environ.get("DEBUG_PORT"):
    import debugpy

    debugpy.listen(("127.0.0.1", int(os.environ["DEBUG_PORT"])))
    debugpy.wait_for_client()


class Relay(nn.Module):
    """Never run by the program: its forward sends to the next rank (point-to-point)."""

    def forward(self, t):
        dist.send(t, (rank + 1) % dist.get_world_size())
        return t


relay = Relay()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8))
for layer in (model[0], model[2]):
    fully_shard(layer)
fully_shard(model)
x = torch.randn(4, 8, generator=torch.Generator().manual_seed(rank))
outputs = [model(x).sum().item()]
paused_here = True  # BREAK: paused
outputs.append(model(x).sum().item())
model(x).sum().backward()
outputs.append(model[0].weight.grad.to_local().sum().item())
with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as f:
    json.dump(outputs, f)
end_program()
