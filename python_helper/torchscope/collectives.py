"""Collective communication in a traced forward: every collective becomes an op node with
`attrs.collective = true`, its group size and the bytes it moves.

Where collectives can be seen (torch 2.13, nothing monkeypatched):
- `torch.distributed.all_reduce` and the other c10d calls reach torch's dispatcher as
  `torch.ops.c10d.*` (from Python, and from C++ such as DDP's buffer broadcast);
- functional collectives (`_functional_collectives`, DTensor's redistribution) are
  `torch.ops._c10d_functional.*`;
- a DTensor op that needs its inputs redistributed runs them inside the op's own dispatch,
  under no torch-function mode.
A TorchDispatchMode sees all three: `CollectiveWatch` is pushed for a trace when
torch.distributed is initialised. It lets DTensor (and async collective tensors) handle their
ops first, as torch's own CommDebugMode does, so the collectives they desugar into come back
to it. The tracer's TorchFunctionMode still sees the Python calls; it leaves collectives to
the watch (`target_role`).

`local=True` (a trace at a breakpoint: the other ranks are not running this forward) runs
no collective at all: each is recorded and done on this rank alone, as if every rank held
this rank's data. Nothing is sent, so the trace can neither hang nor feed the other ranks'
pending collectives wrong data.
"""

from __future__ import annotations

import contextlib
import datetime
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .distributed import inner_tensor
from .sites import frame_sites
from .values import attr_value, dtype_name

if TYPE_CHECKING:
    from .tracer import Recorder

Tensor = torch.Tensor
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction

NAMESPACES = ("c10d", "_c10d_functional", "_dtensor")
NOT_COLLECTIVES = frozenset(("check_for_nan", "wait_tensor", "_wrap_tensor_autograd"))
WAITS = frozenset(("wait_tensor",))
# point-to-point calls: one rank's send meets another's recv at a time of the program's
# choosing (a ring posts its isend before its irecv), so the watch never waits for them
POINT_TO_POINT = frozenset(("send", "recv_", "recv_any_source_"))

# the tracer's function mode: what it should do with a call it sees itself
PLAIN, COLLECTIVE, PASSTHROUGH = 0, 1, 2


def target_role(target: str) -> int:
    """COLLECTIVE: a torch.ops collective the watch records (the function mode records no
    node of its own); PASSTHROUGH: `_wrap_tensor_autograd`, which only wraps a collective's
    result for autograd (its output stands for its input); PLAIN: anything else."""
    if not target.startswith("torch.ops."):
        return PLAIN
    ns, _, name = target[len("torch.ops.") :].partition(".")
    if ns not in NAMESPACES:
        return PLAIN
    if name == "_wrap_tensor_autograd":
        return PASSTHROUGH
    return PLAIN if name in NOT_COLLECTIVES else COLLECTIVE


class RankTracedAlone(RuntimeError):
    """A collective this rank cannot do alone (send, recv) while it is traced without the
    other ranks: paused at a breakpoint, or traced with `local_collectives`."""


# why, in RankTracedAlone's messages
_ALONE = "paused at a breakpoint, or traced with local_collectives: the other ranks are elsewhere"


# -- naming ----------------------------------------------------------------------------------

_SPELLING = (("allreduce", "all_reduce"), ("allgather", "all_gather"), ("alltoall", "all_to_all"))
_RENAMED = {
    "all_gather_base": "all_gather_into_tensor",
    "reduce_scatter_base": "reduce_scatter_tensor",
    "all_to_all_base": "all_to_all_single",
}


def display_name(op_name: str) -> str:
    """The name users call it by: c10d's `allreduce_` is `all_reduce`, `_allgather_base_` is
    `all_gather_into_tensor`; functional collectives keep theirs."""
    name = op_name.strip("_")
    for old, new in _SPELLING:
        if name.startswith(old):
            name = new + name[len(old) :]
    return _RENAMED.get(name, name)


# -- what a call is --------------------------------------------------------------------------


@dataclass(slots=True)
class CollectiveCall:
    name: str
    target: str
    attrs: dict[str, Any]
    inputs: list[Tensor]
    outputs: list[Tensor]


_roles: dict[Any, int] = {}  # OpOverload → 0 none, 1 collective, 2 wait


def op_role(func: Any) -> int:
    role = _roles.get(func)
    if role is None:
        ns = getattr(func, "namespace", "")
        name = func._schema.name.partition("::")[2] if ns in NAMESPACES else ""
        if name in WAITS:
            role = 2
        elif not name or name in NOT_COLLECTIVES:
            role = 0
        else:
            role = 1
        _roles[func] = role
    return role


def _tensors(value: Any) -> list[Tensor]:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _group(args: dict[str, Any]) -> Any:
    """The ProcessGroup a call runs on: its `process_group` argument, or the group a
    functional collective names."""
    pg = args.get("process_group")
    if pg is not None:
        if isinstance(pg, torch.ScriptObject):
            from torch.distributed import ProcessGroup

            return ProcessGroup.unbox(pg)
        return pg
    name = args.get("group_name")
    if name is None:
        return None
    from torch._C._distributed_c10d import _resolve_process_group

    return _resolve_process_group(name) if isinstance(name, str) else name  # type: ignore[arg-type]


def _reduce_op(value: Any) -> Any:
    if isinstance(value, str):
        return value
    with contextlib.suppress(Exception):
        from torch.distributed import ReduceOp

        op = value.op  # a method on the dispatcher's ScriptObject, else a field
        op = op() if callable(op) else op
        return ReduceOp.RedOpType(op).name.lower()
    return None


def _nbytes(tensors: list[Tensor]) -> int:
    total = 0
    for t in tensors:
        inner = inner_tensor(t)
        t = inner if inner is not None else t
        total += t.numel() * t.element_size()
    return total


_ATTRS = ("root_rank", "src", "async_op")  # a collective's arguments kept as its attrs


def describe(func: Any, args: tuple, kwargs: dict, result: Any) -> CollectiveCall:
    """Name, attributes, inputs and outputs of one collective call (at the dispatcher).

    Outputs are the tensors it returns, else its `output…` arguments; inputs are its other
    tensor arguments, or the outputs themselves for an in-place collective (`all_reduce`).
    `bytes` is the larger of the two sides on this rank (the gathered output of an
    all-gather, the input of a reduce-scatter, the tensor of an all-reduce)."""
    schema = func._schema
    named: dict[str, Any] = {a.name: v for a, v in zip(schema.arguments, args)}
    named.update(kwargs)
    for a in schema.arguments[len(args) :]:  # what the call left to its default (async_op)
        if a.name in _ATTRS and a.name not in named and a.has_default_value():
            named[a.name] = a.default_value
    op_name = schema.name.partition("::")[2]
    outputs = _tensors(result)
    if not outputs:
        outputs = [t for k, v in named.items() if k.startswith("output") for t in _tensors(v)]
    if not outputs and op_name.endswith("_"):
        # written in place and not handed back (`reduce_`, `recv_`): its `tensors`
        outputs = _tensors(named.get("tensors"))
    out_ids = {id(t) for t in outputs}
    inputs = [t for v in named.values() for t in _tensors(v) if id(t) not in out_ids]
    if not inputs:
        inputs = list(outputs)
    attrs: dict[str, Any] = {"collective": True}
    with contextlib.suppress(Exception):
        pg = _group(named)
        if pg is not None:
            attrs["group_size"] = int(pg.size())
            desc = getattr(pg, "group_desc", "")
            if desc and desc != "undefined":  # (torch's word for a group made without one)
                attrs["group"] = str(desc)
    if "group_size" not in attrs and isinstance(named.get("group_size"), int):
        attrs["group_size"] = named["group_size"]
    attrs["bytes"] = max(_nbytes(inputs), _nbytes(outputs))
    if "reduce_op" in named:
        op = _reduce_op(named["reduce_op"])
        if op is not None:
            attrs["reduce_op"] = op
    for key in _ATTRS:
        if key in named:
            v = attr_value(named[key])
            if v is not ...:
                attrs[key] = v
    ns = schema.name.partition("::")[0]
    return CollectiveCall(
        display_name(op_name), f"torch.ops.{ns}.{op_name}", attrs, inputs, outputs
    )


# How long the trace waits for a collective on CPU tensors it just started (gloo). Longer,
# and the trace goes on without its values.
EARLY_WAIT = datetime.timedelta(seconds=2)


def _wait(func: Any, args: tuple, kwargs: dict, result: Any) -> bool:
    """Wait for a collective the trace just started; whether it finished (its outputs hold
    their values). Its output is filled asynchronously: the values, costs and every op that
    reads it during the trace need it complete. Waiting early changes only timing (the
    program's own wait returns at once after it). Every rank issues one group's collectives
    in the same order, but not those of two groups: a rank may start one with `async_op` on
    group A, then block in one on group B that the other rank reaches only after its own on
    A. So on CPU (gloo, whose waits block the thread) such a collective is waited for a
    short while (EARLY_WAIT) and, not done by then, left to the program's own wait; a
    blocking one (the program waits for it at once anyway) is waited for whole, as on GPUs,
    where a wait only orders the streams. (Point-to-point calls are never waited for: see
    POINT_TO_POINT.)"""
    if func.namespace == "_c10d_functional":
        for t in _tensors(result):
            torch.ops._c10d_functional.wait_tensor(t)
        return True
    from torch._C._distributed_c10d import Work

    short = _async_op(func, args, kwargs) and all(
        t.device.type == "cpu" for t in _tensors(list(args))
    )
    done = True
    for r in result if isinstance(result, (tuple, list)) else (result,):
        if isinstance(r, torch.ScriptObject):
            try:
                work = Work.unbox(r)
            except Exception:  # not a Work: nothing to wait for
                continue
            try:
                work.wait(EARLY_WAIT) if short else work.wait()
            except Exception:  # not done in time (or failed: the program's wait says so)
                done = False
    return done


def _async_op(func: Any, args: tuple, kwargs: dict) -> bool:
    """Whether the program asked for the collective with `async_op=True` (it may block in
    another before it waits for this one); a call whose schema has no such argument: True."""
    for i, a in enumerate(func._schema.arguments):
        if a.name == "async_op":
            if i < len(args):
                return bool(args[i])
            if "async_op" in kwargs:
                return bool(kwargs["async_op"])
            return bool(a.default_value) if a.has_default_value() else True
    return True


# -- the watch -------------------------------------------------------------------------------


class CollectiveWatch(TorchDispatchMode):
    """Records every collective the traced forward runs into the Recorder (see the module
    docstring); with `local`, runs none of them."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # else torch wraps __torch_dispatch__ in torch._dynamo.disable, which imports dynamo
        # (~1 s) in the forward's first op: charged to that op's time and the time budget
        return False

    def __init__(self, recorder: Recorder, call_code: CodeType, local: bool = False) -> None:
        super().__init__()
        self.rec = recorder
        self.call_code = call_code  # the Recorder's __torch_function__: a call it is inside
        self.local = local
        self.count = 0
        from .distributed import _async_collective_class, dtensor_class

        self.wrappers = tuple(c for c in (dtensor_class(), _async_collective_class()) if c)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        kwargs = kwargs or {}
        role = op_role(func)
        if role == 0:
            if self.wrappers and any(issubclass(t, self.wrappers) for t in types):
                return NotImplemented  # let DTensor desugar: its collectives come back here
            return func(*args, **kwargs)
        if role == 2:  # a wait: nothing to draw (the collective's node produced the tensor)
            return args[0] if self.local else func(*args, **kwargs)
        with _NO_TORCH_FUNCTION():
            state = self.rec.state
            if state is not None:
                for v in list(args) + list(kwargs.values()):
                    state.protect(v)  # a collective may write a parameter (DDP's broadcast)
            start = time.perf_counter_ns()
            # a point-to-point call's output is filled when the program waits for it, later
            complete = func._schema.name.partition("::")[2] not in POINT_TO_POINT
            if self.local:
                result = run_locally(func, args, kwargs)
            else:
                result = func(*args, **kwargs)
                if complete:
                    started = time.perf_counter_ns()
                    complete = _wait(func, args, kwargs, result)
                    if not complete:  # (its time: the start only, as a point-to-point's)
                        start += time.perf_counter_ns() - started
            ns = time.perf_counter_ns() - start
            try:
                self._record(describe(func, args, kwargs, result), ns, complete)
            except Exception:  # bookkeeping must never break the program's own collective
                pass
        return result

    def _record(self, call: CollectiveCall, ns: int, complete: bool = True) -> None:
        """A node for `call`; `complete`: its outputs are filled now (their values read)."""
        if self.local:
            call.attrs["local"] = True
        self.count += 1
        frame, f_args = self._calling_frame()
        site, inside = frame_sites(frame)
        rec = self.rec
        first_edge = len(rec.edges)
        nid = rec.add_op(call.name, call.target, call.attrs, site, inside)
        inner = rec.inner_collectives  # earlier collectives of the same DTensor op
        fed_by = None
        seen = []  # statistics of its inputs, when values are on
        for t in call.inputs:
            owner = _owner(t, f_args)
            if owner is None and inner and rec.source(t) is None:
                prev = inner[-1]  # an intermediate the DTensor op made from its last collective
                rec.add_edge(prev.nid, nid, prev.shape, prev.dtype)
                continue
            src, st = rec.edge(owner if owner is not None else t, nid)
            if st is not None:
                seen.append(st)
            if owner is not None:
                fed_by = src
        made = [st for t in call.outputs if (st := rec.produced(t, nid, complete)) is not None]
        rec.collective_done(nid, seen, made, call.outputs, ns)
        if f_args is not None:  # inside a call the function mode will record after this
            out = call.outputs[-1] if call.outputs else None
            shape = list(out.shape) if out is not None else None
            dtype = dtype_name(out) if out is not None else ""
            inner.append(Inner(nid, fed_by, shape, dtype, first_edge))

    def _calling_frame(self) -> tuple[Optional[FrameType], Optional[tuple]]:
        """The frame whose line the node belongs to, and the arguments of the traced call it
        runs inside (None when the collective is not inside one: DDP's buffer broadcast)."""
        try:
            start: Optional[FrameType] = sys._getframe(3)  # above _record, __torch_dispatch__
        except ValueError:
            start = None
        f = start
        while f is not None:
            if f.f_code is self.call_code:
                loc = f.f_locals
                return f.f_back, (loc.get("args", ()), loc.get("kwargs") or {})
            f = f.f_back
        return start, None


@dataclass(slots=True)
class Inner:
    """A collective a DTensor op ran inside itself: the op's node is wired from it."""

    nid: int
    fed_by: Optional[int]  # the node whose tensor it redistributed (None: another collective)
    shape: Optional[list[int]]
    dtype: str
    first_edge: int  # len(edges) before its own


def _owner(t: Tensor, f_args: Optional[tuple]) -> Optional[Tensor]:
    """The DTensor argument of the traced call whose local shard `t` is."""
    if f_args is None:
        return None
    args, kwargs = f_args
    for a in _tensors(list(args) + list(kwargs.values())):
        if a is not t and inner_tensor(a) is t:
            return a
    return None


@contextlib.contextmanager
def watching(watch: Optional[CollectiveWatch]) -> Iterator[None]:
    """`watch` on torch's dispatch-mode stack for the block; taken off wherever it is after
    (a forward may push modes of its own and leave them: those stay, in order)."""
    if watch is None:
        yield
        return
    watch.__enter__()
    try:
        yield
    finally:
        above: list[Any] = []
        while torch._C._len_torch_dispatch_stack() > 0:
            top = torch._C._get_dispatch_stack_at(torch._C._len_torch_dispatch_stack() - 1)
            if top is watch:
                break
            above.append(torch._C._pop_torch_dispatch_stack())
        watch.__exit__(None, None, None)
        for m in reversed(above):
            torch._C._push_on_torch_dispatch_stack(m)


# -- a collective done on this rank alone ----------------------------------------------------


def _work() -> Any:
    from torch._C._distributed_c10d import FakeWork

    return FakeWork().boxed()  # a ScriptObject, as the dispatcher passes Work around


def _fill_gathered(out: Tensor, inp: Tensor) -> None:
    n = out.numel() // max(inp.numel(), 1)
    if inp.numel() and out.numel() == inp.numel() * n:
        out.view(-1).copy_(inp.reshape(-1).repeat(n))
    else:
        out.zero_()


def _fill_scattered(out: Tensor, inp: Tensor, rank: int) -> None:
    k = out.numel()
    flat = inp.reshape(-1)
    if flat.numel() >= (rank + 1) * k:
        out.view(-1).copy_(flat[rank * k : (rank + 1) * k])
    else:
        out.zero_()


def _group_rank(named: dict[str, Any]) -> int:
    with contextlib.suppress(Exception):
        pg = _group(named)
        if pg is not None:
            return max(0, int(pg.rank()))
    return 0


def run_locally(func: Any, args: tuple, kwargs: dict) -> Any:
    """What `func` returns had every rank of its group held this rank's data, computed here
    without sending anything: a gather repeats this rank's part, a scatter keeps this rank's
    slice, a reduction or broadcast leaves the data as it is."""
    schema = func._schema
    ns, _, name = schema.name.partition("::")
    named: dict[str, Any] = {a.name: v for a, v in zip(schema.arguments, args)}
    named.update(kwargs)
    rank = _group_rank(named)
    if ns == "c10d":
        _fill_c10d(name, args, rank)
        outs: list[Any] = [args[0] if str(r.type) != _WORK else _work() for r in schema.returns]
        return outs[0] if len(outs) == 1 else tuple(outs)
    return _functional(name, named, rank)


_WORK = "__torch__.torch.classes.c10d.Work"


def _fill_c10d(name: str, args: tuple, rank: int) -> None:
    if name in ("allreduce_", "allreduce_coalesced_", "broadcast_", "reduce_", "barrier"):
        return
    if name in ("monitored_barrier_",):
        return
    if name in ("_allgather_base_",):
        _fill_gathered(args[0], args[1])
    elif name == "allgather_into_tensor_coalesced_":
        for out, inp in zip(args[0], args[1]):
            _fill_gathered(out, inp)
    elif name in ("allgather_", "allgather_coalesced_", "gather_"):
        for outs, inp in zip(args[0], args[1]):
            for out in outs:
                out.copy_(inp) if out.shape == inp.shape else out.zero_()
    elif name == "_reduce_scatter_base_":
        _fill_scattered(args[0], args[1], rank)
    elif name == "reduce_scatter_tensor_coalesced_":
        for out, inp in zip(args[0], args[1]):
            _fill_scattered(out, inp, rank)
    elif name in ("reduce_scatter_", "scatter_"):
        for out, ins in zip(args[0], args[1]):
            if len(ins) > rank and ins[rank].shape == out.shape:
                out.copy_(ins[rank])
    elif name == "alltoall_base_":
        out, inp = args[0], args[1]
        out.view(-1).copy_(inp.reshape(-1)) if out.numel() == inp.numel() else out.zero_()
    elif name == "alltoall_":
        for out, inp in zip(args[0], args[1]):
            out.copy_(inp) if out.shape == inp.shape else out.zero_()
    else:
        raise RankTracedAlone(
            f"torch.ops.c10d.{name}: point-to-point communication with another rank cannot "
            f"run while this rank is traced alone ({_ALONE})"
        )


def _functional(name: str, named: dict[str, Any], rank: int) -> Any:
    inp = named.get("input")
    size = named.get("group_size")
    if size is None:
        with contextlib.suppress(Exception):
            pg = _group(named)
            size = int(pg.size()) if pg is not None else 1
    size = int(size or 1)
    if name in ("all_reduce", "broadcast"):
        return inp.clone()  # type: ignore[union-attr]
    if name in ("all_reduce_", "broadcast_"):
        return inp
    if name == "all_reduce_coalesced":
        return [t.clone() for t in named["inputs"]]
    if name == "all_reduce_coalesced_":
        return named["inputs"]
    if name == "all_gather_into_tensor":
        return torch.cat([inp] * size)  # type: ignore[list-item]
    if name == "all_gather_into_tensor_out":
        out = named["out"]
        _fill_gathered(out, inp)  # type: ignore[arg-type]
        return out
    if name == "all_gather_into_tensor_coalesced":
        return [torch.cat([t] * size) for t in named["inputs"]]
    if name == "reduce_scatter_tensor":
        return inp.chunk(size)[min(rank, size - 1)].clone()  # type: ignore[union-attr]
    if name == "reduce_scatter_tensor_out":
        out = named["out"]
        _fill_scattered(out, inp, rank)  # type: ignore[arg-type]
        return out
    if name == "reduce_scatter_tensor_coalesced":
        return [t.chunk(size)[min(rank, size - 1)].clone() for t in named["inputs"]]
    if name == "all_to_all_single":
        splits = named.get("output_split_sizes")
        if splits:
            return inp.new_zeros((sum(splits), *inp.shape[1:]))  # type: ignore[union-attr]
        return inp.clone()  # type: ignore[union-attr]
    if name == "shard_dim_alltoall":
        gathered = torch.cat([inp] * size, dim=named["gather_dim"])  # type: ignore[list-item]
        return gathered.chunk(size, dim=named["shard_dim"])[min(rank, size - 1)].clone()
    raise RankTracedAlone(
        f"{name}: this collective cannot run while this rank is traced alone ({_ALONE})"
    )


def wire_inner(rec: Recorder, nid: int, inner: list[Inner]) -> None:
    """The op node `nid` of a DTensor call that redistributed its inputs inside itself: it
    reads the redistributed tensors, so its edges come from the last collective of each chain
    instead of from the tensors' producers."""
    ids = {i.nid for i in inner}
    start = inner[0].first_edge  # the edges of these calls, and the op's own, are the last ones
    recent = rec.edges[start:]
    fed = {e.src for e in recent if e.src in ids and e.dst in ids}  # read by a later one
    replaced = {i.fed_by for i in inner if i.fed_by is not None}
    if replaced:
        rec.edges[start:] = [e for e in recent if not (e.dst == nid and e.src in replaced)]
    for i in inner:
        if i.nid not in fed:
            rec.add_edge(i.nid, nid, i.shape, i.dtype)
