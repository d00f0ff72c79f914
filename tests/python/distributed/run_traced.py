"""One rank of a test program (tests/python/test_distributed.py): build a model as models.py
does, run its forward, trace it with torchscope, run the forward again and a training step, and
write what happened to OUT/rankR.json (the graph to OUT/rankR.msgpack; for some programs rank 0
also traces alone, with its collectives done locally, to OUT/alone.msgpack).

Usage: torchrun --nproc_per_node 2 run_traced.py BUILDER OUT [--no-trace]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import models
import torch
import torch.distributed as dist
from ending import end_program

builder, out = sys.argv[1], Path(sys.argv[2])
traced = "--no-trace" not in sys.argv
model, x = getattr(models, builder)()
rank = dist.get_rank()


def full(t: torch.Tensor) -> list:
    full_tensor = getattr(t, "full_tensor", None)  # a DTensor: gathered on every rank
    return (full_tensor() if full_tensor else t).detach().reshape(-1).tolist()


def compiles() -> int:
    from torch._dynamo.utils import counters

    return sum(counters["stats"].values()) if builder == "compiled" else 0


before = model(x)
compiles_before = compiles()
result: dict = {"rank": rank, "before": full(before)}
if traced:
    import torchscope

    graph = torchscope.trace(model, x)
    (out / f"rank{rank}.msgpack").write_bytes(graph.to_msgpack())
    result["warnings"] = graph.warnings
    if rank == 0 and builder in ("tensor_parallel", "explicit"):
        # as at a breakpoint: rank 0 traces alone while rank 1 goes on to its next forward
        # and waits there in a collective; the trace must send it nothing
        alone = torchscope.trace_call(model, (x,), local_collectives=True)
        (out / "alone.msgpack").write_bytes(alone.to_msgpack())
after = model(x)
result["after"] = full(after)
result["compiles_added"] = compiles() - compiles_before
# a training step after the trace: its loss says the model's state is the program's own
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(x).sum().backward()
opt.step()
result["stepped"] = full(model(x))
(out / f"rank{rank}.json").write_text(json.dumps(result))
end_program()
