"""torch.distributed as a trace sees it: this process's rank, a DTensor's layout, and the plain
tensor inside a distributed wrapper tensor.

Nothing here imports torch.distributed's heavier parts: a DTensor or an async collective
tensor can only exist once the program imported their modules, so they are looked up in
`sys.modules`.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import torch

from .graph import Layout

Tensor = torch.Tensor


def rank_and_size() -> Optional[tuple[int, int]]:
    """`(rank, world_size)` of the default process group, when torch.distributed is
    initialised in this process; else None."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:  # a process group being torn down
        return None


def dtensor_class() -> Optional[type]:
    api = sys.modules.get("torch.distributed.tensor._api")
    cls = getattr(api, "DTensor", None)
    return cls if isinstance(cls, type) else None


def _async_collective_class() -> Optional[type]:
    funcol = sys.modules.get("torch.distributed._functional_collectives")
    cls = getattr(funcol, "AsyncCollectiveTensor", None)
    return cls if isinstance(cls, type) else None


def inner_tensor(t: Tensor) -> Optional[Tensor]:
    """The plain tensor a distributed wrapper stands for: a DTensor's local shard, an async
    collective's result before its wait. None for any other tensor."""
    if type(t) is Tensor:
        return None
    dtensor = dtensor_class()
    if dtensor is not None and isinstance(t, dtensor):
        return t._local_tensor  # type: ignore[attr-defined]
    acs = _async_collective_class()
    if acs is not None and isinstance(t, acs):
        return t.elem  # type: ignore[attr-defined]
    return None


def layout_of(t: Tensor) -> Optional[tuple[list[int], Layout]]:
    """`(local shape, layout)` of a DTensor; None for any other tensor."""
    if type(t) is Tensor or type(t) is torch.nn.Parameter:
        return None
    dtensor = dtensor_class()
    if dtensor is None or not isinstance(t, dtensor):
        return None
    try:
        spec: Any = t._spec  # type: ignore[attr-defined]
        local = list(t._local_tensor.shape)  # type: ignore[attr-defined]
        placements = ", ".join(placement_text(p) for p in spec.placements)
        return local, Layout(list(t.shape), placements, mesh_text(spec.mesh))
    except Exception:  # a DTensor from a torch this code does not know
        return None


def placement_text(p: Any) -> str:
    """ "Shard(0)", "Replicate()", "Partial(sum)", "StridedShard(0, sf=2)": the placement as a
    user writes it (torch's own str is "S(0)", its repr "Shard(dim=0)")."""
    name = type(p).__name__
    if name == "_StridedShard":
        return f"StridedShard({p.dim}, sf={p.split_factor})"
    if hasattr(p, "dim") and p.is_shard():
        return f"Shard({p.dim})"
    if p.is_replicate():
        return "Replicate()"
    if p.is_partial():
        return f"Partial({getattr(p, 'reduce_op', 'sum')})"
    return repr(p)


def mesh_text(mesh: Any) -> str:
    """ "cpu[2]", "cuda[dp=2, tp=4]": the device type and the size of each mesh dimension, named
    when the mesh names them."""
    shape = tuple(mesh.shape)
    names = getattr(mesh, "mesh_dim_names", None) or ()
    if len(names) == len(shape):
        dims = ", ".join(f"{n}={s}" for n, s in zip(names, shape))
    else:
        dims = ", ".join(str(s) for s in shape)
    return f"{mesh.device_type}[{dims}]"
