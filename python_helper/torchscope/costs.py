"""What a forward costs: FLOPs counted as `torch.utils.flop_counter` counts them, the bytes
each call outputs, and sums of both into enclosing module calls and ×N groups.

The FLOP counter is a `TorchDispatchMode` that looks each aten op up in torch's own
`flop_registry` (a multiply-add is 2 FLOPs), so the counts equal `FlopCounterMode`'s, on
real tensors and on the meta device alike. It only adds numbers: which op node they
belong to is the tracer's business (it sets `active` around each recorded call).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

import torch
from torch._ops import HigherOrderOperator
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from .graph import Cost, Graph, Node

_CIA = torch._C.DispatchKey.CompositeImplicitAutograd


class FlopCounter(TorchDispatchMode):
    """Counts FLOPs per aten op: into `flops` while `active` (a recorded call is running),
    else into `loose` (ops outside any recorded call: the tracer gives them to the module
    call that ran them, so the totals still equal FlopCounterMode's)."""

    # As FlopCounterMode: higher-order ops run as if the mode were not there.
    supports_higher_order_operators = True

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # else torch wraps __torch_dispatch__ in torch._dynamo.disable: importing dynamo
        # costs seconds on the first op, and the wrapper a little on every aten op
        return False

    def __init__(self) -> None:
        super().__init__()
        self.flops = 0
        self.loose = 0
        self.active = False
        self._decomposes: dict[Any, bool] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        try:
            return self._count(func, args, kwargs or {})
        except Exception as exc:
            # a failing op's traceback ends in the user's code, as without the counter: drop
            # the frames of this mode and of torch's op call that it added
            exc.__traceback__ = None
            raise

    def _count(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        if isinstance(func, HigherOrderOperator):
            return NotImplemented
        formula = flop_registry.get(func._overloadpacket)
        if formula is None:
            # FlopCounterMode runs an op it has no formula for through its composite
            # decomposition, under the mode, so the matmuls inside are counted
            if self._decomposable(func):
                with self:
                    out = func.decompose(*args, **kwargs)
                if out is not NotImplemented:
                    return out
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        n = int(formula(*args, **kwargs, out_val=out))
        if self.active:
            self.flops += n
        else:
            self.loose += n
        return out

    def _decomposable(self, func: Any) -> bool:
        known = self._decomposes.get(func)
        if known is None:
            known = self._decomposes[func] = _CIA in func.py_kernels or bool(
                torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), _CIA)
            )
        return known


def output_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the tensors a call outputs (numel × element size; a view counts its own)."""
    total = 0
    for t in tensors:
        try:
            total += int(t.numel()) * t.element_size()
        except Exception:  # symbolic sizes
            pass
    return total


def roll_up(nodes: list[Node]) -> None:
    """Add every node's FLOPs and bytes into its enclosing module calls (inclusive sums).

    Children come after their parent, so one pass from the end reaches every parent after
    all of its descendants."""
    for n in reversed(nodes):
        cost = n.cost
        if cost is None or n.parent is None:
            continue
        parent = nodes[n.parent].cost
        if parent is not None:
            parent.flops += cost.flops
            parent.bytes += cost.bytes


def group_costs(graph: Graph) -> None:
    """A ×N group costs what its members cost together."""
    for g in graph.groups:
        g.cost = _sum(graph.nodes[m].cost for m in g.members)


def _sum(costs: Iterable[Optional[Cost]]) -> Optional[Cost]:
    total: Optional[Cost] = None
    for c in costs:
        if c is None:
            continue
        if total is None:
            total = Cost(0, 0, 0)
        total.flops += c.flops
        total.bytes += c.bytes
        total.time_ns += c.time_ns
    return total
