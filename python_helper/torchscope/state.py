"""Snapshot and restore everything a forward may change, so a trace has no side effects."""

from __future__ import annotations

import collections
import contextlib
import ctypes
import itertools
import operator
import random
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, Optional

import torch
from torch import nn
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import is_lazy
from torch.utils.hooks import RemovableHandle

from .distributed import inner_tensor


class RngState:
    """Every global random number generator a forward may draw from: torch's (CPU, and CUDA
    when it is initialised), Python's `random` and numpy's (only if the program already uses
    it). The generators a model holds or is given are ModelState's (see `_rng_kind`)."""

    def __init__(self) -> None:
        self.cpu = torch.get_rng_state()
        self.cuda: Optional[list[torch.Tensor]] = (
            torch.cuda.get_rng_state_all()
            if torch.cuda.is_available() and torch.cuda.is_initialized()
            else None
        )
        self.py = random.getstate()
        # numpy's, once the program uses it: `numpy.random` is imported on first use, and
        # importing it here would import the standard library's `secrets` in the middle of
        # a trace, where a project's own `secrets.py` beside the model shadows it
        np_random = sys.modules.get("numpy.random")
        self.np = np_random.get_state() if np_random is not None else None

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        random.setstate(self.py)
        if self.np is not None:
            sys.modules["numpy.random"].set_state(self.np)


@contextlib.contextmanager
def rng_kept() -> Iterator[None]:
    """Every RNG as it was when the block is left, however it is left: around code that is
    not a traced forward but draws random numbers (an input expression `torch.randn(1, 8)`)."""
    state = RngState()
    try:
        yield
    finally:
        state.restore()


_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction  # our own ops: no mode sees them


class GlobalSettings:
    """torch's process-wide settings a forward may change: the default dtype and device, the
    matmul precision, deterministic algorithms, the backends' flags, the thread count (unless
    `threads` is False)."""

    def __init__(self, threads: bool = True) -> None:
        b = torch.backends
        settings: list[tuple[str, Callable[[], Any], Callable[[Any], None]]] = [
            ("default dtype", torch.get_default_dtype, torch.set_default_dtype),
            (
                "float32 matmul precision",
                torch.get_float32_matmul_precision,
                torch.set_float32_matmul_precision,
            ),
            (
                "deterministic algorithms",
                lambda: (
                    torch.are_deterministic_algorithms_enabled(),
                    torch.is_deterministic_algorithms_warn_only_enabled(),
                ),
                lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]),
            ),
            ("anomaly detection", torch.is_anomaly_enabled, torch.set_anomaly_enabled),
        ]
        if threads:
            settings.append(("thread count", torch.get_num_threads, torch.set_num_threads))
        for obj, where, names in (
            (b.cudnn, "cudnn", ("enabled", "benchmark", "deterministic", "allow_tf32")),
            (
                b.cuda.matmul,
                "cuda.matmul",
                (
                    "allow_tf32",
                    "allow_fp16_reduced_precision_reduction",
                    "allow_bf16_reduced_precision_reduction",
                ),
            ),
            (b.mkldnn, "mkldnn", ("enabled",)),
        ):
            for name in names:
                settings.append(
                    (
                        f"torch.backends.{where}.{name}",
                        lambda o=obj, n=name: getattr(o, n),
                        lambda v, o=obj, n=name: setattr(o, n, v),
                    )
                )
        default_device = getattr(torch, "get_default_device", None)
        if default_device is not None:
            settings.append(("default device", default_device, torch.set_default_device))
        # (name, get, put, value) of each setting this build can read
        self.saved: list[tuple[str, Callable[[], Any], Callable[[Any], None], Any]] = []
        for name, get, put in settings:
            try:
                self.saved.append((name, get, put, get()))
            except Exception:  # a backend this build lacks: nothing to put back
                pass

    def restore(self) -> list[str]:
        """Every setting as it was; returns a warning for each that would not go back."""
        warnings: list[str] = []
        for name, get, put, value in self.saved:
            try:
                if get() != value:
                    put(value)
            except Exception as exc:
                warnings.append(
                    f"torch's {name} could not be put back as it was ({value!r}): "
                    f"{type(exc).__name__}: {exc}"
                )
        return warnings


class ModelState:
    """Everything a forward may change, put back afterwards: training flags, buffers
    (BatchNorm running stats), parameters however they are written and whether they need
    grad, the modules' parameter, buffer and submodule tables and plain attributes, dict,
    list and set attributes filled in place, hooks the forward registers, RNG states (the
    global ones, and the generators the modules hold or the forward is given), grad mode and
    torch's global settings.

    Buffers are copied up front (they are small next to parameters). A parameter is copied
    only when a call is about to write its storage (`protect`: an in-place op on it or on any
    alias of it, `.data`, `out=`, `_foreach_*_`, `.numpy()`), so tracing a large model does
    not double its memory. A few sampled values of each parameter are compared afterwards:
    a write nothing saw coming (a numpy view made before the trace) is reported, never
    silent.

    Snapshot and restore each walk every module and parameter once: on a model of 8,000
    small layers they cost as much as its forward, so each step per item is kept few.
    """

    def __init__(self, named: list[tuple[str, nn.Module]]) -> None:
        with _NO_TORCH_FUNCTION():
            self._snapshot(named)
        # id → a tensor as it was before a call wrote it
        self.saved_params: dict[int, _Saved] = {}
        # the forward's tensor arguments that are leaves, and whether each needed grad
        self.input_grads: list[tuple[torch.Tensor, bool]] = []
        # the forward's plain tensor arguments, how each sees its memory (held) and its
        # version: `x.set_(…)` (which torch shows no function mode) is seen afterwards, undone
        self.input_memory: list[tuple[torch.Tensor, _Seen, int]] = []
        self.rng = RngState()
        self.grad_enabled = torch.is_grad_enabled()
        self.settings = GlobalSettings()
        self.first_hook_id = RemovableHandle.next_id

    def keep_inputs(self, args: tuple, kwargs: Mapping[str, Any]) -> None:
        """The forward's arguments as they were, for a program that goes on with them (paused
        in a generation loop): a tensor among them gets its values back if a call writes it
        (copied just before, as a parameter is), and a plain object among them (a KV cache, a
        list or dict of tensors) its attributes and contents, _INPUT_DEPTH levels deep."""
        seen: set[int] = set()
        stack: list[tuple[Any, int]] = [(a, 0) for a in (*args, *kwargs.values())]
        while stack and len(seen) < _INPUT_OBJECTS:
            obj, depth = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            kind = type(obj)
            if isinstance(obj, torch.Tensor):
                self._keep_tensor(obj)
                continue
            if kind in _ATOMS or depth >= _INPUT_DEPTH or isinstance(obj, _NOT_STATE):
                continue
            children: Any
            if kind in _CONTAINERS:
                self.containers.append((obj, obj.copy()))
                children = obj.values() if isinstance(obj, dict) else obj
            elif isinstance(obj, tuple):  # a namedtuple's too
                children = obj
            else:
                rng = self._rng_kind(kind)
                if rng is not None:  # a generator the forward draws from (`generator=g`)
                    self._keep_rng(obj, rng)
                attrs = getattr(obj, "__dict__", None)
                if type(attrs) is not dict or not attrs:
                    continue
                self.objects.append((obj, attrs.copy()))
                children = attrs.values()
            stack.extend((c, depth + 1) for c in children)

    def keep_generator(self, g: Any) -> None:
        """A `torch.Generator` a call is about to draw from (`generator=g`), its state kept
        before the call: found this way wherever the program holds it (a helper object's
        attribute, a global), not only where the snapshot looks."""
        if id(g) not in self.rngs and isinstance(g, torch.Generator) and not _global(g):
            rng = self._rng_kind(type(g))
            if rng is not None:
                self._keep_rng(g, rng)

    def _rng_kind(self, kind: type) -> Optional[_Rng]:
        """How a random generator of this type is kept; None: not one (remembered)."""
        if kind in self.plain:
            return None
        rng = self.rng_kinds.get(kind)
        if rng is None:
            rng = _rng_kind(kind)
            if rng is None:
                if kind not in _CONTAINERS:
                    self.plain.add(kind)
                return None
            self.rng_kinds[kind] = rng
        return rng

    def _keep_rng(self, obj: Any, rng: _Rng) -> None:
        """A random generator's state, to put back (each generator once, however shared)."""
        if id(obj) in self.rngs:
            return
        try:
            state = rng.get(obj)
        except Exception:  # (a generator that can't tell its state: nothing to put back)
            return
        if state is not None:
            self.rngs[id(obj)] = (obj, rng, state)

    def _keep_tensor(self, t: torch.Tensor) -> None:
        if t.is_leaf:  # (`x.requires_grad_()`: a non-leaf can't be made not to need grad)
            self.input_grads.append((t, t.requires_grad))
        key = _storage_key(t)
        if not key and type(t) in _PLAIN and t.layout is not _STRIDED:
            self._keep_unstrided(t)  # (a sparse tensor: no storage to key its writes by)
        if key:  # (meta tensors have none)
            memory = _memory(t)
            self.by_storage.setdefault(key, []).append(memory)
            if memory is not t:
                self.wrappers.append((t, _version(t)))
            elif type(t) in _PLAIN and t.layout is _STRIDED and not t.is_nested:
                with _NO_TORCH_FUNCTION():
                    self.input_memory.append((t, _Seen.of(t), _version(t)))

    def _keep_unstrided(self, t: torch.Tensor) -> None:
        """A sparse argument or parameter: copied now, put back after the forward if a call
        wrote it (its version moved): a write to it can't be told by its memory."""
        with _NO_TORCH_FUNCTION(), contextlib.suppress(Exception):  # (one that can't be copied)
            self.unstrided.append(_Saved(t, t.detach().clone(), _version(t), None))

    def lazy_modules(self) -> list[nn.Module]:
        """The lazy layers the forward may size (see `_Lazy`)."""
        return [lazy.module for lazy in self.lazy]

    def hooks_from_here(self) -> None:
        """Hooks registered from now on are the forward's (the trace's own come before, or are
        removed before `restore`): restore takes them off the modules, parameters and torch's
        global tables. Every hook handle takes the next id of one counter, so a trace that
        registered none costs one comparison."""
        self.first_hook_id = RemovableHandle.next_id

    def _snapshot(self, named: list[tuple[str, nn.Module]]) -> None:
        # per module: its attribute dict (training flag, plain attributes, the tables
        # themselves) and the contents of its parameter, buffer and submodule tables
        self.modules: list[tuple[nn.Module, dict[str, Any], _Table, _Table, _Table]] = []
        self.buffers: list[_Saved] = []  # (it, its values, version, how it saw its memory)
        self.buffer_ids: set[int] = set()
        self.params: dict[int, _Param] = {}
        self.by_storage: dict[int, list[torch.Tensor]] = {}
        # a user attribute holding a dict, list or set (a cache, a log): its contents, one
        # level deep, for a forward that fills it in place
        self.containers: list[tuple[Any, Any]] = []
        # an object among the forward's arguments, and its attributes as they were
        self.objects: list[tuple[Any, dict[str, Any]]] = []
        self.lazy: list[_Lazy] = []
        # sparse parameters and arguments, copied up front (see _keep_unstrided)
        self.unstrided: list[_Saved] = []
        self._held: list[Any] = []
        # storage key → a tensor from outside the forward as it was before a call wrote it
        self.outside: dict[int, _Saved] = {}
        # each parameter's `.grad` and its values, once a call may write them (keep_grads)
        self.grads: Optional[list[tuple[torch.Tensor, Any, Optional[torch.Tensor]]]] = None
        # a DTensor parameter or argument, and its own version counter (a write through it
        # bumps its own, not its shard's: a backward pending over it checks this one)
        self.wrappers: list[tuple[torch.Tensor, int]] = []
        # a random generator a module holds (one level into its dicts, lists and sets too) or
        # the forward is given: id → (it, how its state is read and put back, its state)
        self.rngs: dict[int, tuple[Any, _Rng, Any]] = {}
        # the types met that are neither containers nor generators (most user attributes':
        # one set lookup each, as for containers), and the generators' types met
        plain = self.plain = set(_PLAIN_KINDS)
        self.rng_kinds: dict[type, _Rng] = {}
        rng_kind, keep_rng = self._rng_kind, self._keep_rng
        rows, params, containers = self.modules, self.params, self.containers
        # a module class → the __dict__ keys of the last module of that class, and those of
        # them not in _MODULE_KEYS: comparing a dict's keys with a set costs less than
        # taking the difference again
        user_keys: dict[type, tuple[frozenset[str], tuple[str, ...]]] = {}
        held: list[Any] = []  # objects the modules hold (a cache, a helper): kept below
        for path, m in named:
            attrs = m.__dict__
            if isinstance(m, LazyModuleMixin) and unsized_layer(m):
                self.lazy.append(_Lazy(m))
            known = user_keys.get(type(m))
            if known is None or attrs.keys() != known[0]:
                known = user_keys[type(m)] = (frozenset(attrs), tuple(attrs.keys() - _MODULE_KEYS))
            for key in known[1]:
                v = attrs[key]
                kind = type(v)
                if kind in plain:
                    continue
                if kind in _CONTAINERS:
                    containers.append((v, v.copy()))
                    # (the first items only, and no container in it: a module holding lists
                    # of lists took 7x as long to snapshot when every item was looked at)
                    items = v.values() if isinstance(v, dict) else v
                    for item in itertools.islice(items, _RNG_ITEMS):
                        kind = type(item)
                        if kind not in plain and kind not in _CONTAINERS:
                            rng = rng_kind(kind)
                            if rng is not None:
                                keep_rng(item, rng)
                else:
                    rng = rng_kind(kind)
                    if rng is not None:
                        keep_rng(v, rng)
                    elif not isinstance(v, _NOT_STATE):
                        held.append(v)
            ps = attrs.get("_parameters")
            bs = attrs.get("_buffers")
            ms = attrs.get("_modules")
            rows.append(
                (
                    m,
                    attrs.copy(),
                    dict(ps) if ps else _EMPTY,
                    dict(bs) if bs else _EMPTY,
                    dict(ms) if ms else _EMPTY,
                )
            )
            if bs:
                for b in bs.values():
                    if b is not None and not b.is_meta and not _unsized(b):
                        self.buffers.append(_Saved(b, b.detach().clone(), _version(b), _seen_of(b)))
                        self.buffer_ids.add(id(b))
            if ps:
                for name, p in ps.items():
                    if p is None or id(p) in params or _unsized(p):
                        continue
                    info = _Param(path, name, p)
                    params[id(info.memory)] = info  # (a DTensor's: its shard's)
                    if p.layout is not _STRIDED and type(p) in _PLAIN:
                        self._keep_unstrided(p)
                    if info.storage_ptr:
                        self.by_storage.setdefault(info.storage_ptr, []).append(info.memory)
                    if info.memory is not p:
                        self.wrappers.append((p, _version(p)))
        self._held = held  # (walked by keep_held, as the forward's arguments are)
        _keep_layouts(params)
        self.globals = _user_globals(user_keys)
        for _, before in self.globals:  # (their contents as a module attribute's: one level)
            containers.extend((v, v.copy()) for v in before.values() if type(v) in _CONTAINERS)

    def keep_held(self) -> None:
        """The objects the modules hold as attributes — a KV cache, a helper counting calls,
        a plain tensor — kept as the forward's arguments are (`keep_inputs`): their
        attributes and contents a few levels deep, their tensors' values if a call writes
        them. Called after ModelState is made, with keep_inputs."""
        held, self._held = self._held, []
        if held:
            self.keep_inputs(tuple(held), {})

    def keep_outside(self, t: torch.Tensor) -> None:
        """A tensor a call is about to write that no call of the forward made (a model's
        plain tensor attribute, one in a dict it holds, a global): a copy of it, put back
        after the forward. Parameters, buffers and the forward's arguments are kept
        otherwise (protect, the up-front copies)."""
        key = _storage_key(t)
        if not key or key in self.by_storage or key in self.outside or id(t) in self.buffer_ids:
            return
        with _NO_TORCH_FUNCTION():
            try:
                if type(t) in _PLAIN and _in_its_memory(t):  # (FSDP's freed gather targets)
                    self.outside[key] = _Saved(t, t.detach().clone(), _version(t), _Seen.of(t))
            except Exception:  # (a tensor that can't be copied: left as the forward leaves it)
                pass

    def keep_grads(self) -> None:
        """Before the forward's first call that may write the parameters' `.grad` (a
        backward, `p.grad = …`, `zero_grad`): each one's grad and a copy of its values, put
        back after — a program paused between its backward and `optimizer.step()` steps with
        the grads it had. Taken only then: most forwards never touch them."""
        if self.grads is not None:
            return
        kept = self.grads = []
        with _NO_TORCH_FUNCTION():
            for info in self.params.values():
                p = info.param
                with contextlib.suppress(Exception):  # (a parameter that won't say)
                    g = p.grad
                    kept.append((p, g, None if g is None else g.detach().clone()))

    @contextlib.contextmanager
    def frees_watched(self) -> Iterator[None]:
        """While the forward runs: a parameter's memory made smaller (offloading code frees a
        weight after use, `untyped_storage().resize_(0)`) is copied first, as before a write,
        and put back after (torch shows function modes no storage call). The buffers and the
        forward's arguments are copied up front; the restore grows their memory back."""
        if not self.by_storage:
            yield
            return
        cls = torch.UntypedStorage
        original = cls.resize_
        by_storage, protect = self.by_storage, self.protect

        def resize_(storage: Any, size: int) -> Any:
            with contextlib.suppress(Exception):
                if size < storage.nbytes():
                    for p in by_storage.get(storage.data_ptr(), ()):
                        protect(p)
            return original(storage, size)

        cls.resize_ = resize_  # type: ignore[method-assign]
        try:
            yield
        finally:
            cls.resize_ = original  # type: ignore[method-assign]

    def protect(self, t: Any) -> None:
        """Called before a call that may write `t` (a tensor, or a list of them): keep a copy
        of every parameter whose storage it shares."""
        if isinstance(t, (list, tuple)):
            for x in t:
                self.protect(x)
            return
        if not isinstance(t, torch.Tensor) or not self.by_storage:
            return
        key = _storage_key(t)
        if not key:
            return
        with _NO_TORCH_FUNCTION():
            for p in self.by_storage.get(key, ()):
                if id(p) not in self.saved_params:
                    self.saved_params[id(p)] = self._before_write(p, key)

    def _before_write(self, p: torch.Tensor, key: int) -> _Saved:
        """A copy of the memory a call is about to write (`key`: where it is), as `p` saw it
        before the forward: `p.set_(…)` (which torch shows no function mode) may have pointed
        p elsewhere since, and a view taken before still writes p's own memory."""
        seen, version = _seen_of(p), _version(p)
        if seen is not None and seen.storage.data_ptr() != key:
            before = self._seen_before(p)
            if before is not None:
                seen, version = before
                memory = torch.empty(0, dtype=seen.dtype, device=seen.storage.device).set_(
                    seen.storage, seen.offset, seen.shape, seen.stride
                )
                return _Saved(p, memory.clone(), version, seen)
        return _Saved(p, p.detach().clone(), version, seen)

    def _seen_before(self, p: torch.Tensor) -> Optional[tuple[_Seen, int]]:
        """How `p` (an argument or a parameter) saw its memory before the forward, and its
        version (a parameter's: as now); None when that was not kept."""
        for t, seen, version in self.input_memory:
            if t is p:
                return seen, version
        info = self.params.get(id(p))
        if info is None or info.storage is None:
            return None
        layout, alias = info.layout, info.alias
        if layout is not None:
            seen = _Seen(info.storage, layout.dtype, layout.shape, layout.stride, layout.offset)
        elif alias is not None:
            seen = _Seen.of(alias)
        else:
            return None
        return seen, _version(p)

    def restore(self) -> list[str]:
        """Put everything back; returns warnings about what could not be restored."""
        warnings: list[str] = []
        with _NO_TORCH_FUNCTION(), torch.no_grad():
            for lazy in self.lazy:
                lazy.restore()
            for m, attrs, params, buffers, modules in self.modules:
                now = m.__dict__
                # by identity, never by value: `==` on a tensor whose storage the forward
                # freed (FSDP1's flat parameters) crashes the process
                if len(now) != len(attrs) or not all(
                    map(operator.is_, now.values(), attrs.values())
                ):
                    # the forward rebound or added plain attributes (a cache, a counter),
                    # flipped the training flag or rebound a table: the tables as they were
                    # first, then their contents
                    now.clear()
                    now.update(attrs)
                # a parameter, buffer or submodule rebound (most tables are and stay empty)
                # (the tables are the module's again: attrs' own; a module whose tables are
                # not in its __dict__, as torch.jit.trace's, had none taken either)
                try:
                    table = attrs.get("_parameters")
                    if table is not None and (table or params):
                        _put_back(table, params)
                    table = attrs.get("_buffers")
                    if table is not None and (table or buffers):
                        _put_back(table, buffers)
                    table = attrs.get("_modules")
                    if table is not None and (table or modules):
                        _put_back(table, modules)
                except Exception as exc:  # a table the forward made unreadable: the rest go on
                    warnings.append(
                        f"a {type(m).__name__}'s parameters, buffers or submodules could not "
                        f"be checked after the forward: {type(exc).__name__}: {exc}"
                    )
            for kept in self.buffers:
                # (kernels like batch_norm update running stats without a version bump;
                # `resize_`, `unsqueeze_` change how the buffer sees its memory)
                _copy_back(kept, warnings, "a buffer")
            for kept in self.unstrided:
                if _version(kept.tensor) != kept.version:
                    _copy_back(kept, warnings, "a sparse tensor")
            saved, params_kept = self.saved_params, self.params
            for t, seen, version in self.input_memory:
                if id(t) not in saved and not seen.same(t):
                    try:  # (no call wrote it: its own memory holds its values still)
                        seen.put_back(t)
                        if version >= 0 and _set_versions is not None:
                            _set_versions((t,), (version,))
                    except Exception as exc:
                        warnings.append(f"an argument of the forward could not be put back: {exc}")
            for key, kept in saved.items():
                if key not in params_kept:  # an argument of the forward a call wrote
                    _copy_back(kept, warnings)
            for kept in self.outside.values():  # a tensor from outside the forward it wrote
                # values only, into the memory it had: one its owner pointed elsewhere or freed
                # since (FSDP's gather buffers) is the owner's business
                t, seen = kept.tensor, kept.seen
                if seen is None:  # (never: keep_outside keeps dense tensors only)
                    continue
                if not seen.same(t) and t.untyped_storage()._cdata == seen.storage._cdata:
                    # the forward changed how it sees its own memory (`resize_`, `t_`)
                    with contextlib.suppress(Exception):
                        seen.put_back(t)
                if seen.same(t) and _in_its_memory(t):
                    _put_values(t, kept.copy, kept.version)
            for p, grad, values in self.grads or ():
                try:
                    if p.grad is not grad:
                        p.grad = grad
                    if grad is not None and values is not None:
                        _put_values(grad, values, -1)
                except Exception as exc:
                    warnings.append(f"the .grad of a parameter could not be put back: {exc}")
            for t, needed in self.input_grads:
                if t.requires_grad != needed:
                    with contextlib.suppress(Exception):
                        t.requires_grad_(needed)
            for key, info in params_kept.items():
                # `p.data = other` gave a parameter another storage: back to its own first,
                # so that a copy kept before a write goes where the write went (a parameter
                # sharing storage with a written one was copied with it: see protect)
                kept = saved.get(key)
                if kept is not None:
                    info.repoint()
                    _copy_back(kept, warnings)
                elif info.written():
                    warnings.append(
                        f"{info.name()} was written by the forward in a way torchscope could "
                        "not see (a numpy view made before the trace? a C extension?): it "
                        "could not be restored"
                    )
                if info.param.requires_grad != info.requires_grad:
                    with contextlib.suppress(Exception):  # (a dtype that can't need grad)
                        info.param.requires_grad_(info.requires_grad)
        for t, version in self.wrappers:
            if version >= 0 and _set_versions is not None and _version(t) != version:
                with contextlib.suppress(Exception):
                    _set_versions((t,), (version,))
        for now, before in self.containers:
            refill(now, before)
        for namespace, before in self.globals:
            _put_back_globals(namespace, before)
        for obj, before in self.objects:
            try:
                refill(obj.__dict__, before)
            except Exception as exc:  # an object that won't take its attributes back
                warnings.append(
                    f"an argument of the forward (a {type(obj).__name__}) could not be put back "
                    f"as it was: {type(exc).__name__}: {exc}"
                )
        if RemovableHandle.next_id > self.first_hook_id:
            self._remove_new_hooks()
        for obj, rng, state in self.rngs.values():
            try:
                rng.put(obj, state)
            except Exception as exc:
                warnings.append(
                    f"a random generator (a {type(obj).__name__}) the forward drew from could "
                    f"not be put back as it was: {type(exc).__name__}: {exc}"
                )
        # (last: a global generator kept as one the forward named, `generator=
        # torch.default_generator`, was kept part way through; the state before it is this)
        self.rng.restore()
        warnings.extend(self.settings.restore())
        torch.set_grad_enabled(self.grad_enabled)
        return warnings

    def _remove_new_hooks(self) -> None:
        """Hooks the forward registered (a forward hook on a layer, a gradient hook on a
        weight, a global module hook): every hook table is keyed by its handle's id."""
        first = self.first_hook_id
        tables: list[Any] = [getattr(nn.modules.module, name, None) for name in _GLOBAL_HOOKS]
        for m, *_ in self.modules:
            attrs = m.__dict__
            tables.extend(attrs.get(name) for name in _MODULE_HOOKS)
        for info in self.params.values():
            tables.append(getattr(info.param, "_backward_hooks", None))
            tables.append(getattr(info.param, "_post_accumulate_grad_hooks", None))
        for table in tables:
            if table and isinstance(table, dict):
                for key in [k for k in table if type(k) is int and k >= first]:
                    del table[key]


# hook tables keyed by handle id: a module's, and torch's global ones (torch.nn.modules.module)
_MODULE_HOOKS = (
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)
_GLOBAL_HOOKS = (
    "_global_forward_hooks",
    "_global_forward_hooks_with_kwargs",
    "_global_forward_hooks_always_called",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
    "_global_buffer_registration_hooks",
    "_global_module_registration_hooks",
    "_global_parameter_registration_hooks",
)

# what every nn.Module has in its __dict__ (its tables, hook tables, flags): the rest are
# the class's and the user's own attributes
_MODULE_KEYS = frozenset(nn.Module().__dict__)
_CONTAINERS = frozenset((dict, list, set, collections.OrderedDict, collections.defaultdict))
_RNG_ITEMS = 16  # items of a module's dict, list or set attribute looked at for a generator


class _Rng(NamedTuple):
    """How a kind of random generator's state is read (None: none to keep) and put back."""

    get: Callable[[Any], Any]
    put: Callable[[Any, Any], Any]


def _torch_rng_state(g: torch.Generator) -> Any:
    # a CUDA generator only once CUDA is initialised (as RngState does for the global ones)
    if g.device.type == "cuda" and not torch.cuda.is_initialized():
        return None
    return g.get_state()


def _put_state(g: Any, state: Any) -> None:
    g.state = state


def _put_bit_state(g: Any, state: Any) -> None:
    g.bit_generator.state = state


_TORCH_RNG = _Rng(_torch_rng_state, torch.Generator.set_state)
_PY_RNG = _Rng(random.Random.getstate, random.Random.setstate)
_NP_GENERATOR = _Rng(operator.attrgetter("bit_generator.state"), _put_bit_state)
_NP_RANDOM_STATE = _Rng(lambda g: g.get_state(legacy=False), lambda g, s: g.set_state(s))
_NP_BIT_GENERATOR = _Rng(operator.attrgetter("state"), _put_state)


def _rng_kind(kind: type) -> Optional[_Rng]:
    """How a random generator of this type (a subclass too) is kept; None: not one.
    numpy's only when the program already uses numpy.random."""
    if issubclass(kind, torch.Generator):
        return _TORCH_RNG
    if issubclass(kind, random.Random):
        return None if issubclass(kind, random.SystemRandom) else _PY_RNG  # (it has no state)
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        for base, rng in (
            ("Generator", _NP_GENERATOR),
            ("RandomState", _NP_RANDOM_STATE),
            ("BitGenerator", _NP_BIT_GENERATOR),
        ):
            cls = getattr(np_random, base, None)
            if isinstance(cls, type) and issubclass(kind, cls):
                return rng
    return None


# the forward's arguments: how deep and how many objects are kept (a KV cache: the cache,
# its list of layers, each layer, its tensors)
_INPUT_DEPTH = 4
_INPUT_OBJECTS = 10_000
_ATOMS = frozenset((int, float, bool, complex, str, bytes, type(None)))
# attribute types that are never random generators (ModelState.plain starts with them)
_PLAIN_KINDS = frozenset((*_ATOMS, tuple, torch.Tensor, nn.Parameter, torch.dtype, torch.device))
# objects whose attributes are not the argument's state: a model (ModelState's part), a
# Python module (its globals), a function, a class
_NOT_STATE = (nn.Module, types.ModuleType, types.FunctionType, types.MethodType, type)


def _unsized(t: torch.Tensor) -> bool:
    """A lazy layer's parameter or buffer its first forward has not sized yet."""
    return type(t) not in _PLAIN and is_lazy(t)


def unsized_layer(m: nn.Module) -> bool:
    """A lazy layer (`nn.LazyLinear` …) its first forward has not sized yet."""
    return isinstance(m, LazyModuleMixin) and any(
        t is not None and _unsized(t)
        for table in (m._parameters, m._buffers)
        for t in table.values()
    )


class _Lazy:
    """A lazy layer (`nn.LazyLinear` …) not sized yet. Its first forward sizes its
    parameters and buffers in place (new memory, a new class), drops its own hooks and turns
    it into its sized class (`LazyLinear` → `Linear`): all put back, so the user's own first
    forward still sizes it."""

    __slots__ = ("module", "cls", "hooks", "tensors")

    def __init__(self, m: nn.Module) -> None:
        self.module, self.cls = m, type(m)
        attrs = m.__dict__
        self.hooks = [(t, dict(t)) for t in (attrs.get(n) for n in _MODULE_HOOKS) if t]
        self.tensors: list[tuple[torch.Tensor, Any, torch.dtype, torch.device]] = [
            (t, type(t), t.dtype, t.device)
            for table in (m._parameters, m._buffers)
            for t in table.values()
            if t is not None and _unsized(t)
        ]

    def restore(self) -> None:
        m = self.module
        if type(m) is not self.cls:
            m.__class__ = self.cls
        for table, before in self.hooks:
            refill(table, before)
        for t, cls, dtype, device in self.tensors:
            if type(t) is not cls:
                t.data = torch.empty(0, dtype=dtype, device=device)
                t.__class__ = cls


class _Seen(NamedTuple):
    """How a tensor sees its memory: the memory (its untyped storage, held: the tensor goes
    back to it), the dtype it reads it as, its shape, strides and offset."""

    storage: Any
    dtype: torch.dtype
    shape: torch.Size
    stride: tuple[int, ...]
    offset: int

    @staticmethod
    def of(t: torch.Tensor) -> _Seen:
        return _Seen(t.untyped_storage(), t.dtype, t.shape, t.stride(), int(t.storage_offset()))

    def same(self, t: torch.Tensor) -> bool:
        return (
            t.untyped_storage()._cdata == self.storage._cdata
            and t.dtype == self.dtype
            and t.shape == self.shape
            and t.stride() == self.stride
            and t.storage_offset() == self.offset
        )

    def put_back(self, t: torch.Tensor) -> None:
        """`t` seeing its memory so again (`.data`: no version bump, any dtype)."""
        t.data = torch.empty(0, dtype=self.dtype, device=self.storage.device).set_(
            self.storage, self.offset, self.shape, self.stride
        )


def _seen_of(t: torch.Tensor) -> Optional[_Seen]:
    """How t sees its memory; None for a tensor that has no one strided view of it (sparse,
    nested): its values are put back with `copy_` alone."""
    if t.layout is not _STRIDED or t.is_nested:
        return None
    return _Seen.of(t)


class _Saved(NamedTuple):
    """A tensor as it was before a call wrote it: its values, version, and its memory (None:
    a sparse or nested tensor, see _seen_of)."""

    tensor: torch.Tensor
    copy: torch.Tensor
    version: int
    seen: Optional[_Seen]


def _copy_back(
    saved: _Saved, warnings: list[str], what: str = "an argument of the forward"
) -> None:
    """A tensor's values as copied before a call wrote them (and its version, see
    _put_values), in its own memory seen as it was: `x.unsqueeze_(0)`, `x.t_()`,
    `x.resize_(2)` change how it is seen, `x.data = w.data` which memory (the values go back
    to x's, never to w's), `x.data = x.data.half()` as what; a view the caller holds still
    sees it."""
    t, copy, version, seen = saved
    try:
        if seen is not None and not seen.same(t):
            seen.put_back(t)
        _put_values(t, copy, version)
    except Exception:  # an argument the forward gave other memory (`x.data = …`)
        try:
            t.data = copy
        except Exception as exc:
            warnings.append(f"{what} could not be put back: {exc}")


_set_versions = getattr(getattr(torch._C, "_autograd", None), "_unsafe_set_version_counter", None)


def _version(t: torch.Tensor) -> int:
    """t's version counter (-1: it keeps none, an inference tensor)."""
    try:
        return int(t._version)
    except Exception:
        return -1


def _put_values(t: torch.Tensor, copy: torch.Tensor, version: int) -> None:
    """`t` holding `copy`'s values again, its version counter as it was (`version`; -1: as
    it is): a backward the program has pending (paused between a forward and its
    `loss.backward()`) saved t at that version, and its values are those it saved. Written
    through `.data`, which bumps no counter; a `copy_` made the program's backward fail
    ("modified by an inplace operation")."""
    _regrow(t)
    if t.layout is not _STRIDED:  # (a sparse tensor's `.data.copy_` leaves it as it is)
        t.copy_(copy)
    else:
        try:
            t.data.copy_(copy)
        except Exception:  # (a tensor subclass without a plain `.data`)
            t.copy_(copy)
    if version >= 0 and _set_versions is not None and _version(t) != version:
        with contextlib.suppress(Exception):
            _set_versions((t,), (version,))


def _global(g: torch.Generator) -> bool:
    """torch's own generator of a device (kept by RngState, from before the forward)."""
    if g is torch.default_generator:
        return True
    cuda = getattr(torch.cuda, "default_generators", ())
    return any(g is d for d in cuda)


def _in_its_memory(t: torch.Tensor) -> bool:
    """Whether all of t's elements lie in its storage: a storage resized to nothing under the
    tensor (FSDP frees its gathered parameters so) holds none of them, and reading them,
    or writing, would touch freed memory."""
    try:
        return t.untyped_storage().nbytes() >= _bytes_needed(t)
    except Exception:
        return False


def _bytes_needed(t: torch.Tensor) -> int:
    """The bytes of storage t's elements reach to."""
    if t.numel() == 0:
        return 0
    extent = 1 + sum((size - 1) * abs(step) for size, step in zip(t.shape, t.stride()))
    return (int(t.storage_offset()) + extent) * t.element_size()


def _regrow(t: torch.Tensor) -> None:
    """t's storage made large enough for its elements again, if the forward freed it
    (`untyped_storage().resize_(0)`, as offloading code frees a tensor after use): a copy
    into freed memory crashes the process. (A plain dense tensor only: others keep theirs.)"""
    if type(t) not in _PLAIN or t.layout is not _STRIDED:
        return
    with contextlib.suppress(Exception):
        storage = t.untyped_storage()
        needed = _bytes_needed(t)
        if storage.nbytes() < needed:
            storage.resize_(needed)


def _storage_key(t: torch.Tensor) -> int:
    """Where t's storage is, a DTensor's shard's (0: none — another subclass, a nested
    tensor, a meta tensor)."""
    with _NO_TORCH_FUNCTION():
        try:
            return _memory(t).untyped_storage().data_ptr()
        except Exception:
            return 0


def _memory(t: torch.Tensor) -> torch.Tensor:
    """The tensor that holds t's values: t, or a DTensor's local shard (a wrapper without
    storage of its own: a write through it writes the shard)."""
    if type(t) is torch.Tensor or type(t) is nn.Parameter:
        return t
    inner = inner_tensor(t)
    return t if inner is None else inner


def refill(now: Any, before: Any) -> None:
    """`now` (a dict, list or set) holding exactly the objects of `before` again, by identity."""
    if len(now) == len(before):
        if isinstance(now, dict):
            if all(map(operator.is_, map(now.get, before), before.values())):
                return
        elif isinstance(now, list):
            if all(map(operator.is_, now, before)):
                return
        elif now == before:  # a set: members by hash, and by identity first
            return
    if isinstance(now, list):
        now[:] = before
    else:
        now.clear()
        now.update(before)


def _user_globals(classes: Iterable[type]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The globals of the files of the user's own module classes (a global step the forward
    counts, a list it logs to, a dict it fills), as they are: the namespace itself and a
    copy. Libraries' files are left alone."""
    from .usercode import is_user_file  # (no torch: imported here to keep state's imports lean)

    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    seen: set[int] = set()
    for cls in classes:
        module = sys.modules.get(getattr(cls, "__module__", "") or "")
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict or id(namespace) in seen:
            continue
        seen.add(id(namespace))
        file = getattr(module, "__file__", None)
        if module is not sys.modules.get("__main__") and not (
            isinstance(file, str) and is_user_file(file)
        ):
            continue
        out.append((namespace, dict(namespace)))
    return out


def _put_back_globals(namespace: dict[str, Any], before: dict[str, Any]) -> None:
    """A module's globals as they were: names the forward rebound or added (its dicts, lists
    and sets are refilled with the module attributes'). Key by key, never cleared: other
    code of the program may run in that module meanwhile."""
    if len(namespace) != len(before) or not all(
        map(operator.is_, namespace.values(), before.values())
    ):
        for key in [k for k in namespace if k not in before]:
            del namespace[key]
        for key, value in before.items():
            if namespace.get(key, _MISSING) is not value:
                namespace[key] = value


_MISSING = object()

_Table = Mapping[str, Any]
_EMPTY: _Table = MappingProxyType({})  # a table that was empty (most tables): nothing copied


def _put_back(now: dict[str, Any], saved: _Table) -> None:
    if type(now) is not dict and not isinstance(now, dict):
        _put_back_script(now, saved)
        return
    # every saved key still holds the very same object (by identity: see restore)
    if len(now) != len(saved) or not all(map(operator.is_, map(now.get, saved), saved.values())):
        now.clear()
        now.update(saved)


def _put_back_script(now: Any, saved: _Table) -> None:
    """A ScriptModule's table: torch.jit's view of its compiled module, which has no `get`
    and takes no new or deleted keys; each entry the forward rebound is set back."""
    for key, value in saved.items():
        if key in now and now[key] is not value:
            now[key] = value


_SAMPLES = 64
# Reading a CPU parameter's sample straight from its memory: a few µs, against ~30 µs for
# the same sample taken with torch calls (8,000 parameters, twice per trace, add up).
_ELEMENT_FORMATS = {1: "B", 2: "H", 4: "I", 8: "Q"}  # compared as raw bytes, never as numbers
_PyBUF_READ = 0x100
_STRIDED = torch.strided
_PLAIN = (torch.Tensor, nn.Parameter)
_memory_view = ctypes.pythonapi.PyMemoryView_FromMemory
_memory_view.restype = ctypes.py_object
_memory_view.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)


class _Param:
    """A parameter as it was: its storage (kept, to point the parameter back at it if the
    forward repoints it) and a few of its values, to notice writes nothing saw."""

    __slots__ = (
        "path",
        "attr",
        "param",
        "memory",
        "requires_grad",
        "storage",
        "storage_ptr",
        "layout",
        "sample",
        "alias",
        "before",
    )

    def __init__(self, path: str, attr: str, p: torch.Tensor) -> None:
        self.path, self.attr = path, attr  # its name, joined only for a warning
        self.param = p
        self.requires_grad = p.requires_grad  # a forward may freeze or unfreeze it
        if type(p) is not nn.Parameter and type(p) is not torch.Tensor:
            p = _memory(p)
        self.memory = p  # its values' tensor: a DTensor's shard
        # not a dense CPU tensor: an alias to repoint to, a sample taken with torch calls
        self.alias: Optional[torch.Tensor] = None
        self.before: Optional[torch.Tensor] = None
        self.storage: Any = None  # the untyped storage, held for the trace
        self.storage_ptr = 0
        self.layout: Optional[_Layout] = None
        self.sample: Optional[bytes] = None
        if p.is_meta:
            return
        try:
            storage = p.untyped_storage()
            ptr = storage.data_ptr()
        except Exception:
            return
        self.storage, self.storage_ptr = storage, ptr
        # (_known_layout inline: a snapshot takes one per parameter, 8,000 on a large model)
        layout = _layouts.get(id(p))
        if layout is None or not layout.fits(p, storage, ptr):
            layout = _layout(p, storage, ptr)
        if layout is None:
            self.alias, self.before = p.detach(), _torch_sample(p)
            return
        self.layout = layout
        self.sample = layout.view.tobytes()

    def name(self) -> str:
        return f"{self.path}.{self.attr}" if self.path else self.attr

    def written(self) -> bool:
        """Whether a write nothing saw changed its sampled values (the parameter pointed back
        at its own storage first, as `repoint`)."""
        layout = self.layout
        if layout is not None:  # the common case first: its memory where it was
            p = self.memory
            try:
                if (p.data_ptr(), p.dtype, p.shape, p.stride()) == layout.where:
                    return (
                        self.storage.nbytes() < layout.end or layout.view.tobytes() != self.sample
                    )
            except Exception:
                return True
        return self.changed(self.repoint())

    def repoint(self) -> Any:
        """Point the parameter back at its own storage if the forward gave it another;
        returns that storage (None when it has none to check)."""
        p = self.memory
        if not self.storage_ptr:  # (meta tensors have none)
            return None
        layout, alias = self.layout, self.alias
        try:
            now = (p.data_ptr(), p.dtype, p.shape, p.stride())
            if layout is not None:
                # its own memory, seen as it was: the memory the kept storage holds (no other
                # storage can start there while that one lives), in the same layout
                if now == layout.where:
                    return self.storage
            elif alias is not None:
                storage = p.untyped_storage()
                if storage.data_ptr() == self.storage_ptr and now == (
                    alias.data_ptr(),
                    alias.dtype,
                    alias.shape,
                    alias.stride(),
                ):
                    return storage
        except Exception:
            return None
        if layout is not None:
            original = torch.empty(0, dtype=layout.dtype, device=self.storage.device).set_(
                self.storage, layout.offset, layout.shape, layout.stride
            )
        elif alias is not None:
            original = alias
        else:
            return None
        p.data = original
        return self.storage

    def changed(self, storage: Any) -> bool:
        """Whether its sampled values changed (a write nothing saw); `storage`: repoint's."""
        if storage is None:
            return False
        layout = self.layout
        if layout is not None:
            try:
                if self.memory.data_ptr() != layout.ptr or storage.nbytes() < layout.end:
                    return True  # its memory moved or shrank under it: not what was sampled
                return layout.view.tobytes() != self.sample
            except Exception:
                return True
        before = self.before
        if before is None:
            return False
        now = _torch_sample(self.memory)
        if now is None or now.shape != before.shape:
            return True
        return not torch.equal(now.view(torch.uint8), before.view(torch.uint8))


def value_sample(t: torch.Tensor) -> Optional[bytes]:
    """Up to _SAMPLES of t's values as raw bytes, as a parameter's are sampled (see _Param):
    a write through `.data`, which leaves t's version as it was, very likely changes them.
    None: no sample to take (an empty or meta tensor, one that won't say where it lives)."""
    try:
        with _NO_TORCH_FUNCTION():
            return _value_sample(t)
    except Exception:
        return None


def _value_sample(t: torch.Tensor) -> Optional[bytes]:
    if t.is_meta:
        return None
    storage = t.untyped_storage()
    layout = _known_layout(t, storage, storage.data_ptr())
    if layout is not None:
        return layout.view.tobytes()
    sample = _torch_sample(t)
    return None if sample is None else bytes(sample.view(torch.uint8).cpu().tolist())


def _torch_sample(p: torch.Tensor) -> Optional[torch.Tensor]:
    """Up to _SAMPLES evenly spaced values of a contiguous tensor on any device, copied."""
    if p.numel() == 0 or not p.is_contiguous():
        return None
    flat = p.detach().view(-1)
    n = flat.numel()
    k = min(_SAMPLES, n)
    # Integer steps: float32 linspace rounds indexes past 2**24 (beyond the last one).
    idx = torch.arange(k, device=flat.device) * (n - 1) // max(k - 1, 1)
    return flat[idx].clone()


class _Layout:
    """Where a dense CPU parameter's memory is and a view of its sampled bytes there. Kept
    between traces (a model is traced again and again, and taking the view costs more than
    the rest of a snapshot): holds neither the parameter (not even weakly: a weak reference
    makes torch.utils.swap_tensors refuse it, as `model.double()` does with torch's
    swap_module_params_on_conversion) nor its storage, so it keeps no memory alive; used
    only while `fits` says the tensor asked about lies exactly there, in a storage that
    holds it — whichever tensor that is, the view reads its memory."""

    __slots__ = (
        "storage_ptr",
        "ptr",
        "end",
        "dtype",
        "shape",
        "stride",
        "offset",
        "view",
        "where",
    )

    def __init__(self, p: torch.Tensor, storage_ptr: int, ptr: int, end: int, view: Any) -> None:
        self.storage_ptr, self.ptr, self.end, self.view = storage_ptr, ptr, end, view
        self.dtype, self.shape, self.stride = p.dtype, p.shape, p.stride()
        self.offset = int(p.storage_offset())
        self.where = (ptr, self.dtype, self.shape, self.stride)  # as a parameter's now is read

    def fits(self, p: torch.Tensor, storage: Any, storage_ptr: int) -> bool:
        """Whether `p` is still the parameter laid out here, its memory all in `storage`."""
        try:
            return (
                storage_ptr == self.storage_ptr
                and (p.data_ptr(), p.dtype, p.shape, p.stride()) == self.where
                and storage.nbytes() >= self.end
            )
        except Exception:
            return False


_layouts: dict[int, _Layout] = {}  # id(parameter) → its layout, for the last model traced


def _keep_layouts(ids: Mapping[int, Any]) -> None:
    """The layouts kept bounded: past twice these tensors' (a snapshot's parameters) and
    _LAYOUTS_SPARE more, only theirs stay (two models traced in turn, as a comparison does,
    keep both; the parameters of models gone since go)."""
    if len(_layouts) > 2 * len(ids) + _LAYOUTS_SPARE:
        for key in [key for key in _layouts if key not in ids]:
            del _layouts[key]


_LAYOUTS_SPARE = 1000


def _known_layout(p: torch.Tensor, storage: Any, storage_ptr: int) -> Optional[_Layout]:
    """p's layout as remembered from an earlier trace while it still fits, else taken now
    (`_layout`); None for a tensor that has none."""
    layout = _layouts.get(id(p))
    if layout is not None and layout.fits(p, storage, storage_ptr):
        return layout
    return _layout(p, storage, storage_ptr)


def _layout(p: torch.Tensor, storage: Any, storage_ptr: int) -> Optional[_Layout]:
    """The layout of a dense CPU tensor, with a view of up to _SAMPLES evenly strided elements
    as raw bytes of its memory (`storage`: its untyped storage), remembered for the next
    trace; None for anything else (other devices, subclasses, views with gaps)."""
    try:
        if type(p) not in _PLAIN or not p.is_cpu or p.layout is not _STRIDED:
            return None  # a subclass (DTensor …) keeps the torch path
        if p.is_quantized or not p.is_contiguous():
            return None
        item = p.element_size()
        fmt = _ELEMENT_FORMATS.get(item)
        n = p.numel()
        ptr = p.data_ptr()
        if fmt is None or not n or not ptr:
            return None
        size = n * item
        end = int(p.storage_offset()) * item + size
        if storage.nbytes() < end:
            return None  # a storage resized under the tensor: its memory is not all there
        view = _memory_view(ptr, size, _PyBUF_READ)
        if n > _SAMPLES:
            view = view.cast(fmt)[:: -(-n // _SAMPLES)]
        layout = _Layout(p, storage_ptr, ptr, end, view)
    except Exception:
        return None
    _layouts[id(p)] = layout
    return layout
