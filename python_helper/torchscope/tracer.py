"""Record a forward pass: every torch call and every module call, as one Graph."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import inspect
import math
import numbers
import re
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from . import collectives, weight_stats
from .call_path import PASS, lean_calls
from .costs import (
    COUNTED,
    FREE,
    LINEAR,
    MATMUL,
    FlopCounter,
    linear_flops,
    matmul_flops,
    output_bytes,
    roll_up,
    route,
)
from .distributed import inner_tensor, layout_of, rank_and_size
from .failure import message_of
from .folding import fold_repeated_blocks
from .graph import (
    UNINITIALIZED,
    Cost,
    Edge,
    ErrorInfo,
    Graph,
    Layout,
    ModelInfo,
    Node,
    Recorded,
    Site,
    group_costs,
)
from .hard_stop import CancelledOutside, StoppedOutside
from .one_call import ONE_CALL, TORCH_FORWARD, Call, plain_call, torch_hooks_only_ours
from .ops import FuncInfo, func_info, overload_names, pointwise, written_argument
from .sites import (
    class_definition,
    frame_site,
    frame_sites,
    traceback_site,
    traceback_sites,
    user_traceback_site,
    warnings_at_user_lines,
)
from .state import ModelState
from .stats import Reader, TensorStats, same_values
from .values import (
    _DTYPE_NAMES,
    argument_tensors,
    attr_value,
    count_parameters,
    dtype_name,
    iter_tensors,
    output_tensors,
    shape_of,
    split_extra_repr,
)
from .wrappers import (
    Wrapping,
    compiled_run_eagerly,
    compiler_loaded,
    find_wrappers,
    fsdp2_shards,
    fsdp_state_kept,
    unwrap,
)

Tensor = torch.Tensor
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
_Parameter = nn.Parameter
_ns = time.perf_counter_ns
CHECK_EVERY = 32  # ops between time-budget / cancel checks
_NO_IDS: frozenset[int] = frozenset()
_NONE_ID = id(None)
_pop_mode = torch._C._pop_torch_function_stack
_push_mode = torch._C._push_on_torch_function_stack
_mode_on = torch._C._is_torch_function_mode_enabled
_UNSEEN: Any = object()
ONE_CALL_SHORTCUT = True  # (off in tests that compare the graph both ways)


class TraceCancelled(Exception):
    """The caller's cancel check said stop. An Exception so module hooks unwind cleanly."""


class TraceTimeout(TraceCancelled):
    """The trace ran past its time budget."""


_outside: list[Optional[StoppedOutside]] = [None]  # the last stop raised into a forward


def stopping_from_outside(stop: StoppedOutside) -> StoppedOutside:
    """`stop`, noted as about to be raised into the running forward: the trace ends as stopped
    even when the forward catches it (as the tracer's own stop, Recorder._check_budget)."""
    _outside[0] = stop
    return stop


def _from_outside(stop: StoppedOutside) -> TraceCancelled:
    global _stopped
    if isinstance(stop, CancelledOutside):
        error = TraceCancelled(str(stop) or "the trace was cancelled")
    else:
        _stopped = True
        error = TraceTimeout(str(stop) or "the trace ran past its time budget")
    error.__traceback__ = stop.__traceback__  # (where it was stopped: the error's site)
    return error


_forwards = 0  # traced forwards running now (in_forward)
_forwards_begun = 0  # traced forwards this process has started (forward_begun)


def in_forward() -> bool:
    """Whether a traced forward is running now: an error raised from outside into the code
    running then (a signal's handler) ends the forward as its error, the graph kept."""
    return _forwards > 0


_finishing = 0  # traced forwards that are over and whose graph is being made (finishing)


def finishing() -> bool:
    """Whether a traced forward is over and its graph is being made: torchscope's own code,
    which ends by itself, however many calls the forward made (a timer stopping runaway user
    code lets it finish)."""
    return _finishing > 0 and _forwards == 0


_stopped = False  # the last traced forward was stopped at its time budget


def stopped_at_budget() -> bool:
    """Whether the last traced forward was stopped at its time budget: no user code runs
    after it, only the making of its graph and what is done with it."""
    return _stopped and _forwards == 0


def forward_begun() -> bool:
    """Whether this process has started a traced forward (then a graph is coming)."""
    return _forwards_begun > 0


def _opaque(module: nn.Module) -> bool:
    """A module whose ops the trace can't see (torch.jit.script'ed or trace'd)."""
    return isinstance(module, torch.jit.ScriptModule)


def _asks_for_non_finite(args: Iterable[Any], depth: int = 0) -> bool:
    """Whether a call was given a non-finite number (`masked_fill(mask, float('-inf'))`,
    numpy's `np.float32(-np.inf)`, `x.new_tensor([0, …, -inf])`): read from the arguments
    themselves, as a node's attrs show a list's first items only."""
    for v in args:
        kind = type(v)
        if kind is float:
            if not math.isfinite(v):
                return True
        elif kind is list or kind is tuple:
            if set(map(type, v)) <= _PLAIN_NUMBERS:  # (a list of a million: a few C calls)
                try:
                    if not math.isfinite(math.fsum(v)):
                        return True
                    continue
                except (OverflowError, ValueError):  # (too large to add; inf and -inf)
                    pass
            if depth < _LIST_DEPTH and _asks_for_non_finite(v, depth + 1):
                return True
        elif kind is int or kind is bool or kind is str or v is None or isinstance(v, Tensor):
            continue
        elif isinstance(v, numbers.Real):  # (numpy's scalars; a float subclass)
            try:
                if not math.isfinite(v):
                    return True
            except Exception:  # a number that won't say
                continue
    return False


# lists in lists looked into for a non-finite number (`[[0.0], [-inf]]`): as deep as a
# tensor's dims go; the bound only stops a list that holds itself
_LIST_DEPTH = 64
_PLAIN_NUMBERS = frozenset((float, int, bool))


def _local_values(t: Tensor) -> Tensor:
    """The tensor whose values `t` stands for on this rank: a DTensor's local shard; `t`
    itself for any other (a plain tensor or parameter without a lookup)."""
    if type(t) is Tensor or type(t) is _Parameter:
        return t
    inner = inner_tensor(t)
    return t if inner is None else inner


def _count(st: TensorStats, key: str) -> int:
    stats = st.stats
    return int(stats.get(key) or 0) if stats else 0


class ModelTooDeep(ValueError):
    """Modules nested so deep that running the forward would overflow the C stack."""


MAX_NESTING = 4000  # module levels; a plain forward of 6,000 nested Sequentials segfaults CPython
FRAMES_PER_LEVEL = 8  # Python frames a traced module call uses (hooks, call machinery)


def module_tree(model: nn.Module) -> tuple[list[tuple[str, nn.Module]], int]:
    """`list(model.named_modules())` (parents first, each module once, at its first path) and
    how deep modules nest, in one walk without recursion: the model may be too deep for
    named_modules' recursive generators, and on a model of many small layers two walks cost
    as much as a tenth of its forward."""
    named: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()
    deepest = 0
    stack: list[tuple[str, nn.Module, int]] = [("", model, 0)]
    while stack:
        path, m, depth = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        named.append((path, m))
        if depth > deepest:
            deepest = depth
        children = m._modules
        if children:
            dot = path + "." if path else ""
            below = depth + 1
            # reversed onto the stack: popped in the order named_modules gives
            stack.extend(
                [(dot + name, c, below) for name, c in reversed(children.items()) if c is not None]
            )
    return named, deepest


@contextlib.contextmanager
def _stack_for(depth: int):
    """Python's recursion limit raised for a deep model while it is traced (restored after):
    a forward that runs plainly must not fail only because the trace adds frames."""
    if depth > MAX_NESTING:
        raise ModelTooDeep(
            f"modules are nested {depth} levels deep: running the forward would overflow the "
            f"C stack (torchscope traces up to {MAX_NESTING} levels)"
        )
    old = sys.getrecursionlimit()
    needed = depth * FRAMES_PER_LEVEL + 1000
    if needed > old:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        if sys.getrecursionlimit() != old:
            sys.setrecursionlimit(old)


@dataclass(slots=True)
class _ModuleInfo:
    name: str
    target: str
    path: str
    defn: Optional[Site]
    params: int
    attrs: dict[str, Any]
    torch_layer: bool  # a torch.nn class: its own weights are internals, not constants
    own: frozenset[int]  # so, their ids (see _own_weights)


@dataclass(slots=True)
class _PendingError:
    exc: BaseException
    parent: Optional[int]
    site: Optional[Site]
    target: str
    inputs: list[Tensor]
    inside: Optional[Site] = None  # the torch helper's line under `site`, where it raised


# a producer entry: (the tensor, weakly; the node that made it; its statistics) and, for one
# of several outputs of a call, which one
_Produced = Union[
    tuple["weakref.ref[Tensor]", int, Optional[TensorStats]],
    tuple["weakref.ref[Tensor]", int, Optional[TensorStats], int],
]


class Recorder(TorchFunctionMode):
    """Builds the Graph while a forward runs; a TorchFunctionMode plus global module hooks.

    With `values`, every tensor a node makes gets its statistics when it is made (kept with
    its producer entry, put on each edge that passes it); with `costs`, every recorded call
    gets its FLOPs (from `counter`, a dispatch mode the caller enters), output bytes and
    wall time. Times leave out the recorder's own work (`overhead`, measured)."""

    def __init__(
        self,
        model: nn.Module,
        named: list[tuple[str, nn.Module]],
        state: Optional[ModelState] = None,
        deadline: Optional[float] = None,
        cancel: Optional[Callable[[], bool]] = None,
        values: bool = False,
        costs: bool = False,
        wrapping: Optional[Wrapping] = None,
    ) -> None:
        super().__init__()
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.stack: list[int] = []  # open module-call node ids
        self.module_stack: list[nn.Module] = []
        self.with_children: set[int] = set()
        # id(tensor) → (weak ref, producer node id, its statistics when values are on)
        # (and which of its call's outputs it is, 4th, when the call made several)
        self.producer: dict[int, _Produced] = {}
        self.values = values
        self.reader = Reader()  # reads in batches: statistics are complete after finish_values
        self.edge_values: list[tuple[Edge, TensorStats]] = []
        # op node id, statistics of its inputs, of its outputs: for the NaN origin
        self.checks: list[tuple[int, list[TensorStats], list[TensorStats]]] = []
        # op nodes that wrote in place, and statistics of what they wrote read through another
        # tensor (the base of the view written, a view taken before, an alias): where those
        # values go, the writer's go (the NaN origin's "reaches the outputs")
        self.wrote: set[int] = set()
        self.wrote_later: list[tuple[int, TensorStats]] = []
        self.nan_origin: Optional[int] = None
        # op nodes whose call was given a non-finite number: an Inf they make is asked for
        self.non_finite_args: set[int] = set()
        # id(tensor an `empty` call made) → (it, its version then): its memory unwritten
        self.unwritten: dict[int, tuple[weakref.ref[Tensor], int]] = {}
        # the statistics of the forward's outputs (add_outputs; None: it returned none, or raised)
        self.output_stats: Optional[list[Optional[TensorStats]]] = None
        self.counter: Optional[FlopCounter] = FlopCounter() if costs else None
        self.overhead = 0  # ns spent in the recorder's own bookkeeping (costs only)
        self.call_cost: tuple[int, int] = (0, 0)  # (flops, ns) of the call being recorded
        self.module_clock: dict[int, tuple[int, int]] = {}  # nid → (start ns, overhead then)
        self._const_stats: dict[int, Optional[TensorStats]] = {}
        self._overwritten: set[int] = set()  # constants a call overwrote before any read them
        self.calls: dict[int, int] = {}
        self.outside_calls: dict[str, int] = {}  # calls of modules outside the tree, by path
        self.state = state
        self.deadline = deadline
        self.cancel = cancel
        self.count = 0
        self.stopped: Optional[TraceCancelled] = None  # the budget's or cancel's stop, once raised
        self.pending: Optional[_PendingError] = None
        self._funcs: dict[Any, tuple[FuncInfo, int]] = {}  # func → (info, how FLOPs count)
        self._module_infos: dict[int, _ModuleInfo] = {}
        self._extra_repr_cache: dict[tuple[type, str], dict[str, Any]] = {}
        self.paths = wrapping.paths if wrapping else {id(m): p for p, m in named}
        self.wrapping = wrapping
        self.merged: dict[int, int] = {}  # node id → id of the module a wrapper opened it for
        self.watch: Optional[collectives.CollectiveWatch] = None
        self.inner_collectives: list[collectives.Inner] = []  # run inside the current call
        self.param_counts = parameter_counts(model, [m for _, m in named])
        # lazy layers its forward sizes (their parameters count 0 until then)
        self.unsized = state.lazy_modules() if state is not None else []
        self.root = model
        self._named = named
        self._tensor_names: Optional[dict[int, str]] = None  # built on the first constant
        self._shards: set[int] = set()  # ids of FSDP2's parameter shards among those names
        self.late_close: dict[int, Any] = {}  # module id → handle of our own forward hook
        # id(t) → (t, its alias group: (id, t) of the tensors holding its memory that are no
        # views of one another, t among them: see _alias)
        self.aliases: dict[
            int, tuple[weakref.ref[Tensor], list[tuple[int, weakref.ref[Tensor]]]]
        ] = {}
        self._classes: dict[type, tuple[str, str, Optional[Site], bool]] = {}
        self.failed_leaves: list[tuple[int, list[tuple[Optional[int], Tensor]]]] = []
        self.constants: set[int] = set()  # node ids of constants that stand for outside tensors
        self.weight_constants: set[int] = set()  # those of them that are the model's parameters
        self._constant_at: dict[tuple[int, Optional[int]], int] = {}
        self._attrs_at: dict[tuple[int, tuple], tuple[FuncInfo, dict[str, Any]]] = {}
        self.scripted: list[nn.Module] = []  # TorchScript modules: their ops can't be seen
        self.scripted_functions: dict[str, None] = {}  # the TorchScript functions called
        # module call → tensors a call inside it handed back as they were (`x.to(float32)` of
        # a float32 x, dropout in eval mode): (tensor id, its producer before, the call's node)
        self.passed: dict[int, list[tuple[int, Any, int]]] = {}
        # (node id, tensor id) → the tensor's producer entry before that node handed it back
        # unchanged: a view taken before is not the hand-back's output (_unhanded)
        self.handed: dict[tuple[int, int], _Produced] = {}
        # every module of the tree described before the forward, in one loop: the same work
        # done call by call inside the forward costs twice as much (its data is cold there)
        for _, m in named:
            self._module_infos[id(m)] = self._describe(m)
        # torch.nn layers whose forward is one call (one_call.py), recorded from their hooks
        # while the mode is off (with costs, the hooks count and time that one call); once
        # checked, made whole from the lean call path (layer_call)
        self.one_call_on = False
        self._one_call: dict[type, Any] = {}  # class → its call's (site, inside); None: not
        self._learning: dict[int, tuple[int, Call]] = {}  # module id → (its node, its call)
        self._outside: Optional[tuple[nn.Module, Call, Any]] = None  # the layer running now
        # classes whose calls the lean call path hands to layer_call: class → (how its call
        # is made, its op's sites, how its FLOPs count); filled as the shortcut is learned
        # (and torch's forward of the class, which its calls are made in place of while the
        # class has it: TORCH_FORWARD)
        self.layers: dict[type, tuple[Callable[..., Optional[Call]], Any, int, Any]] = {}
        self._call_how = 0  # with costs: how its FLOPs count (costs.route)
        self._call_start = 0  # with costs: when its call began

    # -- producers: which node last wrote a tensor ---------------------------
    def _source(self, t: Tensor) -> Optional[int]:
        return self._source_stats(t)[0]

    def _source_stats(self, t: Tensor) -> tuple[Optional[int], Optional[TensorStats]]:
        """The node that last wrote `t`, and t's statistics as that node left it."""
        entry = self.producer.get(id(t))
        if entry is not None and entry[0]() is t:
            nid, st = entry[1], entry[2]
        else:
            nid, st = None, None
        if nid is None and type(t) is not Tensor:
            if type(t) is _Parameter:
                return None, None  # a weight: no producer, no base (its properties cost a dispatch)
            inner = inner_tensor(t)  # a DTensor made in Python around a shard a call produced
            if inner is not None:
                return self._source_stats(inner)
        base = t._base
        if base is not None:
            b = self.producer.get(id(base))
            if b is not None and self.handed:
                b = self._unhanded(b, id(base))
            if (
                b is not None
                and b[0]() is base
                and (nid is None or (b[1] > nid and self.nodes[b[1]].kind != "input"))
            ):
                nid = b[1]  # the base was written in place after this view was made
                st = self._stats(t)
                self._set_producer(t, nid, st)
                self._wrote_too(nid, st)
        return nid, st

    def _stats(self, t: Tensor) -> Optional[TensorStats]:
        return self._read(t) if self.values else None

    def _read(
        self, t: Tensor, wrapper_version: int = 0, fresh: bool = False
    ) -> Optional[TensorStats]:
        """t's statistics: those read before for the same values (t itself, or a base it
        views whole, unchanged since: reshapes, permutes, a layer that returns its input),
        else read now. A third of a transformer's tensors are such views. A DTensor's are its
        local shard's, this rank's values (as its edge's `shape` is the shard's). `fresh`:
        read now whatever its version says (a call just wrote it: a write into `out=`
        tensors, as split_with_sizes_copy's, may leave their versions as they were)."""
        kind = type(t)
        if kind is not Tensor and kind is not _Parameter:
            inner = inner_tensor(t)
            if inner is not None:
                # an in-place op on a DTensor bumps its version, not its shard's: both count
                # (the wrapper's in high bits, so no shard version alone can match them)
                try:
                    outer = t._version << 32
                except Exception:
                    outer = 0
                return self._read(inner, outer, fresh)
        try:
            version = t._version + wrapper_version
        except Exception:  # inference tensors keep no version counter
            return self.reader.read(t)
        if fresh:
            st = self.reader.read(t)
            if st is not None:
                st.version = version
            return st
        if self.unwritten and self._is_unwritten(t):
            return None
        entry = self.producer.get(id(t))
        if entry is not None and entry[0]() is t:
            st = entry[2]
            if st is not None and st.version == version:
                return st
        base = t._base
        if base is not None:
            b = self.producer.get(id(base))
            if b is not None and b[0]() is base:
                st = b[2]
                if st is not None and st.version == version and same_values(t, base):
                    return st
        st = self.reader.read(t)
        if st is not None:
            st.version = version
        return st

    def _keep_unmade(self, written: Any) -> None:
        """Before a call writes `written` in place: each tensor among it whose memory no call
        of the forward made (a model's plain tensor attribute, a global; one the forward
        only read so far is a constant) is copied, to be put back (ModelState.keep_outside)."""
        state = self.state
        if state is None:
            return
        with _NO_TORCH_FUNCTION():
            for t in _tensors_in((written,), None):
                base = t._base if t._base is not None else t
                entry = self.producer.get(id(base))
                if entry is None or entry[0]() is not base or entry[1] in self.constants:
                    state.keep_outside(base)

    def _track_unwritten(
        self, info: FuncInfo, outs: list[Tensor], written: Sequence[Tensor]
    ) -> None:
        """Memory an `empty` call handed out holds whatever was there before: no values are
        read of it, nor of views of it, until a call writes it (FSDP2's all-gather buffers
        showed absmax 1e38 and NaN counts, different in every run)."""
        unwritten = self.unwritten
        for t in written:  # (the version of an `out=` write may stay as it was)
            unwritten.pop(id(t._base if t._base is not None else t), None)
        if info.name in UNINITIALIZED:
            for t in outs:
                with contextlib.suppress(Exception):
                    unwritten[id(t)] = (weakref.ref(t), t._version)

    def _is_unwritten(self, t: Tensor) -> bool:
        """`t` is memory of an `empty` call (itself or a view of it) nothing wrote since."""
        base = t._base if t._base is not None else t
        entry = self.unwritten.get(id(base))
        if entry is None:
            return False
        if entry[0]() is not base:
            del self.unwritten[id(base)]  # (freed: its id is another tensor's now)
            return False
        try:
            return base._version == entry[1]
        except Exception:  # inference tensors keep no version counter
            return True

    def _wrote_too(self, nid: int, st: Optional[TensorStats]) -> None:
        """Statistics of values call `nid` wrote (if it wrote in place), read through
        another tensor: the base of the view it wrote, a view taken before, an alias."""
        if st is not None:
            self.wrote_later.append((nid, st))

    def _set_producer(self, t: Tensor, nid: int, st: Optional[TensorStats] = None) -> None:
        try:
            self.producer[id(t)] = (weakref.ref(t), nid, st)
        except TypeError:
            pass

    def _unhanded(self, entry: _Produced, key: int) -> _Produced:
        """Tensor `key`'s producer entry before the calls that handed it back unchanged: the
        call that last wrote it (a view taken before a dropout in eval is not its output)."""
        handed = self.handed
        while (entry[1], key) in handed:
            entry = handed[(entry[1], key)]
        return entry

    def _passed_through(self, key: int, before: Any, nid: int) -> None:
        """Node `nid` handed back tensor `key` unchanged: it is the producer while the module
        call that made it is open (its code's name for the result is the call's), and the
        one before again once that call returns something else (see `_end_passed`)."""
        self.handed[(nid, key)] = before
        if self.stack:
            self.passed.setdefault(self.stack[-1], []).append((key, before, nid))

    def _end_passed(self, call: int, result: Any) -> None:
        """Module call `call` returned `result`: a tensor handed back unchanged inside it
        and not returned is again what its caller had (the caller's `x`, read by a residual
        after a norm that cast it to its own dtype); one returned passes on to the caller."""
        made = self.passed.pop(call, None)
        if made is None:
            return
        returned = {id(t) for t in iter_tensors(result)} if result is not None else set()
        parent = self.stack[-1] if self.stack else None
        producer = self.producer
        for key, before, nid in made:
            if key in returned:
                if parent is not None:
                    self.passed.setdefault(parent, []).append((key, before, nid))
                continue  # (the model's call: what it returns comes from the call, as inside)
            now = producer.get(key)
            if now is not None and now[1] == nid and before[0]() is not None:
                producer[key] = before  # (written since, or freed: left as it is)

    def _edge(self, t: Tensor, dst: int) -> Optional[TensorStats]:
        """An edge for tensor `t` into node `dst`; returns t's statistics (None if off/unknown)."""
        return self._edge_from(t, dst)[1]

    def _edge_from(self, t: Tensor, dst: int) -> tuple[Optional[int], Optional[TensorStats]]:
        """An edge for tensor `t` into node `dst`: its source node (None: no edge) and t's
        statistics."""
        src, st = self._source_stats(t)
        if src is None or (
            src in self.constants and self.nodes[src].parent != self.nodes[dst].parent
        ):
            src = self._constant(t)  # one constant node per module call that uses it
            if src is None:
                return None, None
            st = self.producer[id(t)][2]
        layout: Optional[Layout] = None
        try:
            shape: Optional[list[int]] = list(t.shape)
            if type(t) is not Tensor and type(t) is not _Parameter:
                found = layout_of(t)  # a DTensor: its local shape, and its layout beside it
                if found is not None:
                    shape, layout = found
                elif not all(type(d) is int for d in shape):  # type: ignore[union-attr]
                    shape = None  # a jagged tensor's ragged size: symbolic, no number
        except Exception:
            shape = None
        edge = Edge(src, dst, shape, dtype_name(t), layout=layout)
        entry = self.producer.get(id(t))
        if entry is not None and len(entry) > 3 and entry[1] == src and entry[0]() is t:
            edge.output = entry[3]  # (one of several outputs of its call)
        self.edges.append(edge)
        if st is not None:
            self.edge_values.append((edge, st))  # filled in by finish_values
        return src, st

    def _constant(self, t: Tensor) -> Optional[int]:
        """A node for a tensor no recorded call made: a parameter used directly, or an outside tensor."""
        if self._is_own(t):  # a torch.nn layer's own weight: never drawn
            return None
        key = id(t)
        parent = self.stack[-1] if self.stack else None
        known = self._constant_at.get((key, parent))
        if known is not None:
            return known
        path = self.tensor_names().get(key)
        name, target = (path.rsplit(".", 1)[-1], path) if path else ("tensor", "")
        nid = self._add(Node(len(self.nodes), "constant", name, self._parent(), target))
        self.constants.add(nid)
        self._constant_at[(key, parent)] = nid
        if self.values:
            if key not in self._const_stats:  # a weight used by many calls: read it once
                self._const_stats[key] = self._weight_stats(t)
            st = self._const_stats[key]
            self._set_producer(t, nid, st)
            if st is not None and path and key not in self._overwritten:
                # a parameter or buffer of the model holding NaN is where they come from
                # (not a tensor from outside: FSDP2's gather buffer, read before the gather
                # fills it); a buffer holding -inf is a mask, a parameter holding Inf is not
                self.checks.append((nid, [], [st]))
                if isinstance(t, nn.Parameter) or key in self._shards:
                    self.weight_constants.add(nid)
        else:
            self._set_producer(t, nid)
        return nid

    def _weight_stats(self, t: Tensor) -> Optional[TensorStats]:
        """A tensor from outside the forward (a weight used directly, as GPT-2's Conv1D
        does): read once and kept between traces while its version stays the same. A
        DTensor's: its local shard's (as its edge's `shape`), read every trace (a write
        through the DTensor need not bump its shard's version)."""
        local = _local_values(t)
        if local is not t:
            return self.reader.read(local)
        return weight_stats.cached_read(t, self.reader)

    def _read_before_write(self, written: Any, overwritten: bool = False) -> None:
        """Before a recorded call that writes `written` (a tensor, or a list of them) in
        place, values on: a tensor no recorded call made (a parameter or buffer, an outside
        tensor) gets its constant node only when the call is recorded, after the write, yet
        stands for its values when first used (docs/graph-format.md), before it: its
        statistics are read now (the reader copies them), for _constant to take. Never kept
        between traces (weight_stats) nor stamped with a version: a write that leaves the
        version as it was would have the old values stand for the new ones."""
        entry = self.producer.get(id(written))
        if entry is not None and entry[0]() is written:
            return  # most calls: a tensor a recorded call made (an activation)
        try:
            with _NO_TORCH_FUNCTION():  # our reads (._base, ._version): no mode of the user's
                self._read_unmade(written, overwritten)
        except Exception:  # an exotic argument: read after the call, as before
            pass

    def _read_unmade(self, written: Any, overwritten: bool = False) -> None:
        """_read_before_write's reads: the statistics of the tensors in `written` that have
        none kept for their constant yet and that no recorded call made (`overwritten`:
        values the call writes over unread, never a NaN origin)."""
        for t in _tensors_in((written,), None):
            key = id(t)
            if key in self._const_stats or self._source(t) is not None or self._is_own(t):
                continue
            if overwritten:
                self._overwritten.add(key)
            # no version stamp: a write that leaves the version as it was (a _foreach_ op
            # under the FLOP counter) must not have these values stand for its own
            self._const_stats[key] = self.reader.read(_local_values(t))

    def _parent(self) -> Optional[int]:
        if not self.stack:
            return None
        parent = self.stack[-1]
        self.with_children.add(parent)
        return parent

    def _add(self, node: Node) -> int:
        self.nodes.append(node)
        return node.id

    # -- torch calls ---------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        counter = self.counter
        entered = _ns() if counter is not None else 0
        known = self._funcs.get(func) if type(func) in _HASHABLE else None
        if known is None:
            known = self._func_known(func)
        info = known[0]
        self.count += 1
        if not self.count % CHECK_EVERY:
            self._check_budget()
        if info.may_write:
            if info.grads and self.state is not None:
                self.state.keep_grads()
            written = written_argument(info, args, kwargs)
            if written is not None:
                if self.state is not None:
                    self.state.protect(written)
                    self._keep_unmade(written)
                if self.values and (
                    info.writes_first_arg
                    or info.inplace_at >= 0
                    or info.name.startswith("_foreach_")
                ):
                    # (what a call overwrites whole is shown as it was passed, but is no
                    # input of the call: a cache holding NaN until filled is no NaN origin)
                    self._read_before_write(written, info.name in _OVERWRITES)
        if kwargs and self.state is not None:
            # (out= tensors are written, not read: their old values are no input of the call)
            if "out" in kwargs:
                self.state.protect(kwargs["out"])
                self._keep_unmade(kwargs["out"])
            if "generator" in kwargs:  # (keyword-only in every torch call that takes one)
                self.state.keep_generator(kwargs["generator"])
        if counter is None:
            try:
                result = func(*args, **kwargs) if kwargs else func(*args)
            except Exception as exc:
                self.inner_collectives = []
                self._note_failed_call(exc, info, args, kwargs or {})
                raise
            return self._after_call(info, args, kwargs, result)
        how = known[1]
        flops = 0
        if how == MATMUL or how == LINEAR:
            with _NO_TORCH_FUNCTION():  # (its shapes: not ops)
                if how == LINEAR:
                    counted = linear_flops(args, kwargs)
                else:
                    counted = matmul_flops(info.target, args, kwargs)
            if counted is None:  # a subclass (DTensor), keywords, other shapes: torch counts
                how = COUNTED
            else:
                flops = counted
        start = _ns()
        counted_ns = -1
        try:
            if how == COUNTED:
                result, flops, counted_ns = self._counted(func, args, kwargs, known[1] == LINEAR)
            else:
                result = func(*args, **kwargs) if kwargs else func(*args)
        except Exception as exc:
            self.inner_collectives = []
            failed_at = _ns()
            self._note_failed_call(exc, info, args, kwargs or {})
            # (the recorder's work before the call and on its error is not the call's time)
            self.overhead += (start - entered) + (_ns() - failed_at)
            raise
        end = _ns()
        ns = end - start
        if counted_ns >= 0:  # the time of its aten ops: the counter's dispatch is not the call's
            self.overhead += ns - counted_ns
            ns = counted_ns
        self.call_cost = (flops, ns)
        try:
            return self._after_call(info, args, kwargs, result)
        finally:
            self.overhead += (start - entered) + (_ns() - end)

    def _counted(
        self, func: Any, args: tuple, kwargs: Optional[dict], again_uncounted: bool
    ) -> tuple[Any, int, int]:
        """The call under torch's FLOP counter; its result, FLOPs and time (ns in its aten
        ops, without the counter's own). With `again_uncounted` (F.linear of a tensor
        subclass, a tensor-parallel layer's DTensors), a call whose dispatch the counter
        breaks (a jagged nested tensor recurses) runs again without it, uncounted: F.linear
        writes nothing, so it is safe to repeat."""
        counter = self.counter
        assert counter is not None
        counter.flops = counter.ns = 0
        if _any_nested(args, kwargs):
            # (a jagged nested tensor's own dispatch recurses under the counter; a strided
            # one's shapes are not the formulas'): run as it is, uncounted
            start = _ns()
            result = func(*args, **kwargs) if kwargs else func(*args)
            return result, 0, _ns() - start
        try:
            with counter:
                result = func(*args, **kwargs) if kwargs else func(*args)
        except Exception:
            if not again_uncounted:
                raise
            start = _ns()
            result = func(*args, **kwargs) if kwargs else func(*args)
            return result, 0, _ns() - start
        return result, counter.flops, counter.ns

    def _known(self, func: Any) -> tuple[FuncInfo, int]:
        """A function's info and how its FLOPs count, from the cache (out of the hot path)."""
        return self._funcs.get(func) or self._func_known(func)

    def _func_known(self, func: Any) -> tuple[FuncInfo, int]:
        info = func_info(func)
        known = (info, route(info.target, info.name))
        if type(func) in _HASHABLE:
            self._funcs[func] = known
        return known

    def _linear_flops(self, args: tuple, kwargs: Optional[dict]) -> int:
        with _NO_TORCH_FUNCTION():
            flops = linear_flops(args, kwargs)
        if flops is None:  # unusual arguments: none of the shortcut's business
            return 0
        return flops

    def _after_call(self, info: FuncInfo, args: tuple, kwargs: Optional[dict], result: Any) -> Any:
        """Record the call that returned `result`, if it made tensors (else it is metadata)."""
        inner = self.inner_collectives
        if inner:  # collectives this call ran (the watch recorded them)
            self.inner_collectives = []
        if info.distributed and self.watch is not None:
            return self._distributed_call(info, args, result)
        if isinstance(result, Tensor):
            outs: list[Tensor] = [result]
        elif isinstance(result, (tuple, list)):
            outs = _tensors_in(result, None)
            if not outs:
                return result
        elif result is None and (info.writes_first_arg or (kwargs and "out" in kwargs)):
            # __setitem__ and friends, a call into out= tensors (split_with_sizes_copy's
            # list): the write is recorded below
            outs = []
        else:
            return result  # metadata: .shape, .dim(), .item(), comparisons to bool …
        try:
            # our reads (.shape, ._base): no mode of the user's sees them
            with _NO_TORCH_FUNCTION():
                nid = self._record_call(info, args, kwargs, outs)
                if inner:  # a DTensor op redistributed its inputs: it reads what they made
                    collectives.wire_inner(self, nid, inner)
        except Exception:  # an exotic argument: keep a bare node rather than fail the trace
            site = frame_site(sys._getframe(2))
            self._add(
                Node(len(self.nodes), "op", info.name, self._parent(), info.target, "", 0, site)
            )
        return result

    def _record_call(
        self,
        info: FuncInfo,
        args: tuple,
        kwargs: Optional[dict],
        outs: list[Tensor],
        sites: Optional[tuple[Optional[Site], Optional[Site]]] = None,
    ) -> int:
        nid = len(self.nodes)
        inputs = _tensors_in(args, kwargs)
        site, inside = _sites() if sites is None else sites
        node = Node(
            nid,
            "op" if inputs else "constant",
            info.name,
            self._parent(),
            info.target,
            "",
            0,
            site,
        )
        if inside is not None:
            node.inside = inside
        plain = kwargs or len(inputs) != len(args) or not _only_tensors(args)
        if plain:
            node.attrs = self._call_attrs(info, args, kwargs)
        self.nodes.append(node)
        if len(inputs) > 1:
            inputs = _unique(inputs)
        producer = self.producer
        writes = info.writes_first_arg or (kwargs is not None and "out" in kwargs)
        # what a call writes in place (its first argument, or `out=`), once
        written: Sequence[Tensor] = (
            _tensors_in(
                (
                    written_argument(info, args, kwargs)
                    if info.writes_first_arg
                    else kwargs["out"],  # type: ignore[index]
                ),
                None,
            )
            if writes
            else ()
        )
        seen = self._wire_inputs(inputs, nid)
        if not writes:
            for t in outs:
                before = producer.get(id(t))
                if before is not None and before[0]() is t and not node.attrs.get("inplace"):
                    self._passed_through(id(t), before, nid)
        several = len(outs) > 1
        if self.values and (info.name in UNINITIALIZED or self.unwritten):
            self._track_unwritten(info, outs, written)
        if not self.values:
            for i, t in enumerate(outs):
                # (a call of several outputs: which one, for the edges of each; see _edge_from)
                producer[id(t)] = (
                    (weakref.ref(t), nid, None, i) if several else (weakref.ref(t), nid, None)
                )
            for t in written:
                producer[id(t)] = (weakref.ref(t), nid, None)
                if t._base is not None:
                    self._set_producer(t._base, nid)
        elif len(outs) == 1 and not writes:  # most calls: one new tensor, read once
            t = outs[0]
            st = self._read(t)
            producer[id(t)] = (weakref.ref(t), nid, st)
            if info.name not in UNINITIALIZED:  # whatever memory held before: no origin
                self.checks.append((nid, seen, [st] if st is not None else []))
                if node.attrs.get("inplace") is True:  # (`F.relu(x, inplace=True)`)
                    self.wrote.add(nid)
        else:
            made: dict[int, Optional[TensorStats]] = {}  # one reading per tensor of this call
            for i, t in enumerate(outs):
                if id(t) in made:  # (one tensor returned twice: the first place it has)
                    continue
                st = made[id(t)] = self._read(t, fresh=writes)
                producer[id(t)] = (
                    (weakref.ref(t), nid, st, i) if several else (weakref.ref(t), nid, st)
                )
            bases: set[int] = set()  # (views of one buffer written: the buffer read once)
            for t in written:
                st = made[id(t)] = made[id(t)] if id(t) in made else self._read(t, fresh=True)
                producer[id(t)] = (weakref.ref(t), nid, st)
                base = t._base
                if base is not None and id(base) not in bases:  # what it wrote, via the base
                    bases.add(id(base))
                    st = self._read(base, fresh=True)
                    self._set_producer(base, nid, st)
                    self._wrote_too(nid, st)
            if info.name not in UNINITIALIZED:  # whatever memory held before: no origin
                self.checks.append((nid, seen, [st for st in made.values() if st is not None]))
                if writes:
                    self.wrote.add(nid)
        if (
            plain
            and self.values
            and info.name not in UNINITIALIZED
            and _asks_for_non_finite((*args, *(kwargs or {}).values()))
        ):
            self.non_finite_args.add(nid)  # (an Inf it makes is asked for: no NaN origin)
        for t in outs:
            if type(t) is not Tensor:
                inner = inner_tensor(t)  # a DTensor's shard: read on its own by collectives
                if inner is not None:
                    self._set_producer(inner, nid, producer[id(t)][2])
        # (`F.relu(x, inplace=True)`: no write by its name, the written input handed back)
        inplace = not writes and node.attrs.get("inplace") is True
        if writes:
            if self.aliases:
                self._write_aliases(written, nid)
        elif inplace:
            if self.aliases:
                self._write_aliases(outs, nid)
        elif info.target in _ALIASING and len(outs) == 1 and len(inputs) == 1:
            self._alias(inputs[0], outs[0])
        if self.counter is not None:
            flops, ns = self.call_cost
            new = outs if writes or inplace else _not_among(outs, inputs)
            if writes and not outs:  # `x[i] = v` hands nothing back: what it wrote is x
                new = written
            node.cost = Cost(flops, output_bytes(new), ns)
        return nid

    def _alias(self, a: Tensor, b: Tensor) -> None:
        """`b` holds `a`'s memory and is no view of it (`a.detach()`, `a.data`): a write to
        one is a write to the other, which `_base` does not tell. All aliases of one tensor
        share one group (an alias of an alias that is gone still reaches the first), which
        a's base joins (a write to the base reaches an alias of its view)."""
        if a is b:
            return
        group = self._group(a)
        group.append((id(b), weakref.ref(b)))
        self.aliases[id(b)] = (group[-1][1], group)
        base = a._base
        if base is not None and (of_base := self._group(base)) is not group:
            of_base.append((id(b), group[-1][1]))
        if len(group) >= 16 and not len(group) & (len(group) - 1):
            self._prune(group)  # (at each power of two: amortised, `h.detach()` per step)

    def _group(self, t: Tensor) -> list[tuple[int, weakref.ref[Tensor]]]:
        """t's alias group, made with t alone in it if it has none."""
        entry = self.aliases.get(id(t))
        if entry is None or entry[0]() is not t:
            ref = weakref.ref(t)
            entry = self.aliases[id(t)] = (ref, [(id(t), ref)])
        return entry[1]

    def _prune(self, group: list[tuple[int, weakref.ref[Tensor]]]) -> None:
        """Drop the members of a group that are gone, and their entries."""
        live = []
        for key, ref in group:
            if ref() is not None:
                live.append((key, ref))
            elif (entry := self.aliases.get(key)) is not None and entry[0] is ref:
                del self.aliases[key]
        group[:] = live

    def _write_aliases(self, written: Sequence[Tensor], nid: int) -> None:
        """Call `nid` wrote `written`: the aliases of them or of their bases hold what it
        wrote, and so do those aliases' bases; their statistics are read afresh (an alias
        through `.data` keeps a version counter of its own: the old statistics look current)."""
        seen = {id(t) for t in written}
        for t in [*written, *(t._base for t in written if t._base is not None)]:
            entry = self.aliases.get(id(t))
            if entry is None or entry[0]() is not t:
                continue
            group = entry[1]
            self._prune(group)
            for _, ref in group:
                a = ref()
                if a is None or id(a) in seen:
                    continue
                seen.add(id(a))
                self._wrote_too(nid, self.produced(a, nid))
                base = a._base
                if base is not None and id(base) not in seen:
                    seen.add(id(base))
                    self._wrote_too(nid, self.produced(base, nid))

    def _call_attrs(self, info: FuncInfo, args: tuple, kwargs: Optional[dict]) -> dict[str, Any]:
        """A call's non-tensor arguments as attrs, shared by the calls that pass the same plain
        values (a model's 2,000 layer_norm calls: one map; nothing mutates a node's attrs)."""
        key = _plain_key(args, kwargs)
        if key is None:
            return _call_attrs(info, args, kwargs)
        known = self._attrs_at.get((id(info), key))
        if known is not None and known[0] is info:
            return known[1]
        attrs = _call_attrs(info, args, kwargs)
        if len(self._attrs_at) < _ATTRS_KEPT:
            self._attrs_at[(id(info), key)] = (info, attrs)  # (info kept: its id stays its own)
        return attrs

    def _wire_inputs(self, inputs: list[Tensor], nid: int) -> list[TensorStats]:
        """Edges for a call's input tensors into node `nid`; returns the statistics of those
        that have them. The common cases inline (a plain tensor with a live producer, not a
        constant, not a view of a tensor with one — a view of a tensor no call made, as
        F.linear's output on a 3-d input; a torch.nn layer's own weight, never drawn); the
        rest through _edge, which this must agree with."""
        producer, edges, constants = self.producer, self.edges, self.constants
        seen: list[TensorStats] = []
        own: Optional[frozenset[int]] = None
        for t in inputs:
            entry = producer.get(id(t))
            kind = type(t)
            if kind is Tensor:
                if (
                    entry is not None
                    and entry[0]() is t
                    and entry[1] not in constants
                    and (
                        (base := t._base) is None
                        or (made := producer.get(id(base))) is None
                        or made[0]() is not base
                    )
                ):
                    dt = _DTYPE_NAMES.get(t.dtype)
                    if dt is not None:
                        try:
                            shape: Optional[list[int]] = list(t.shape)
                        except RuntimeError:  # (a nested tensor of rows of other lengths)
                            shape = None
                        edge = Edge(entry[1], nid, shape, dt)
                        if len(entry) > 3:  # (one of several outputs of its call)
                            edge.output = entry[3]
                        edges.append(edge)
                        st = entry[2]
                        if st is not None:
                            self.edge_values.append((edge, st))
                            seen.append(st)
                        continue
            elif kind is _Parameter and (entry is None or entry[0]() is not t):
                if own is None:
                    own = self._own_ids()
                if id(t) in own:
                    continue  # as _constant decides: no node, no edge
            st = self._edge(t, nid)
            if st is not None:
                seen.append(st)
        return seen

    def _own_ids(self) -> frozenset[int]:
        """Ids of the weights of the innermost open module call if it is a torch.nn layer's
        (its submodules' too, as MultiheadAttention's out_proj): internals of the layer, not
        constants of the graph. Taken before the forward for the tree's modules (see
        _constant for a weight the forward binds)."""
        if not self.module_stack:
            return _NO_IDS
        return self._info(self.module_stack[-1]).own

    def _is_own(self, t: Tensor) -> bool:
        """`t` is a weight of the innermost open torch.nn layer: by the ids taken before the
        forward, or, for a weight the forward bound to it, by the layer's tables now."""
        if id(t) in self._own_ids():
            return True
        if not self.module_stack or type(t) is not _Parameter:
            return False
        module = self.module_stack[-1]
        return id(t) in _own_weights(module, self._info(module).torch_layer)

    def _distributed_call(self, info: FuncInfo, args: tuple, result: Any) -> Any:
        """A torch.ops call of torch.distributed's: a collective is the watch's node; the
        autograd wrapper of a collective's result stands for its input."""
        if info.distributed == collectives.PASSTHROUGH and args and isinstance(result, Tensor):
            src, st = self._source_stats(args[0]) if isinstance(args[0], Tensor) else (None, None)
            if src is not None:
                self._set_producer(result, src, st)
        return result

    # -- for collectives.py: nodes the dispatch-level watch records -----------------------------
    def add_op(
        self,
        name: str,
        target: str,
        attrs: dict[str, Any],
        site: Optional[Site],
        inside: Optional[Site],
    ) -> int:
        node = Node(len(self.nodes), "op", name, self._parent(), target, "", 0, site, attrs=attrs)
        node.inside = inside
        return self._add(node)

    def edge(self, t: Tensor, dst: int) -> tuple[Optional[int], Optional[TensorStats]]:
        return self._edge_from(t, dst)

    def add_edge(self, src: int, dst: int, shape: Optional[list[int]], dtype: str) -> None:
        self.edges.append(Edge(src, dst, shape, dtype))

    def source(self, t: Tensor) -> Optional[int]:
        return self._source(t)

    def produced(self, t: Tensor, nid: int, complete: bool = True) -> Optional[TensorStats]:
        """`t` made by collective node `nid` (`complete`: the watch waited for it; a recv's
        buffer is filled later, its values not read); returns its statistics when values are
        on. Read afresh: a c10d collective writes its output without bumping the tensor's
        version, so statistics cached for it (an `empty` buffer's) look current."""
        st = self.reader.read(t) if self.values and complete else None
        if st is not None:
            with contextlib.suppress(Exception):  # inference tensors keep no version
                st.version = t._version
        self._set_producer(t, nid, st)
        return st

    def collective_done(
        self,
        nid: int,
        seen: list[TensorStats],
        made: list[TensorStats],
        outs: list[Tensor],
        ns: int,
    ) -> None:
        """Values and costs of collective node `nid`: the NaN check of its inputs and outputs,
        and its output bytes and wall time, start to completion (no FLOPs: it moves data)."""
        if self.values:
            self.checks.append((nid, seen, made))
        if self.counter is not None:
            self.nodes[nid].cost = Cost(0, output_bytes(outs), ns)

    def _check_budget(self) -> None:
        stop = self.stopped
        if stop is None:
            if self.deadline is not None and time.perf_counter() > self.deadline:
                global _stopped
                _stopped = True
                stop = TraceTimeout("the trace ran past its time budget")
            elif self.cancel is not None and self.cancel():
                stop = TraceCancelled("the trace was cancelled")
            else:
                return
            self.stopped = stop
        else:
            stop = type(stop)(str(stop))
        # A forward that catches the stop (`except Exception`, to re-raise its own error or
        # take a fallback) goes on: its next call stops too (the count set to check again),
        # and the trace ends as stopped whatever the forward does then (_trace).
        self.count = (self.count // CHECK_EVERY + 1) * CHECK_EVERY - 1
        raise stop

    def _note_failed_call(
        self, exc: BaseException, info: FuncInfo, args: tuple, kwargs: dict, site: Any = _UNSEEN
    ) -> None:
        try:
            inputs = _unique(_tensors_in(args, kwargs))
            inputs = [t for t in inputs if not self._is_own(t)]  # (a layer's weights: not drawn)
        except Exception:
            inputs = []
        parent = self.stack[-1] if self.stack else None
        inside = None
        if site is _UNSEEN:
            site, inside = _sites()  # (a torch helper's call that failed: its line inside)
        self.pending = _PendingError(exc, parent, site, info.target, inputs, inside)

    # -- module calls ----------------------------------------------------------
    def _info(self, module: nn.Module) -> _ModuleInfo:
        info = self._module_infos.get(id(module))
        if info is None:
            info = self._module_infos[id(module)] = self._describe(module)
        return info

    def tensor_names(self) -> dict[int, str]:
        """Parameter and buffer paths by tensor id, for naming constants."""
        if self._tensor_names is None:
            names: dict[int, str] = {}
            for raw, m in self._named:
                prefix = self.paths.get(id(m), raw)
                dot = prefix + "." if prefix else ""
                for tensors in (m._parameters, m._buffers):
                    for name, t in tensors.items():
                        if t is not None and id(t) not in names:
                            names[id(t)] = dot + name
                            inner = inner_tensor(t) if type(t) is not _Parameter else None
                            if inner is not None:  # a DTensor parameter's shard (FSDP2, TP)
                                names[id(inner)] = dot + name
            # FSDP2's flat view of a parameter's shard, which its all-gather reads: the
            # parameter's values on this rank (a NaN there is the weight's)
            for data, param in fsdp2_shards(self._named):
                name = names.get(id(param))
                if name is not None and id(data) not in names:
                    names[id(data)] = name
                    self._shards.add(id(data))
            self._tensor_names = names
        return self._tensor_names

    def _describe(self, module: nn.Module) -> _ModuleInfo:
        cls = type(module)
        labels: list[str] = []
        if self.wrapping is not None:
            cls = self.wrapping.classes.get(id(module), cls)  # FSDP2's FSDPLinear: Linear
            labels = self.wrapping.labels.get(id(module), [])
        known = self._classes.get(cls)  # (a plain dict: a weak one makes a weakref per lookup)
        if known is None:
            known = self._classes[cls] = _class_info(cls)
        if known[1].startswith("torch.jit."):  # torch.jit.script'ed or torch.jit.trace'd
            known = _scripted_info(module, known)
            self.scripted.append(module)
        name, target, defn, torch_layer = known
        path = self.paths.get(id(module))
        if path is None:
            path = f"<{cls.__name__}>"  # a module outside the traced model's tree
        attrs: dict[str, Any] = {}
        if type(module).extra_repr is not nn.Module.extra_repr:
            try:
                text = module.extra_repr()
                split = self._extra_repr_cache.get((cls, text))
                if split is None:
                    split = split_extra_repr(text)
                    if torch_layer:  # `(32,), eps=1e-05`: the bare pieces are its arguments
                        split = _named_pieces(split, cls)
                    self._extra_repr_cache[(cls, text)] = split
                attrs = split
            except Exception:
                attrs = {}
        if labels:  # a new map: the cached extra_repr pieces are shared
            attrs = {**attrs, "wrapped_by": ", ".join(labels)}
        params = self.param_counts.get(id(module))
        if params is None:  # a module from outside the model's tree
            params = count_parameters(module)
        own = _own_weights(module, torch_layer)
        return _ModuleInfo(name, target, path, defn, params, attrs, torch_layer, own)

    def pre_hook(self, module: nn.Module, args: Any) -> None:
        counter = self.counter
        if counter is None:
            self._open(module)
            if self.one_call_on:
                call_of = ONE_CALL.get(type(module))
                if call_of is not None:
                    self._leave_mode(module, args, call_of)
            return
        start = _ns()
        overhead = self.overhead
        self._open(module)
        nid = self.stack[-1]
        self.nodes[nid].cost = Cost(0, 0, 0)
        self.module_clock[nid] = (start, overhead)
        if self.one_call_on:
            call_of = ONE_CALL.get(type(module))
            if call_of is not None:
                self._leave_mode(module, args, call_of)
                if self._outside is not None:  # the layer's call is counted and timed here
                    func = self._outside[1][0]
                    self._call_how = how = self._known(func)[1]
                    if how == COUNTED:
                        counter.flops = counter.ns = 0
                        counter.__enter__()
        self.overhead += _ns() - start
        self._call_start = _ns()

    def _open(self, module: nn.Module) -> None:
        self.count += 1
        if not self.count % CHECK_EVERY:
            self._check_budget()  # a forward of many module calls and few ops still stops
        key = id(module)
        shown = module
        if self.wrapping is not None:
            target = self.wrapping.target.get(key)
            if target is not None:  # a wrapper, or the module it wraps: one node for both
                if self.stack and self.merged.get(self.stack[-1]) == id(target):
                    self.stack.append(self.stack[-1])
                    self.module_stack.append(module)
                    self._late_close(module)
                    return
                shown = target
                key = id(target)
        # skip _open and the hook: the call's frame
        nid = self._module_node(shown, key, sys._getframe(2))
        self.module_stack.append(module)
        if shown is not module:
            self.merged[nid] = key
        self._late_close(module)

    def _module_node(self, shown: nn.Module, key: int, frame: Any) -> int:
        """A node for a call of module `shown` (`key`: what its calls are counted under),
        inside the innermost open call, at `frame`'s site; pushed on the stack."""
        info = self._module_infos.get(id(shown))
        if info is None:
            info = self._module_infos[id(shown)] = self._describe(shown)
        call = self.calls.get(key, 0)
        self.calls[key] = call + 1
        if info.path.startswith("<"):
            # modules outside the tree (a plain list's) share their path, `<Linear>`: their
            # calls are numbered under it, so that a comparison tells them apart
            call = self.outside_calls.get(info.path, 0)
            self.outside_calls[info.path] = call + 1
        nid = len(self.nodes)
        stack = self.stack
        parent = stack[-1] if stack else None
        if parent is not None:
            self.with_children.add(parent)
        # attrs are shared between calls of one module: nothing mutates a node's attrs
        self.nodes.append(
            Node(
                nid,
                "module",
                info.name,
                parent,
                info.target,
                info.path,
                call,
                frame_sites(frame)[0],
                info.defn,
                info.params,
                info.attrs,
            )
        )
        stack.append(nid)
        return nid

    def _late_close(self, module: nn.Module) -> None:
        key = id(module)
        if module._forward_hooks and key not in self.late_close:
            # torch runs global hooks before the module's own: close this call from a hook of
            # our own that runs after the user's, so their ops stay inside the box
            self.late_close[key] = module.register_forward_hook(
                self.late_post_hook, with_kwargs=True, always_call=True
            )

    def post_hook(self, module: nn.Module, args: Any, *rest: Any) -> None:
        # (kwargs, result) normally; (result,) when torch runs it for a forward that raised
        failed = len(rest) == 1
        outside = self._outside
        if outside is not None and outside[0] is module:
            end = _ns()
            self._outside = None
            counter = self.counter
            if counter is not None:
                flops = 0
                ns = end - self._call_start
                if self._call_how == COUNTED:
                    counter.__exit__(None, None, None)
                    flops = counter.flops
                    self.overhead += ns - counter.ns  # (the counter's dispatch, as above)
                    ns = counter.ns
                elif self._call_how == LINEAR:
                    flops = self._linear_flops(outside[1][1], outside[1][2])
                self.call_cost = (flops, ns)
            _push_mode(self)
            with _NO_TORCH_FUNCTION():
                self._record_one_call(outside[1], outside[2], rest, failed)
                if counter is not None:
                    self.overhead += _ns() - end  # the record is not the layer's time
                self._close(module, args, rest, failed)
            return
        if not failed and id(module) in self.late_close:
            return  # late_post_hook closes it
        with _NO_TORCH_FUNCTION():  # our own reads of tensors (.shape, ._base) are not ops
            if self._learning:
                learning = self._learning.pop(id(module), None)
                if learning is not None:
                    self._learn_one_call(module, learning, rest, failed)
            self._close(module, args, rest, failed)

    # -- one-call layers: recorded from the hooks, or whole from the call path --
    def _leave_mode(self, module: nn.Module, args: Any, call_of: Any) -> None:
        """A torch.nn layer whose forward is one call (one_call.py) runs without the mode;
        post_hook records that call as the mode would have. The first of each class in a
        trace runs under the mode, and the shortcut is taken only if its call matched."""
        learned = self._one_call.get(type(module), _UNSEEN)
        if learned is None or len(args) != 1 or type(args[0]) is not Tensor:
            return
        if not plain_call(module):
            return
        call = call_of(module, args[0])
        if call is None:
            return
        if not _mode_on():  # turned off by the user, or another thread's call: none recorded
            return
        if learned is _UNSEEN:
            self._learning[id(module)] = (self.stack[-1], call)
            return
        top = _pop_mode()
        if top is not self:  # a mode of the user's above ours: it must see the call
            _push_mode(top)
            return
        self._outside = (module, call, learned)

    def layer_call(self, module: nn.Module, how: tuple, args: tuple) -> Any:
        """A call of a one-call layer whose shortcut holds (`how`: its entry in `layers`),
        made whole from the lean call path: what pre_hook, the layer's forward without the
        mode and post_hook would do, in one frame (on a model of many small layers the calls
        between them cost as much as the recording). PASS, with nothing done, where
        _leave_mode would not take the shortcut."""
        x = args[0]
        if type(x) is not Tensor or "forward" in module.__dict__ or not _mode_on():
            return PASS
        call_of, sites, flops_how, own_forward = how
        call = call_of(module, x)
        if call is None:
            return PASS
        count = self.count + 1  # (the module call; its op is the next)
        # (either of its counts a multiple: a loop may put every one on the layer's op)
        if (count + 1) % CHECK_EVERY < 2:
            self._check_budget()
        top = _pop_mode()
        if top is not self:  # a mode of the user's above ours: it must see the call
            _push_mode(top)
            return PASS
        counter = self.counter
        opened = overhead = start = 0
        if counter is not None:
            opened, overhead = _ns(), self.overhead
        self.count = count
        nid = self._module_node(module, id(module), sys._getframe(1))  # (lean_call: skipped)
        self.module_stack.append(module)
        cost = None
        if counter is not None:
            cost = self.nodes[nid].cost = Cost(0, 0, 0)
            start = _ns()  # the layer's call (its FLOPs need no counter: see _learn_one_call)
            self.overhead += start - opened
        try:
            if own_forward is not None and type(module).forward is own_forward:
                func, cargs, ckwargs = call  # (what that forward would call, made here)
                try:
                    result = func(*cargs, **ckwargs) if ckwargs else func(*cargs)
                except Exception:
                    # again through the forward (the call writes nothing): the error's
                    # traceback as a plain run shows it, the layer's line in it; the first
                    # try is the recorder's, not the layer's time
                    if counter is not None:
                        again = _ns()
                        self.overhead += again - start
                        start = again
                    result = module.forward(x)
            else:
                result = module.forward(x)
        except Exception:
            failed_at = 0
            if counter is not None:
                failed_at = _ns()
                self.call_cost = (0, failed_at - start)
                self.module_clock[nid] = (opened, overhead)  # (_close times the module)
            _push_mode(self)
            with _NO_TORCH_FUNCTION():
                self._record_one_call(call, sites, (None,), True)
                if counter is not None:
                    self.overhead += _ns() - failed_at  # (the record of its error is not its time)
                self._close(module, args, (None,), True)
            raise
        rest = (None, result)
        end = 0
        if counter is not None:
            end = _ns()
            flops = self._linear_flops(call[1], call[2]) if flops_how == LINEAR else 0
            self.call_cost = (flops, end - start)
        _push_mode(self)
        with _NO_TORCH_FUNCTION():
            self._record_one_call(call, sites, rest, False)
            closed = 0
            if counter is not None:
                closed = _ns()
                self.overhead += closed - end  # the record is not the layer's time
            if not (self.stack and self.stack[-1] == nid and nid in self.with_children):
                if counter is not None:
                    self.module_clock[nid] = (opened, overhead)  # (_close times the module)
                self._close(module, args, rest, False)
                return result
            # its op recorded inside it: all _close would do is pop it, and time it
            self.module_stack.pop()
            self.stack.pop()
            if self.passed:
                self._end_passed(nid, result)
            if cost is not None:
                # the call's wall time less the recorder's own work inside it
                cost.time_ns = max(0, closed - opened - (self.overhead - overhead))
                self.overhead += _ns() - closed
        return result

    def _learn_one_call(
        self, module: nn.Module, learning: tuple[int, Call], rest: tuple, failed: bool
    ) -> None:
        """After the first call of a one-call class under the mode: the shortcut holds for
        the class if that call recorded exactly the node, and the output, the shortcut would."""
        if failed:
            return  # decided by a later call
        nid, (func, args, kwargs) = learning
        nodes = self.nodes
        node = nodes[-1]
        info, how = self._known(func)
        result = rest[1]
        entry = self.producer.get(id(result))
        same = (
            len(nodes) == nid + 2
            and node.kind == "op"
            and node.parent == nid
            and node.name == info.name
            and node.target == info.target
            and entry is not None
            and entry[1] == node.id
        )
        if same:
            inputs = _tensors_in(args, kwargs)
            expected = (
                self._call_attrs(info, args, kwargs)
                if kwargs or len(inputs) != len(args) or not _only_tensors(args)
                else {}
            )
            same = node.attrs == expected
        sites = self._one_call[type(module)] = (node.site, node.inside) if same else None
        if sites is not None and (self.counter is None or how == FREE or how == LINEAR):
            # (a call whose FLOPs the counter must see keeps the hooks' way)
            cls = type(module)
            self.layers[cls] = (ONE_CALL[cls], sites, how, TORCH_FORWARD.get(cls))

    def _record_one_call(self, call: Call, sites: Any, rest: tuple, failed: bool) -> None:
        func, args, kwargs = call
        info = self._known(func)[0]
        self.count += 1
        if failed:
            exc = sys.exc_info()[1]
            if exc is not None:
                self._note_failed_call(exc, info, args, kwargs or {}, sites[0])
            return
        result = rest[1]
        if not isinstance(result, Tensor):
            return
        try:
            if (
                self.counter is None
                and not self.values
                and type(result) is Tensor
                and not info.writes_first_arg
            ):
                self._record_layer_op(info, args, kwargs, result, sites)
                return
            self._record_call(info, args, kwargs, [result], sites)
        except Exception:  # as _after_call: a bare node rather than a failed trace
            self._add(
                Node(len(self.nodes), "op", info.name, self._parent(), info.target, "", 0, sites[0])
            )

    def _record_layer_op(
        self, info: FuncInfo, args: tuple, kwargs: Optional[dict], result: Tensor, sites: Any
    ) -> None:
        """_record_call for a one-call layer's call in a structure-only trace: one plain tensor
        made from `args[0]`, the layer's own weights and plain values beside it (one_call.py
        builds no other call), nothing written. Records exactly what _record_call would, in
        fewer steps: a model of many small layers makes thousands of these calls."""
        x = args[0]
        weights: list[Tensor] = []
        count = 1
        for a in args[1:] if not kwargs else (*args[1:], *kwargs.values()):
            if isinstance(a, Tensor):
                if a is x:  # (a layer called on its own weight: the general way)
                    self._record_call(info, args, kwargs, [result], sites)
                    return
                weights.append(a)
                count += 1
        nodes = self.nodes
        nid = len(nodes)
        parent = self._parent()
        node = Node(nid, "op", info.name, parent, info.target, "", 0, sites[0])
        if sites[1] is not None:
            node.inside = sites[1]
        if count != len(args) or kwargs:
            node.attrs = self._call_attrs(info, args, kwargs)
        nodes.append(node)
        self._wire_inputs(_unique([x, *weights]) if weights else [x], nid)
        producer = self.producer
        before = producer.get(id(result))
        if before is not None and before[0]() is result and not node.attrs.get("inplace"):
            self._passed_through(id(result), before, nid)  # (dropout in eval: x handed back)
        producer[id(result)] = (weakref.ref(result), nid, None)

    def abandon_one_call(self) -> None:
        """A layer's call left the shortcut without its post hook (an exception that is not
        an Exception, as KeyboardInterrupt): its FLOP counter comes off the stack."""
        if self._outside is not None:
            self._outside = None
            if self.counter is not None and self._call_how == COUNTED:
                with contextlib.suppress(Exception):
                    self.counter.__exit__(None, None, None)

    def late_post_hook(self, module: nn.Module, args: Any, *rest: Any) -> None:
        with _NO_TORCH_FUNCTION():
            self._close(module, args, rest, len(rest) == 1)

    def describe_sized(self) -> None:
        """The forward sized lazy layers: their boxes get the parameter counts and settings
        (`in_features=5`, not 0) it gave them, and keep the class the user wrote."""
        modules = [m for _, m in self._named]
        self.param_counts = counts = parameter_counts(self.root, modules)
        sized = {id(m) for m in self.unsized}
        infos = self._module_infos
        for m in modules:
            info = infos.get(id(m))
            if info is not None:
                attrs = self._describe(m).attrs if id(m) in sized else info.attrs
                infos[id(m)] = dataclasses.replace(info, params=counts[id(m)], attrs=attrs)
        by_path = {info.path: info for info in infos.values()}
        for node in self.nodes:
            info = by_path.get(node.path) if node.kind == "module" else None
            if info is not None:
                node.params, node.attrs = info.params, info.attrs

    def remove_late_hooks(self) -> None:
        for handle in self.late_close.values():
            handle.remove()  # a module's own handle also clears its with_kwargs/always_call entries
        self.late_close.clear()

    def time_open_calls(self) -> None:
        """Module calls an error from outside left open (OutOfTime, a BaseException: torch
        runs no post hook for it): timed up to now, as _close times a call."""
        if self.counter is None:
            return
        end = _ns()
        for nid in self.stack:
            opened = self.module_clock.pop(nid, None)
            cost = self.nodes[nid].cost
            if opened is not None and cost is not None:
                cost.time_ns = max(0, end - opened[0] - (self.overhead - opened[1]))

    def _close(self, module: nn.Module, args: Any, rest: tuple, failed: bool) -> None:
        stack = self.module_stack
        if not stack or (stack[-1] is not module and module not in stack):
            return
        if self.counter is None:
            self._close_call(module, args, rest, failed)
            return
        end = _ns()
        overhead = self.overhead
        for nid in self._close_call(module, args, rest, failed):
            opened = self.module_clock.pop(nid, None)
            cost = self.nodes[nid].cost
            if opened is not None and cost is not None:
                # the call's wall time less the recorder's own work inside it
                cost.time_ns = max(0, end - opened[0] - (overhead - opened[1]))
        self.overhead += _ns() - end

    def _close_call(self, module: nn.Module, args: Any, rest: tuple, failed: bool) -> list[int]:
        """Pop `module`'s call (and calls left open inside it); returns their node ids."""
        if failed:
            exc = sys.exc_info()[1]
            if exc is not None and (self.pending is None or self.pending.exc is not exc):
                site, inside = traceback_site(exc.__traceback__)
                self.pending = _PendingError(exc, self.stack[-1], site, "", [], inside)
        nid = -1
        closed: list[int] = []
        while self.module_stack:
            top = self.module_stack.pop()
            nid = self.stack.pop()
            closed.append(nid)
            if top is module:
                break
        if self.stack and self.stack[-1] == nid:
            # the wrapped module of a wrapper's call: the wrapper closes (and times) the node
            return [c for c in closed if c != nid]
        if self.passed:
            result = rest[1] if not failed and len(rest) == 2 else None
            for c in closed:  # (innermost first; calls left open inside returned nothing)
                self._end_passed(c, result if c == nid else None)
        if nid not in self.with_children:
            if failed:
                # Nothing recorded inside before it raised. If the error escapes, the error node
                # lands inside it; if user code catches it, it stays a leaf: decide at the end.
                sources = [(self._source(t), t) for t in _unique(iter_tensors(args))]
                self.failed_leaves.append((nid, sources))
            else:
                self._wire_leaf_module(nid, args, rest[0], rest[1], _opaque(module))
        return closed

    def _wire_leaf_module(
        self, nid: int, args: Any, kwargs: Any, result: Any, opaque: bool = False
    ) -> None:
        """A module call with nothing recorded inside (nn.Identity): data flows through its
        box. An `opaque` box (TorchScript: its ops can't be seen) may make NaN itself."""
        inputs = _tensors_in(args, kwargs)
        seen: list[TensorStats] = []
        for t in _unique(inputs) if len(inputs) > 1 else inputs:
            st = self._edge(t, nid)
            if st is not None:
                seen.append(st)
        outs = [result] if isinstance(result, Tensor) else _tensors_in((result,), None)
        made: list[TensorStats] = []
        for t in outs:
            before = self.producer.get(id(t))
            if before is not None and before[0]() is t:  # nn.Identity: its input handed back
                self._passed_through(id(t), before, nid)
            st = self._stats(t)
            self._set_producer(t, nid, st)
            if st is not None:
                made.append(st)
        if made and opaque:  # (any other leaf computed nothing: it hands tensors on)
            self.checks.append((nid, seen, made))
        cost = self.nodes[nid].cost
        if cost is not None:
            cost.bytes = output_bytes(_not_among(_unique(outs), inputs))

    # -- the end ---------------------------------------------------------------
    def finish_values(self) -> None:
        """Complete the statistics read in batches, put them on the edges, find the NaN
        origin: the first op whose output holds NaN/Inf while none of its inputs does.

        An infinity the model asks for (`masked_fill(mask, float('-inf'))`, a causal mask:
        a non-finite argument of the call, or a buffer holding -inf) is no origin, nor is an
        op that only carries it on (Inf in, Inf out); an op that makes NaN of it (softmax of
        a row all -inf) is one, and so is a parameter or buffer holding NaN, or a parameter
        holding Inf. An infinity whose non-finite values die out before the outputs is passed
        over as an asked-for one (T5's log(0) in its position buckets, turned into an
        integer; a -inf mask made with log): a NaN never is."""
        self.reader.flush()
        for edge, st in self.edge_values:
            edge.stats, edge.hist = st.stats, st.hist
        # what an in-place call wrote, read through another tensor: where it goes, so do the
        # call's outputs (it is not an infinity that dies out), and asked-for Inf stays asked
        later: dict[int, list[TensorStats]] = {}
        for nid, st in self.wrote_later:
            if nid in self.wrote:
                later.setdefault(nid, []).append(st)
        checks: list[tuple[int, list[TensorStats], list[TensorStats]]] = []
        for check in self.checks:  # (loops, not any(): 8,000 checks of mostly finite tensors)
            for st in check[2]:
                if st.nonfinite:
                    checks.append(check)
                    break
        reaching = self._reaching_outputs(checks, later)
        # id() of the statistics of tensors holding asked-for Inf; and of what a call
        # overwrote unread (a cache holding NaN until filled is no bad input of the fill)
        asked: set[int] = {
            id(st) for k in self._overwritten if (st := self._const_stats.get(k)) is not None
        }
        for nid, ins, outs in checks:
            bad = [st for st in ins if st.nonfinite]
            if any(id(st) not in asked for st in bad) and not self._made_nan_too(nid, bad, outs):
                continue  # made from non-finite values: their origin came first
            nan = any(_count(st, "nan") for st in outs)
            node = self.nodes[nid]
            # (a buffer of -inf is a mask too; a weight holding NaN or Inf is an origin)
            asks = (
                node.kind == "constant" and nid not in self.weight_constants
            ) or nid in self.non_finite_args
            also = later.get(nid, ())
            dies = reaching is not None and not any(id(st) in reaching for st in (*outs, *also))
            if not nan and (bad or asks or dies):
                asked.update(id(st) for st in (*outs, *also))  # the asked-for Inf, carried on
                continue
            self.nan_origin = nid
            break
        self.edge_values.clear()
        self.checks.clear()
        self.wrote.clear()
        self.wrote_later.clear()
        self.non_finite_args.clear()
        self.unwritten.clear()

    def _made_nan_too(self, nid: int, bad: list[TensorStats], outs: list[TensorStats]) -> bool:
        """Whether op `nid`, given non-finite values, made NaN of finite ones too: a pointwise
        op (each value from one place of each input, none broadcast) whose output holds more
        NaN than its inputs held NaN and Inf (log of a batch where one sample was NaN)."""
        node = self.nodes[nid]
        if node.kind != "op" or len(outs) != 1 or not pointwise(node.name):
            return False
        size = _count(outs[0], "numel")
        if not size or any(_count(st, "numel") != size for st in bad):
            return False
        carried = sum(_count(st, "nan") + _count(st, "inf") for st in bad)
        return _count(outs[0], "nan") > carried

    def _reaching_outputs(
        self,
        checks: list[tuple[int, list[TensorStats], list[TensorStats]]],
        later: dict[int, list[TensorStats]],
    ) -> Optional[set[int]]:
        """id() of the statistics of the non-finite tensors whose values reach an output
        through non-finite tensors (`checks`: the calls that made non-finite values, in
        order; `later`: what in-place calls wrote, read through other tensors); None when
        the forward has no outputs to reach (it raised)."""
        outputs = self.output_stats
        if not outputs:
            return None
        reaching = {id(st) for st in outputs if st is not None and st.nonfinite}
        for nid, ins, outs in reversed(checks):
            if any(id(st) in reaching for st in outs) or any(
                id(st) in reaching for st in later.get(nid, ())
            ):
                reaching.update(id(st) for st in ins if st.nonfinite)
        return reaching

    def add_inputs(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        for name, t in argument_tensors(fn, args, kwargs):
            entry = self.producer.get(id(t))
            # (its own node: an argument that views another, `model(x, x[0])`, is an input
            # of its own; the same tensor given twice is one)
            if entry is None or entry[0]() is not t:
                nid = self._add(Node(len(self.nodes), "input", name))
                self._set_producer(t, nid, self._stats(t))

    def wire_failed_leaves(self) -> None:
        """Inputs of module calls that raised (and were caught) with nothing recorded inside."""
        for nid, sources in self.failed_leaves:
            if nid in self.with_children:
                continue
            for src, t in sources:
                if src is not None:
                    self.edges.append(Edge(src, nid, shape_of(t), dtype_name(t)))

    def add_outputs(self, outputs: list[tuple[str, Tensor]]) -> None:
        """The forward's outputs (`output_tensors`, named as it returned them)."""
        self.output_stats = []
        for name, t in outputs:
            nid = self._add(Node(len(self.nodes), "output", name))
            self.output_stats.append(self._edge(t, nid))

    def add_error(self, exc: BaseException) -> ErrorInfo:
        pending = self.pending if self.pending is not None and self.pending.exc is exc else None
        if pending is None:
            site, inside = traceback_site(exc.__traceback__)
            pending = _PendingError(exc, None, site, "", [], inside)
        nid = len(self.nodes)
        message = message_of(exc)
        # the user's line that called the failing layer; the library's line stays as `inside`
        site, inside = pending.site, pending.inside
        user = user_traceback_site(exc.__traceback__)
        if user is not None and (site is None or (user.file, user.line) != (site.file, site.line)):
            site, inside = user, site
        self._add(
            Node(
                nid,
                "error",
                type(exc).__name__,
                pending.parent,
                pending.target,
                site=site,
                attrs={"message": attr_value(message)},
                inside=inside,
            )
        )
        if pending.parent is not None:
            self.with_children.add(pending.parent)
        self.stack = [pending.parent] if pending.parent is not None else []
        self.module_stack = []
        for t in pending.inputs:
            self._edge(t, nid)  # outside tensors become constants beside the error node
        if not pending.inputs and pending.parent is not None:
            # a module call that raised before anything inside it (a pre-hook of its own):
            # what it was given goes into the error, now inside it (wire_failed_leaves skips it)
            for leaf, sources in self.failed_leaves:
                if leaf == pending.parent:
                    for src, t in sources:
                        if src is not None:
                            self.edges.append(Edge(src, nid, shape_of(t), dtype_name(t)))
                    break
        return ErrorInfo(type(exc).__name__, message, nid, traceback_sites(exc.__traceback__))


def _sites() -> tuple[Optional[Site], Optional[Site]]:
    return frame_sites(sys._getframe(3))  # skip _sites, its caller and the mode frame


def _own_weights(module: nn.Module, torch_layer: bool) -> frozenset[int]:
    """Ids of a torch.nn layer's parameters and buffers, its submodules' included; none for
    any other module (a user's module's weights are constants of the graph where used)."""
    if not torch_layer:
        return _NO_IDS
    if not module._modules and not module._buffers:  # most layers: one table, no None in it
        params = module._parameters
        if not params:  # an activation
            return _NO_IDS
        ids = frozenset(map(id, params.values()))
        if _NONE_ID not in ids:
            return ids
    return frozenset(
        id(t)
        for m in (module.modules() if module._modules else (module,))
        for table in (m._parameters, m._buffers)
        for t in table.values()
        if t is not None
    )


def _named_pieces(attrs: dict[str, Any], cls: type) -> dict[str, Any]:
    """A torch.nn layer's extra_repr pieces with the bare ones ("0", "1": its first arguments,
    as `LayerNorm((32,), eps=…)` prints them) named after its constructor's positional
    parameters (`normalized_shape`), in their order."""
    if not any(key.isdigit() for key in attrs):
        return attrs
    names = _positional_names(cls)
    named: dict[str, Any] = {}
    for key, value in attrs.items():
        name = names[int(key)] if key.isdigit() and int(key) < len(names) else key
        named[key if name in attrs else name] = value
    return named


def _positional_names(cls: type) -> list[str]:
    try:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # (self)
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in positional]


# weak: a user's class re-imported by the runner must not keep its old module (and models) alive
_class_infos: weakref.WeakKeyDictionary[type, tuple[str, str, Optional[Site], bool]] = (
    weakref.WeakKeyDictionary()
)


def _class_info(cls: type) -> tuple[str, str, Optional[Site], bool]:
    info = _class_infos.get(cls)
    if info is None:
        info = _class_infos[cls] = (
            cls.__name__,
            f"{cls.__module__}.{cls.__qualname__}",
            class_definition(cls),
            # containers (Sequential, ModuleList) own no weights of their own
            cls.__module__.startswith("torch.nn.")
            and cls.__module__ != "torch.nn.modules.container",
        )
    return info


_MANGLED = re.compile(r"___torch_mangle_\d+\.")


def _scripted_info(
    module: nn.Module, known: tuple[str, str, Optional[Site], bool]
) -> tuple[str, str, Optional[Site], bool]:
    """A TorchScript module (torch.jit.script or trace): named after the class it was made
    from (TorchScript keeps its qualified name), defined where that class is if it is
    loaded, else as `known`."""
    try:
        compiled: Any = module._c
        qualname = str(compiled._type().qualified_name()).removeprefix("__torch__.")
        qualname = _MANGLED.sub("", qualname)  # a class compiled twice: ___torch_mangle_1.Net
        name = str(module.original_name)
    except Exception:
        return known
    where, _, attr = qualname.rpartition(".")
    cls = getattr(sys.modules.get(where), attr, None)
    if isinstance(cls, type):
        info = _class_info(cls)
        return name, info[1], info[2], info[3]
    return name, qualname, None, qualname.startswith("torch.nn.")


_HASHABLE = frozenset(
    type(f) for f in (torch.add, torch.Tensor.add, torch.Tensor.__add__, torch.nn.functional.relu)
)


# calls whose output holds their input's memory without being a view of it (no `_base`)
_ALIASING = frozenset(("Tensor.detach", "torch.detach", "Tensor.data"))


# what torch says when a forward differentiates, or hooks a tensor, under no_grad
_NEEDS_AUTOGRAD = (
    "does not require grad",
    "doesn't require grad",
    "that doesn't require gradient",
    "does not have a grad_fn",
)


def _needs_autograd(error: BaseException) -> bool:
    """Whether the forward raised for want of autograd (see _NEEDS_AUTOGRAD)."""
    if not isinstance(error, RuntimeError):
        return False
    text = message_of(error)  # (safe: an exception whose str() raises says so)
    return any(s in text for s in _NEEDS_AUTOGRAD)


def _any_nested(args: Any, kwargs: Optional[dict]) -> bool:
    """Whether a nested tensor is among a call's arguments."""
    with _NO_TORCH_FUNCTION():
        return any(t.is_nested for t in _tensors_in(args, kwargs))


def _tensors_in(args: Any, kwargs: Optional[dict]) -> list[Tensor]:
    """Tensors among call arguments: flat, in lists/tuples, or nested deeper (rare)."""
    out: list[Tensor] = []
    for a in (*args, *kwargs.values()) if kwargs else args:
        # exact types first: isinstance on a scalar costs ~4× a type lookup (Tensor's
        # metaclass), and a layer's call passes several (layer_norm: a shape, an eps)
        kind = type(a)
        if kind is Tensor or kind is _Parameter:
            out.append(a)
        elif kind in _SCALARS:
            continue
        elif isinstance(a, Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            for b in a:
                kind = type(b)
                if (
                    kind is Tensor
                    or kind is _Parameter
                    or (kind not in _SCALARS and isinstance(b, Tensor))
                ):
                    out.append(b)
                elif kind not in _SCALARS and isinstance(b, (list, tuple, dict)):
                    out.extend(iter_tensors(b))
        elif isinstance(a, dict):
            out.extend(iter_tensors(a))
    return out


def _only_tensors(args: tuple) -> bool:
    """Every argument a tensor (as many tensors as arguments can also be a list of two
    beside a dim: `torch.stack([x, y], 0)`, whose dim is an attr)."""
    for a in args:
        if type(a) is not Tensor and type(a) is not _Parameter and not isinstance(a, Tensor):
            return False
    return True


def _not_among(outs: list[Tensor], inputs: list[Tensor]) -> list[Tensor]:
    """The outputs a call made: not an input it handed back (nn.Identity, `x.contiguous()`
    of a contiguous x), which is no new memory."""
    if len(outs) == 1:  # most calls: no generator per call
        out = outs[0]
        for t in inputs:
            if t is out:
                return []
        return outs
    return [t for t in outs if not any(t is i for i in inputs)]


def _unique(tensors: Any) -> list[Tensor]:
    if type(tensors) is list:  # most calls pass two or three: compared pairwise, no set
        n = len(tensors)
        if n == 2:
            return tensors if tensors[0] is not tensors[1] else tensors[:1]
        if n == 3:
            x, y, z = tensors
            if x is not y and x is not z and y is not z:
                return tensors
        elif n < 2:
            return tensors
    seen: set[int] = set()
    out: list[Tensor] = []
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


# in-place calls that write their first argument whole without reading it: its values before
# are no input of theirs (a cache holding NaN until filled is no NaN origin)
_OVERWRITES = frozenset(
    (
        "copy_",
        "fill_",
        "zero_",
        "normal_",
        "uniform_",
        "random_",
        "bernoulli_",
        "exponential_",
        "geometric_",
        "log_normal_",
        "cauchy_",
        "set_",
        "_foreach_copy_",
        "_foreach_zero_",
    )
)

_ATTRS_KEPT = 4096  # distinct argument lists remembered per trace
_PLAIN_TYPES = frozenset((int, float, bool, str, type(None)))
# scalar arguments: never tensors, never holding any (see _tensors_in)
_SCALARS = _PLAIN_TYPES | {torch.dtype, torch.device}


def _plain_key(args: tuple, kwargs: Optional[dict]) -> Optional[tuple]:
    """A key that equals another call's only when their non-tensor arguments render the same
    attrs: each value with its type (1, 1.0 and True are equal keys but not equal attrs),
    tensors as their position; None when an argument is anything else (see _is_plain)."""
    key: list[Any] = []
    for a in args:
        if type(a) is Tensor or type(a) is _Parameter:
            key.append(None)
        elif _is_plain(a):
            key.append((type(a), a))
        else:
            return None
    if kwargs:
        for k, a in kwargs.items():
            if type(a) is Tensor or type(a) is _Parameter:
                key.append(k)
            elif _is_plain(a):
                key.append((k, type(a), a))
            else:
                return None
    return tuple(key)


def _is_plain(a: Any) -> bool:
    """An argument whose value and type say how it renders: a scalar, a string, None, a tuple
    of ints; not a float zero (0.0 and -0.0 are equal but render differently)."""
    kind = type(a)
    if kind is float:
        return bool(a)
    if kind is not tuple:
        return kind in _PLAIN_TYPES
    if len(a) == 1:  # most shapes a layer passes (layer_norm's): no generator
        return type(a[0]) is int
    return all(type(x) is int for x in a)


def _call_attrs(info: FuncInfo, args: tuple, kwargs: Optional[dict]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    names = overload_names(info, args) if info.overloads else info.arg_names
    if names and names[-1].startswith("*"):
        last = len(names) - 1
        names = names[:-1] + (names[-1][1:],)
        if len(args) > last + 1 or (len(args) == last + 1 and isinstance(args[last], int)):
            args = (*args[:last], tuple(args[last:]))  # x.view(1, 2, 3) → size=[1, 2, 3]
    for i, a in enumerate(args):
        if not isinstance(a, Tensor):
            v = attr_value(a)
            if v is not ...:
                attrs[names[i] if i < len(names) else f"arg{i}"] = v
    for k, a in (kwargs or {}).items():
        if not isinstance(a, Tensor):
            v = attr_value(a)
            if v is not ...:
                attrs[k] = v
    return attrs


def parameter_counts(model: nn.Module, modules: list[nn.Module]) -> dict[int, int]:
    """Recursive parameter count of every module in the tree, each parameter counted once."""
    # (a lazy layer's parameter its forward has not sized yet: 0, not an error)
    with _NO_TORCH_FUNCTION():
        seen: set[int] = set()
        shared = False
        everything = 0
        counts: dict[int, int] = {}
        for m in reversed(modules):  # pre-order reversed: children before their parent
            total = 0
            params = m._parameters
            if params:
                for p in params.values():
                    if p is None:
                        continue
                    if id(p) in seen:
                        shared = True
                        continue
                    seen.add(id(p))
                    total += p.numel()
                everything += total
            children = m._modules
            if children:
                for child in children.values():
                    if child is not None:
                        known = counts.get(id(child))
                        if known is None:  # registered earlier elsewhere: not counted yet
                            shared = True
                        else:
                            total += known
            counts[id(m)] = total
        if shared or counts[id(model)] != everything:
            # tied weights or a module registered twice (`self.seq = Sequential(self.fc, …)`):
            # count each subtree exactly
            counts = _counts_of_sets(modules)
        return counts


def _counts_of_sets(modules: list[nn.Module]) -> dict[int, int]:
    """parameter_counts where a parameter or module is in the tree twice: each module's
    parameters as a set of ids, children's sets joined into their parent's (one walk, not
    a walk of every subtree)."""
    below: dict[int, set[int]] = {}
    sizes: dict[int, int] = {}
    counts: dict[int, int] = {}

    def add(into: set[int], p: Optional[Tensor]) -> None:
        if p is not None:
            into.add(id(p))
            if id(p) not in sizes:
                sizes[id(p)] = p.numel()

    for m in reversed(modules):  # pre-order reversed: children before their parent
        ids: set[int] = set()
        for p in m._parameters.values():
            add(ids, p)
        for child in m._modules.values():
            if child is None:
                continue
            inner = below.get(id(child))
            if inner is None:  # registered twice, and first met further on: walk it
                inner = set()
                for p in child.parameters():
                    add(inner, p)
            ids |= inner
        below[id(m)] = ids
        counts[id(m)] = sum(map(sizes.__getitem__, ids))
    return counts


READ_AHEAD_LIMIT = 1 << 28  # elements: 1 GB of float32, a few hundred ms on one core


def read_ahead(model: nn.Module, limit: int = READ_AHEAD_LIMIT) -> int:
    """Do ahead (while the user picks the model from a list) what a first trace of `model`
    with values does once and then keeps: each module class's facts, and the statistics of
    the weights no torch.nn layer owns, those its forward uses directly (the graph's
    constants; read up to `limit` elements). Returns how many elements were read."""
    owned: set[int] = set()
    for m in model.modules():
        if _class_info(type(m))[3]:  # a torch.nn layer: its weights are its own, never read
            owned.update(_own_weights(m, True))
    used_directly = [t for t in (*model.parameters(), *model.buffers()) if id(t) not in owned]
    return weight_stats.read_ahead(used_directly, limit)


def model_info(
    model: nn.Module, params: Optional[int] = None, modules: Optional[list[nn.Module]] = None
) -> ModelInfo:
    cls = type(model)
    first = next((p for m in modules or () for p in m._parameters.values() if p is not None), None)
    if modules is None:
        first = next(iter(model.parameters()), None)
    return ModelInfo(
        cls.__name__,
        f"{cls.__module__}.{cls.__qualname__}",
        params if params is not None else count_parameters(model),
        str(first.device) if first is not None else "",
        dtype_name(first) if first is not None else "",
    )


def trace_call(
    model: nn.Module,
    args: tuple = (),
    kwargs: Optional[dict[str, Any]] = None,
    *,
    no_grad: bool = True,
    time_budget: Optional[float] = None,
    cancel: Optional[Callable[[], bool]] = None,
    raise_errors: bool = True,
    values: bool = True,
    costs: bool = True,
    local_collectives: bool = False,
) -> Graph:
    """Trace `model(*args, **kwargs)`. With raise_errors, a forward that raises re-raises
    the original exception with the partial graph on it as `exc.torchscope_graph`.

    `values`: statistics of every tensor (`Edge.stats`, `Edge.hist`) and the NaN origin;
    `costs`: FLOPs, output bytes and time of every call (`Node.cost`).

    With local_collectives, the forward's collectives are recorded but not run: each is done
    on this rank alone (collectives.py), for a trace while the other ranks are elsewhere
    (paused at a breakpoint)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"torchscope.trace needs an nn.Module, got {type(model).__name__}")
    if not isinstance(args, (tuple, list)):
        # (a tensor would be unpacked row by row into the forward's arguments)
        raise TypeError(
            f"args is a tuple of the forward's arguments: (x,), not a {type(args).__name__}"
        )
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(
            f"kwargs is a dict of the forward's keyword arguments, not a {type(kwargs).__name__}"
        )
    if time_budget is not None and (
        isinstance(time_budget, bool) or not isinstance(time_budget, numbers.Real)
    ):
        raise TypeError(
            "time_budget is a number of seconds (None: no budget), not a "
            f"{type(time_budget).__name__}"
        )
    if cancel is not None and not callable(cancel):
        raise TypeError(
            "cancel must be a function that says whether to stop (None: none), not a "
            f"{type(cancel).__name__}"
        )
    if time_budget is not None and not time_budget > 0:  # (nan is not > 0 either)
        raise ValueError(
            f"time_budget must be more than 0 seconds (None: no budget), not {time_budget}"
        )
    kwargs = dict(kwargs or {})
    global _finishing
    finishing_before = _finishing
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a trace allocates many small objects; collections would dominate
    try:
        named, depth = module_tree(model)
        with _stack_for(depth), warnings_at_user_lines():
            run = functools.partial(
                _trace,
                model,
                named,
                args,
                kwargs,
                no_grad,
                time_budget,
                cancel,
                raise_errors,
                values,
                costs,
                local_collectives,
            )
            # torch.cond and its kind load torch.compile during the forward and compile the
            # recorder with it, which fails; torch.compile is then loaded, and a second run
            # has it run everything eagerly (wrappers.compiled_run_eagerly). The first run
            # left nothing behind, as every trace.
            if compiler_loaded():
                return run()
            try:
                with warnings.catch_warnings():  # (its complaints about the recorder's code)
                    warnings.filterwarnings("ignore", module=r"torch\._dynamo")
                    graph = run()
            except Exception as exc:
                if type(exc).__name__ != _COMPILED_OP_FAILED:
                    raise
                return run()
            failed = graph.error is not None and graph.error.type == _COMPILED_OP_FAILED
            return run() if failed else graph
    finally:
        _finishing = finishing_before
        if gc_was_enabled:
            gc.enable()


_COMPILED_OP_FAILED = "UncapturedHigherOrderOpError"


def _trace(
    model: nn.Module,
    named: list[tuple[str, nn.Module]],
    args: tuple,
    kwargs: dict[str, Any],
    no_grad: bool,
    time_budget: Optional[float],
    cancel: Optional[Callable[[], bool]],
    raise_errors: bool,
    values: bool,
    costs: bool,
    local_collectives: bool = False,
) -> Graph:
    start = time.perf_counter()
    state = ModelState(named)
    state.keep_inputs(args, kwargs)
    state.keep_held()
    deadline = start + time_budget if time_budget else None
    rec = Recorder(model, named, state, deadline, cancel, values, costs, find_wrappers(named))
    wrapped, _ = unwrap(model)  # inputs are named after the wrapped model's forward
    rec.add_inputs(wrapped.forward, args, kwargs)
    rank = rank_and_size()
    if rank is not None:
        rec.watch = collectives.CollectiveWatch(
            rec, Recorder.__torch_function__.__code__, local_collectives
        )
    handles = [
        nn.modules.module.register_module_forward_pre_hook(rec.pre_hook),
        nn.modules.module.register_module_forward_hook(
            rec.post_hook, with_kwargs=True, always_call=True
        ),
    ]
    state.hooks_from_here()  # (the recorder's late hooks are removed before the restore)
    rec.one_call_on = (
        ONE_CALL_SHORTCUT
        and rec.wrapping is None
        and rec.watch is None
        and torch_hooks_only_ours(len(handles))
    )
    error: Optional[BaseException] = None
    outputs: list[tuple[str, Tensor]] = []
    warnings: list[str] = []
    try:
        with (
            torch.no_grad() if no_grad else contextlib.nullcontext(),
            compiled_run_eagerly(named),
            fsdp_state_kept(named),
            state.frees_watched(),
            scripted_functions_recorded(rec),
            collectives.watching(rec.watch),
            lean_calls(rec.pre_hook, rec.post_hook, len(handles), rec.layer_call, rec.layers),
        ):
            rec.__enter__()
            global _forwards, _forwards_begun, _finishing, _stopped
            _forwards += 1
            _forwards_begun += 1
            _stopped = False
            _outside[0] = None
            try:
                result = model(*args, **kwargs)
            finally:
                _finishing += 1  # (until trace_call returns)
                _forwards -= 1
                _remove_mode(rec)
            # named now: the restore gives an object among the inputs (a KV cache the
            # forward returns again) its tensors from before back
            outputs = list(output_tensors(result))
    except Exception as exc:  # noqa: BLE001 - the graph shows it; re-raised below
        error = exc
    except StoppedOutside as exc:
        rec.time_open_calls()
        error = _from_outside(exc)
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise  # (the program is stopping: nothing to draw)
    except BaseException as exc:  # noqa: BLE001 - the program's own (`class Stop(BaseException)`)
        error = exc  # drawn as any error, re-raised below
    finally:
        elapsed = (time.perf_counter() - start) * 1000
        rec.abandon_one_call()
        rec.remove_late_hooks()
        if rec.unsized:
            rec.describe_sized()
        for h in handles:
            h.remove()
            # torch's handle forgets this registry (torch 2.13): clean it ourselves
            nn.modules.module._global_forward_hooks_with_kwargs.pop(h.id, None)
        warnings = state.restore()
    if not isinstance(error, TraceCancelled):
        # (the forward caught the stop: re-raised as its own, or swallowed)
        if rec.stopped is not None:
            error = rec.stopped
        elif _outside[0] is not None:
            error = _from_outside(_outside[0])
    _outside[0] = None
    if isinstance(error, TraceCancelled) and rank is not None and rank[1] > 1:
        if not local_collectives:
            error = _among_ranks(error)
    info = model_info(model, rec.param_counts.get(id(model)), [m for _, m in named])
    shown = rec.wrapping.classes.get(id(wrapped), type(wrapped)) if rec.wrapping else type(model)
    if shown is not type(model):  # the user's class, not a wrapper's or FSDP2's subclass
        info.name, info.qualname = shown.__name__, _class_info(shown)[1]
    if any(m is wrapped for m in rec.scripted):  # TorchScript's: the class it was made from
        described = rec._info(wrapped)
        info.name, info.qualname = described.name, described.target
    warnings.extend(_scripted_warning(rec))
    if no_grad and error is not None and _needs_autograd(error):
        warnings.append(
            "the forward needs autograd, and torchscope traces it under torch.no_grad(): "
            "wrap the part that differentiates (torch.autograd.grad, a tensor hook) in "
            "`with torch.enable_grad():` to trace it"
        )
    if rank is not None:
        info.rank, info.world_size = rank
    if rec.watch is not None and local_collectives and rec.watch.count:
        warnings.append(
            f"rank {rank[0] if rank else 0} traced alone: its {rec.watch.count} collective(s) "
            "were not sent to the other ranks (they are not running this forward); data "
            "they would have brought from other ranks is this rank's own"
        )
    graph = Graph(
        info,
        rec.nodes,
        rec.edges,
        trace_ms=elapsed,
        values=Recorded(values, costs),
        warnings=warnings,
    )
    if error is None:
        rec.add_outputs(outputs)
    else:
        graph.error = rec.add_error(error)
    rec.wire_failed_leaves()
    rec.finish_values()
    graph.nan_origin = rec.nan_origin
    rec.producer.clear()
    graph.groups = fold_repeated_blocks(graph)
    if costs:
        roll_up(graph.nodes)
        group_costs(graph)
    if error is not None and raise_errors:
        try:
            error.torchscope_graph = graph  # type: ignore[attr-defined]
        except Exception:
            pass
        raise error
    return graph


def _among_ranks(error: TraceCancelled) -> TraceCancelled:
    """A trace stopped inside one rank's forward (its budget, a cancel): the collectives it
    did not reach never run, so the other ranks wait in theirs (or pair them with this rank's
    next ones): said in its error, with the way out (the CLI exits, and torchrun ends every
    rank)."""
    said = type(error)(
        f"{error}: the other ranks may now wait in a collective this rank did not reach, or "
        "pair theirs with its next ones; end the program (torchrun then stops every rank)"
    )
    said.__traceback__ = error.__traceback__  # (where it stopped: the error's site)
    return said


def _scripted_warning(rec: Recorder) -> list[str]:
    """Why a TorchScript module's box is empty, or a scripted function is one op, when the
    forward called one."""
    said: list[str] = []
    called = [m for m in rec.scripted if rec.calls.get(id(m))]
    if called:
        named = [f"{rec.paths.get(id(m)) or 'the model'} ({rec._info(m).name})" for m in called[:3]]
        more = f" and {len(called) - 3} more" if len(called) > 3 else ""
        one = len(called) == 1
        said.append(
            f"{', '.join(named)}{more} ran as TorchScript (torch.jit.script or torch.jit.trace), "
            f"whose ops torchscope can't see: drawn as {'a box' if one else 'boxes'} data flows "
            f"through; trace the Python module{'' if one else 's'} "
            f"{'it was' if one else 'they were'} made from to see inside"
        )
    functions = list(rec.scripted_functions)
    if functions:
        one = len(functions) == 1
        said.append(
            f"{', '.join(functions)} {'is a' if one else 'are'} TorchScript function"
            f"{'' if one else 's'} (@torch.jit.script), whose ops torchscope can't see: drawn as "
            f"{'one op' if one else 'one op each'}"
        )
    return said


class _ScriptCall:
    """A TorchScript function as the recorder calls it: named after the user's function,
    calling it as it was before the trace hooked its calls."""

    def __init__(self, function: Any, call: Callable[..., Any]) -> None:
        self.function, self._call = function, call
        qualified = str(getattr(function, "qualified_name", "") or function.name)
        module, _, name = qualified.removeprefix("__torch__.").rpartition(".")
        self.__name__ = self.__qualname__ = name or function.name
        self.__module__ = module or "torch.jit"
        self._key = qualified

    # one of a name, whichever trace made it: ops.func_info keeps what it learns of a
    # callable by the callable, and each trace makes these anew (as the runner imports anew)
    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ScriptCall) and other._key == self._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with _NO_TORCH_FUNCTION():  # (as torch takes a mode off while its handler calls)
            return self._call(self.function, *args, **kwargs)


@contextlib.contextmanager
def scripted_functions_recorded(rec: Recorder) -> Iterator[None]:
    """TorchScript functions (`@torch.jit.script def fused_gelu`) the forward calls, each
    recorded as one op: they run in TorchScript's interpreter, where no function mode sees
    their ops, and their results would come from nowhere. (Other threads' calls, and calls
    while the mode is off, run as they are.)"""
    kind = getattr(torch.jit, "ScriptFunction", None)
    if kind is None:
        yield
        return
    original = kind.__call__
    thread = threading.get_ident()
    made: dict[int, _ScriptCall] = {}

    def call(function: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != thread or not torch._C._is_torch_function_mode_enabled():
            return original(function, *args, **kwargs)
        wrapped = made.get(id(function))
        if wrapped is None:
            wrapped = made[id(function)] = _ScriptCall(function, original)
            rec.scripted_functions[wrapped.__name__] = None
        return rec.__torch_function__(wrapped, (), args, kwargs)

    kind.__call__ = call
    try:
        yield
    finally:
        kind.__call__ = original


def _remove_mode(mode: TorchFunctionMode) -> None:
    """Take `mode` off torch's function-mode stack wherever it is: a forward may have pushed
    modes of its own above it and never popped them; those stay, in their order."""
    above: list[Any] = []
    while torch._C._len_torch_function_stack() > 0:
        top = torch._C._pop_torch_function_stack()
        if top is mode:
            break
        above.append(top)
    for m in reversed(above):
        torch._C._push_on_torch_function_stack(m)


def trace(
    model: nn.Module, *args: Any, values: bool = True, costs: bool = True, **kwargs: Any
) -> Graph:
    """Trace one forward pass of `model(*args, **kwargs)` under no_grad, without side effects.

    `values=False` leaves out the tensor statistics and the NaN origin, `costs=False` the
    FLOPs, bytes and times. A forward that takes keyword arguments named `values` or `costs`
    itself is traced with `trace_call(model, args, kwargs)`."""
    for name, switch in (("values", values), ("costs", costs)):
        if not isinstance(switch, bool):
            raise TypeError(
                f"{name}= is torchscope's switch (True or False), not a {type(switch).__name__}: "
                f"a forward that takes {name} itself is traced with "
                f"torchscope.trace_call(model, args, {{'{name}': ...}})"
            )
    return trace_call(model, args, kwargs, values=values, costs=costs)
