"""Small distributed training programs for tests/python/test_distributed.py, one builder per way
of spreading a model over ranks. Each builder joins the process group torchrun describes (gloo,
CPU) and returns `(model, example_input)`, so it is also a `python -m torchscope trace` target.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from torch import nn


class MLP(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.up = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.up(x)))


class Net(nn.Module):
    def __init__(self, width: int = 16, blocks: int = 2) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(width)  # buffers: DDP broadcasts them at each forward
        self.blocks = nn.ModuleList(MLP(width) for _ in range(blocks))
        self.head = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(x)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def _join() -> int:
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    torch.manual_seed(0)  # the same weights on every rank
    return dist.get_rank()


def _input(rank: int) -> torch.Tensor:
    return torch.randn(4, 16, generator=torch.Generator().manual_seed(100 + rank))


def ddp():
    rank = _join()
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(Net()), _input(rank)


def fsdp2():
    rank = _join()
    from torch.distributed.fsdp import fully_shard

    model = Net()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    return model, _input(rank)


def tensor_parallel():
    _join()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    mesh = init_device_mesh("cpu", (int(os.environ["WORLD_SIZE"]),), mesh_dim_names=("tp",))
    model = MLP()
    parallelize_module(model, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
    return model, _input(0)  # tensor parallel: every rank sees the same batch


def compiled():
    rank = _join()
    from torch.nn.parallel import DistributedDataParallel

    model = torch.compile(DistributedDataParallel(Net()), backend="aot_eager")
    return model, _input(rank)


def fsdp1():
    rank = _join()
    from torch.distributed.fsdp import FullyShardedDataParallel

    model = Net()
    for i, block in enumerate(model.blocks):
        model.blocks[i] = FullyShardedDataParallel(block, device_id=torch.device("cpu"))
    return FullyShardedDataParallel(model, device_id=torch.device("cpu")), _input(rank)


class Explicit(nn.Module):
    """Collectives written in the forward: an async all_reduce and its wait, and a functional
    all-gather whose result is waited for where it is used."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import torch.distributed._functional_collectives as funcol

        h = self.a(x)
        work = dist.all_reduce(h, async_op=True)
        work.wait()
        gathered = funcol.all_gather_tensor(self.b(h), gather_dim=0, group=dist.group.WORLD)
        return gathered * 2


def explicit():
    rank = _join()
    return Explicit(), _input(rank)


class PointToPoint(nn.Module):
    """Point-to-point calls in the forward, as a pipeline or ring attention makes them: a
    blocking send/recv pair (in opposite orders on the two ranks), a ring of isend/irecv, and
    a reduce to rank 0 written in place."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        rank, other = dist.get_rank(), 1 - dist.get_rank()
        got = torch.empty_like(h)
        if rank == 0:
            dist.send(h, other)
            dist.recv(got, other)
        else:
            dist.recv(got, other)
            dist.send(h, other)
        ring = torch.empty_like(h)
        sent, received = dist.isend(h, other), dist.irecv(ring, other)
        sent.wait()
        received.wait()
        total = h.clone()
        dist.reduce(total, dst=0)
        return got + ring + total * 2


def point_to_point():
    import datetime

    # (a short timeout: a rank stuck in a send fails the test in seconds, not half an hour)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
    rank = _join()
    return PointToPoint(), _input(rank)


class Gated(nn.Module):
    """A sharded weight used directly (`h * self.gate`), holding a NaN in rank 0's shard, beside
    a replicated one without: as tensor parallel leaves a model's own parameters."""

    def __init__(self, mesh: object) -> None:
        super().__init__()
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor

        gate = torch.arange(8.0)
        gate[1] = float("nan")  # rank 0's half: elements 0-3
        self.gate = nn.Parameter(distribute_tensor(gate, mesh, [Shard(0)]))
        self.scale = nn.Parameter(distribute_tensor(torch.ones(8), mesh, [Replicate()]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 2) * self.gate * self.scale


def dtensor_weight_nan():
    _join()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (int(os.environ["WORLD_SIZE"]),))
    return Gated(mesh), distribute_tensor(torch.ones(3, 8), mesh, [Shard(1)])


def fsdp2_weight_nan():
    """FSDP2 over an MLP whose first weight holds a NaN in rank 1's shard (its rows 32-63)."""
    rank = _join()
    from torch.distributed.fsdp import fully_shard

    model = MLP()
    with torch.no_grad():
        model.up.weight[40, 3] = float("nan")
    fully_shard(model.up)
    fully_shard(model)
    return model, _input(rank)
