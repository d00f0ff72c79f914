"""Wrapper modules shown as a mark on the model they wrap, not as a level of their own.

`torch.compile`'s OptimizedModule, DistributedDataParallel, DataParallel, FSDP1's
FullyShardedDataParallel and activation-checkpoint wrappers hold the user's module as a child
(`_orig_mod`, `module`, `_fsdp_wrapped_module`, `_checkpoint_wrapped_module`): every path
under them gains a prefix that matches nothing in the user's code or state_dict. A trace
still runs the wrapper's own forward (DDP's buffer broadcast and FSDP1's all-gathers are
part of the program), but the wrapper's call and the wrapped module's call are one node:
the wrapped module's, with `attrs.wrapped_by` naming the wrappers, and paths are the wrapped
model's own. FSDP2's `fully_shard` (and `replicate`) swap a module's class for a
subclass (`FSDPLinear`): the node shows the module's own class with the same mark.

A wrapper class can only exist once its module is imported: nothing here imports one.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import nn

from .state import refill

# (module, class, attribute holding the wrapped module)
_WRAPPERS = (
    ("torch._dynamo.eval_frame", "OptimizedModule", "_orig_mod"),
    ("torch.nn.parallel.distributed", "DistributedDataParallel", "module"),
    ("torch.nn.parallel.data_parallel", "DataParallel", "module"),
    (
        "torch.distributed.fsdp.fully_sharded_data_parallel",
        "FullyShardedDataParallel",
        "_fsdp_wrapped_module",
    ),
    (
        "torch.distributed.algorithms._checkpoint.checkpoint_wrapper",
        "ActivationWrapper",
        "_checkpoint_wrapped_module",
    ),
)
_FSDP2 = ("torch.distributed.fsdp._fully_shard._fully_shard", "FSDPModule")
_REPLICATE = ("torch.distributed._composable.replicate_with_fsdp", "ReplicateModule")


def _loaded(module: str, name: str) -> Optional[type]:
    cls = getattr(sys.modules.get(module), name, None)
    return cls if isinstance(cls, type) else None


def _wrapper_classes() -> list[tuple[type, str]]:
    return [(c, attr) for mod, name, attr in _WRAPPERS if (c := _loaded(mod, name)) is not None]


def label(module: nn.Module) -> str:
    """How a wrapper is named in `wrapped_by`: what the user wrote to get it."""
    name = _class_label(type(module))
    if _is_instance(module, _FSDP2):  # (FSDP2's class of Net: FSDPNet; replicate's: ReplicateNet)
        return "replicate" if _is_instance(module, _REPLICATE) else "fully_shard"
    return name


def _is_instance(module: nn.Module, where: tuple[str, str]) -> bool:
    cls = _loaded(*where)
    return cls is not None and isinstance(module, cls)


def wrapped_child(module: nn.Module, classes: list[tuple[type, str]]) -> Optional[nn.Module]:
    """The module `module` wraps, if it is a wrapper."""
    for cls, attr in classes:
        if isinstance(module, cls):
            inner = module._modules.get(attr)
            return inner if isinstance(inner, nn.Module) else None
    return None


def unwrap(model: nn.Module) -> tuple[nn.Module, list[str]]:
    """The model inside any wrappers around it, and their labels, outermost first."""
    classes = _wrapper_classes()
    labels: list[str] = []
    inner = wrapped_child(model, classes) if classes else None
    while inner is not None:
        labels.append(label(model))
        model = inner
        inner = wrapped_child(model, classes)
    return model, labels


@dataclass
class Wrapping:
    """The wrappers of one traced model."""

    # id(module) → its path in the wrapped model (no `module.`, `_orig_mod.` segments)
    paths: dict[int, str]
    # id(wrapper) → the innermost module it wraps; id(that module) → itself
    target: dict[int, nn.Module] = field(default_factory=dict[int, nn.Module])
    # id(module drawn) → the labels of what wraps it, outermost first
    labels: dict[int, list[str]] = field(default_factory=dict[int, list[str]])
    # id(module) → the class to show (FSDP2's `FSDPLinear` → `Linear`)
    classes: dict[int, type] = field(default_factory=dict[int, type])


def find_wrappers(named: list[tuple[str, nn.Module]]) -> Optional[Wrapping]:
    """The wrappers among `named` (`model.named_modules()`, parents first); None when there
    are none (the usual case, found without walking the tree when no wrapper class is even
    loaded)."""
    classes = _wrapper_classes()
    fsdp2 = _loaded(*_FSDP2)
    if not classes and fsdp2 is None:
        return None
    markers = tuple(c for c, _ in classes) + ((fsdp2,) if fsdp2 is not None else ())
    if not any(issubclass(t, markers) for t in {type(m) for _, m in named}):
        return None  # loaded, but none in this model: no walk of the tree
    found = Wrapping({})
    by_path: dict[str, nn.Module] = {}
    any_wrapper = False
    for path, m in named:
        by_path[path] = m
        parent_path, _, name = path.rpartition(".")
        parent = by_path.get(parent_path) if path else None
        if parent is None:
            found.paths[id(m)] = path
        else:
            base = found.paths.get(id(parent), parent_path)
            if found.target.get(id(parent)) is not None and wrapped_child(parent, classes) is m:
                found.paths[id(m)] = base  # the wrapped module takes its wrapper's place
            else:
                found.paths[id(m)] = f"{base}.{name}" if base else name
        inner = wrapped_child(m, classes) if classes else None
        if inner is not None:
            any_wrapper = True
            found.target[id(m)] = m  # the innermost below, once the chain is known
        if fsdp2 is not None and isinstance(m, fsdp2):
            any_wrapper = True
            found.classes[id(m)] = _own_class(type(m), fsdp2)
            found.labels.setdefault(id(m), []).append(label(m))
    if not any_wrapper:
        return None
    for key, wrapper in list(found.target.items()):
        if found.target.get(key) is not wrapper:
            continue
        chain = [wrapper]
        inner = wrapped_child(wrapper, classes)
        while inner is not None:
            chain.append(inner)
            inner = wrapped_child(inner, classes)
        innermost = chain[-1]
        for m in chain:
            found.target[id(m)] = innermost
        labels = [x for m in chain[:-1] for x in _wrapper_labels(m, fsdp2)]
        own = found.labels.get(id(innermost), [])
        found.labels[id(innermost)] = labels + [x for x in own if x not in labels]
    return found


def _wrapper_labels(wrapper: nn.Module, fsdp2: Optional[type]) -> list[str]:
    """A wrapper's marks: `fully_shard` of a CheckpointWrapper (torchtitan's order: FSDP2
    makes the wrapper's class its own subclass of it) is both."""
    if fsdp2 is not None and isinstance(wrapper, fsdp2):
        return [label(wrapper), _class_label(_own_class(type(wrapper), fsdp2))]
    return [label(wrapper)]


def _class_label(cls: type) -> str:
    """A wrapper class as the user wrote it: `torch.compile` for its OptimizedModule."""
    return "torch.compile" if cls.__name__ == "OptimizedModule" else cls.__name__


def _own_class(cls: type, marker: type) -> type:
    """The user's class under FSDP2's generated subclass (`FSDPLinear(FSDPModule, Linear)`)."""
    for base in cls.__mro__[1:]:
        if issubclass(base, nn.Module) and not issubclass(base, marker):
            return base
    return cls


def compiler_loaded() -> bool:
    """Whether torch.compile's machinery is loaded in this process (it is never imported
    for a trace: that costs seconds)."""
    return "torch._dynamo.eval_frame" in sys.modules


@contextlib.contextmanager
def compiled_run_eagerly(named: list[tuple[str, nn.Module]]) -> Iterator[None]:
    """torch.compile'd code runs eagerly while the block runs (`set_stance("force_eager")`):
    the trace sees every op, nothing is compiled, and the user's compiled code and its caches
    are as they were afterwards. Calling an OptimizedModule while the tracer's global module
    hooks are registered makes torch warn that the hooks fire twice; the trace handles that
    itself, so that one warning is not shown."""
    if not compiler_loaded():  # nothing was ever compiled in this process
        yield
        return
    import torch

    optimized = _loaded("torch._dynamo.eval_frame", "OptimizedModule")
    has_optimized = optimized is not None and any(isinstance(m, optimized) for _, m in named)
    with torch.compiler.set_stance("force_eager"):
        if not has_optimized:
            yield
            return
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks"
            )
            yield


@contextlib.contextmanager
def fsdp_state_kept(named: list[tuple[str, nn.Module]]) -> Iterator[None]:
    """FSDP2 modules as sharded after the block as before it. A forward unshards each
    `fully_shard` module (its parameters become full tensors) and reshards only some of them
    after (never the root): FSDP's own state says which. Putting the sharded parameters back
    behind FSDP's back (as the trace does for any module whose parameters a forward rebinds)
    would leave FSDP believing the module unsharded, and the program's next forward would
    mix full and sharded tensors; so a module the trace unsharded is resharded through FSDP.

    A module gathered when the block begins (between micro-batches of gradient accumulation,
    after `unshard()`) stays gathered through it: resharding would free the memory of the
    parameters the program holds. And FSDP's one-time set-up at a model's first forward
    (`_lazy_init`: which module is the root, hooks, names), done by the trace's forward, is
    undone: the program's own first forward does it, through the root it has (a block
    traced first would have become the root, and the program's model fail)."""
    fsdp2 = _loaded(*_FSDP2)
    modules = [m for _, m in named if fsdp2 is not None and isinstance(m, fsdp2)]
    before = [(m, _own_tables(m, fsdp2)) for m in modules]  # type: ignore[arg-type]
    states = _fsdp_states(modules)
    unborn = [_Unborn(s) for s in states if getattr(s, "_is_root", False) is None]
    gathered = [
        (g, g.post_forward_mesh_info)
        for s in states
        for g in getattr(s, "_fsdp_param_groups", ())
        if getattr(g, "is_unsharded", False)
    ]
    for group, _ in gathered:
        group.post_forward_mesh_info = None  # (FSDP's own "don't reshard after forward")
    try:
        yield
    finally:
        for group, mesh_info in gathered:
            group.post_forward_mesh_info = mesh_info
        for m, tables in before:
            if any(_changed(sub, table) for sub, table in tables):
                with contextlib.suppress(Exception):
                    m.reshard()  # type: ignore[operator]
        for state in unborn:
            state.restore()


def fsdp2_shards(named: list[tuple[str, nn.Module]]) -> list[tuple[torch.Tensor, Any]]:
    """(the tensor FSDP2 all-gathers for a parameter, the sharded parameter) of every
    `fully_shard` module's parameters: the flat view of this rank's shard its all-gather
    reads (not the DTensor's local tensor), which stands for the parameter's values."""
    fsdp2 = _loaded(*_FSDP2)
    if fsdp2 is None:
        return []
    found = []
    for state in _fsdp_states([m for _, m in named if isinstance(m, fsdp2)]):
        for group in getattr(state, "_fsdp_param_groups", ()):
            for p in getattr(group, "fsdp_params", ()):
                data = p.__dict__.get("_sharded_param_data")
                if isinstance(data, torch.Tensor):
                    found.append((data, p.__dict__.get("sharded_param")))
    return found


def _fsdp_states(modules: list[nn.Module]) -> list[Any]:
    """The FSDP2 states of `modules`, each once (one state may serve several modules)."""
    found: dict[int, Any] = {}
    for m in modules:
        try:
            state = m._get_fsdp_state()  # type: ignore[operator]
        except Exception:
            continue
        found.setdefault(id(state), state)
    return list(found.values())


_NONE: Any = object()


class _Unborn:
    """An FSDP2 state before its first forward, as it was: what FSDP's `_lazy_init` sets on
    it, its parameter groups and their parameters (the root, the shared contexts, the
    groups' indexes, names and state-dict hooks), put back after the trace's forward. The
    hooks the lazy init registered are taken off the modules by the trace's restore (as any
    hook a forward registers): the groups forget them too, and the next lazy init adds them."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.attrs = dict(state.__dict__)
        ctx = getattr(state, "_state_ctx", None)
        self.all_states = list(getattr(ctx, "all_states", ()))
        self.groups = [
            (
                g,
                dict(g.__dict__),
                dict(getattr(g, "_module_to_pre_save_state_dict_hook_handle", {})),
                dict(getattr(g, "_module_to_pre_load_state_dict_hook_handle", {})),
            )
            for g in getattr(state, "_fsdp_param_groups", ())
        ]
        self.names = [
            (p, p.__dict__.get("_param_fqn", _NONE))
            for g, *_ in self.groups
            for p in getattr(g, "fsdp_params", ())
        ]

    def restore(self) -> None:
        with contextlib.suppress(Exception):
            refill(self.state.__dict__, self.attrs)
            ctx = getattr(self.state, "_state_ctx", None)
            if ctx is not None and isinstance(getattr(ctx, "all_states", None), list):
                ctx.all_states[:] = self.all_states
            for group, attrs, saves, loads in self.groups:
                refill(group.__dict__, attrs)
                refill(getattr(group, "_module_to_pre_save_state_dict_hook_handle", {}), saves)
                refill(getattr(group, "_module_to_pre_load_state_dict_hook_handle", {}), loads)
            for param, name in self.names:
                if name is _NONE:
                    param.__dict__.pop("_param_fqn", None)
                else:
                    param._param_fqn = name


def _own_tables(
    module: nn.Module, fsdp2: type
) -> list[tuple[nn.Module, dict[str, Optional[nn.Parameter]]]]:
    """The parameter tables of `module` and of its submodules up to nested FSDP modules (the
    parameters its own all-gather unshards)."""
    out: list[tuple[nn.Module, dict[str, Optional[nn.Parameter]]]] = []
    stack = [module]
    while stack:
        m = stack.pop()
        out.append((m, dict(m._parameters)))
        stack.extend(c for c in m._modules.values() if c is not None and not isinstance(c, fsdp2))
    return out


def _changed(module: nn.Module, table: dict[str, Optional[nn.Parameter]]) -> bool:
    now = module._parameters
    return len(now) != len(table) or any(now.get(k) is not v for k, v in table.items())
