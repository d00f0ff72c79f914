"""What a torch callable is called: its qualified target, short name and argument names."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import torch

from .collectives import target_role

# C modules whose functions users know under a public namespace.
_PUBLIC_MODULE = {
    "torch._C._VariableFunctions": "torch",
    "torch._C._VariableFunctionsClass": "torch",
    "torch._C._nn": "torch.nn.functional",
    "torch._C._linalg": "torch.linalg",
    "torch._C._fft": "torch.fft",
    "torch._C._special": "torch.special",
    "torch._C._nested": "torch.nested",
    "torch.functional": "torch",
    "torch._tensor": "Tensor",
    "torch.distributed.distributed_c10d": "torch.distributed",
}

_INPLACE_DUNDERS = frozenset(
    "__iadd__ __isub__ __imul__ __itruediv__ __ifloordiv__ __imod__ __ipow__ __iand__ __ior__ "
    "__ixor__ __ilshift__ __irshift__ __imatmul__ __setitem__".split()
)


@dataclass(frozen=True, slots=True)
class FuncInfo:
    target: str
    name: str
    writes_first_arg: bool  # in-place by name: add_, __iadd__, __setitem__
    arg_names: tuple[str, ...]
    # may write the storage of its first argument (a tensor or a list of them): in place,
    # `_foreach_*_`, `.data = …` (the data setter), `.numpy()` (writable from numpy)
    may_write: bool = False
    # collectives.target_role: a torch.distributed op the collective watch records (1), or
    # the wrapper of a collective's result (2)
    distributed: int = 0
    # where its `inplace` argument is among its positional ones (F.relu(x, inplace=True)
    # writes x, as may_write says: only when asked); INPLACE_KEYWORD: a keyword only; -1: none
    inplace_at: int = -1
    # a builtin's overloads, in torch's order: each one's positional (names, schema types);
    # a call's arguments are named after the first whose types they fit (overload_names)
    overloads: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    # writes the parameters' `.grad`: a backward (`loss.backward()` inside a forward, test-
    # time adaptation) or the `.grad` setter (`p.grad = …`, `zero_grad`); may_write too
    grads: bool = False
    # the positions of what it writes when that is not (only) its first argument: a custom
    # op's `mutates_args` (its schema's `Tensor(a!)`), F.embedding's weight under max_norm,
    # F.batch_norm's running statistics in training; given by name too (arg_names)
    written_at: tuple[int, ...] = ()
    # the argument that must be asked for the write to happen (`max_norm`, `training`)
    written_if: str = ""


INPLACE_KEYWORD = 1 << 30


_cache: dict[Any, FuncInfo] = {}


def func_info(func: Callable[..., Any]) -> FuncInfo:
    try:
        info = _cache.get(func)
    except TypeError:  # unhashable callable
        return _describe(func)
    if info is None:
        info = _cache[func] = _describe(func)
    return info


def _describe(func: Callable[..., Any]) -> FuncInfo:
    raw_name = getattr(func, "__name__", None) or type(func).__name__
    qualname = getattr(func, "__qualname__", raw_name) or raw_name
    objclass = getattr(func, "__objclass__", None)
    module = getattr(func, "__module__", None)
    schema = _op_schema(func)
    if schema is not None and "::" in getattr(schema, "name", ""):
        # a torch.ops operator (custom C++/Python ops included): torch.ops.NS.NAME
        ns, _, op = schema.name.partition("::")
        target, short = f"torch.ops.{ns}.{op}", op
        names = tuple(a.name for a in schema.arguments if not a.kwarg_only)
        mutated = tuple(i for i, a in enumerate(schema.arguments) if _written(a))
        writes = op.endswith("_") or bool(mutated)
        return FuncInfo(
            target,
            short,
            writes,
            names,
            writes,
            target_role(target),
            written_at=mutated if mutated not in ((), (0,)) else (),
        )
    if raw_name == "__get__" and objclass is not None:
        # a Tensor property such as `.T` or `.data`: `__get__` of a getset descriptor
        prop = getattr(getattr(func, "__self__", None), "__name__", "property")
        target, short = f"Tensor.{prop}", prop
    elif objclass is not None and objclass.__name__ in ("TensorBase", "Tensor"):
        target, short = f"Tensor.{raw_name}", raw_name
    elif qualname.startswith(("Tensor.", "TensorBase.")):
        target, short = "Tensor." + qualname.split(".", 1)[1], raw_name
    else:
        ns = _PUBLIC_MODULE.get(module or "", module or "torch")
        qualname = qualname.removeprefix("_VariableFunctionsClass.")
        target, short = f"{ns}.{qualname}", raw_name
    writes = raw_name in _INPLACE_DUNDERS or (
        raw_name.endswith("_") and not raw_name.endswith("__") and not raw_name.startswith("_")
    )
    name = short.strip("_") if short.startswith("__") else short
    names, overloads = _arg_names(func)
    inplace_at = _inplace_at(func, names)
    grads = raw_name == "backward" or (
        raw_name == "__set__" and getattr(getattr(func, "__self__", None), "__name__", "") == "grad"
    )
    written_at, written_if = _WRITES_BESIDE.get(target, ((), ""))
    may_write = (
        writes
        or (raw_name.startswith("_foreach_") and raw_name.endswith("_"))
        or raw_name in ("__set__", "numpy", "set_")
        or inplace_at >= 0
        or grads
        or bool(written_at)
    )
    return FuncInfo(
        target,
        name or short,
        writes,
        names,
        may_write,
        inplace_at=inplace_at,
        overloads=overloads,
        grads=grads,
        written_at=written_at,
        written_if=written_if,
    )


def _inplace_at(func: Callable[..., Any], names: tuple[str, ...]) -> int:
    """FuncInfo.inplace_at: where a Python function's `inplace` parameter is."""
    if "inplace" in names:
        return names.index("inplace")
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return -1
    return INPLACE_KEYWORD if "inplace" in params else -1


# torch functions whose kernel writes an argument besides its result, when asked: its
# position(s) and the argument that asks (embedding_renorm_ under max_norm; the running
# statistics in training)
_WRITES_BESIDE: dict[str, tuple[tuple[int, ...], str]] = {
    "torch.nn.functional.embedding": ((1,), "max_norm"),
    "torch.nn.functional.embedding_bag": ((1,), "max_norm"),
    "torch.nn.functional.batch_norm": ((1, 2), "training"),
}


def _written(argument: Any) -> bool:
    """Whether a schema argument is written by its op (`Tensor(a!)`)."""
    alias = getattr(argument, "alias_info", None)
    return alias is not None and bool(getattr(alias, "is_write", False))


def written_argument(info: FuncInfo, args: tuple, kwargs: Optional[dict]) -> Any:
    """What a call that may write (`info.may_write`) writes: its first argument, given by
    position or by name (`nn.init.normal_` hands torch its tensor as `tensor=`), or a list
    of those at `info.written_at`; None when it writes nothing (`inplace=False`, the
    default, asked)."""
    if info.written_at:
        return _written_beside(info, args, kwargs)
    at = info.inplace_at
    if at >= 0:
        asked = args[at] if at < len(args) else (kwargs or {}).get("inplace", False)
        if asked is not True and not (type(asked) is int and asked):
            return None
    if args:
        return args[0]
    if kwargs and info.arg_names:
        return kwargs.get(info.arg_names[0])
    return None


def _written_beside(info: FuncInfo, args: tuple, kwargs: Optional[dict]) -> Optional[list[Any]]:
    """The arguments at `info.written_at` (None when `info.written_if` was not asked)."""
    names = info.arg_names
    named = dict(zip(names, args))
    if kwargs:
        named.update(kwargs)
    if info.written_if:
        asked = named.get(info.written_if)
        if asked is None or asked is False:
            return None
    return [named.get(names[i]) for i in info.written_at if i < len(names)]


def _op_schema(func: Any) -> Any:
    """The schema of a torch.ops overload (`_schema`) or packet (its default overload)."""
    schema = getattr(func, "_schema", None)
    if schema is None and isinstance(getattr(func, "_qualified_op_name", None), str):
        try:
            schemas = func._schemas
            schema = schemas.get("") or next(iter(schemas.values()), None)
        except Exception:
            return None
    return schema


def _arg_names(
    func: Callable[..., Any],
) -> tuple[tuple[str, ...], tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]]:
    """Positional parameter names: from the Python signature, else from the aten schema;
    and a builtin's overloads (FuncInfo.overloads: none for a Python function, or a single
    one). A trailing list parameter (`view(self, size)`) also collects varargs
    (`x.view(1, 2, 3)`), marked with a leading `*`."""
    try:
        params = inspect.signature(func).parameters.values()
        return tuple(
            p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ), ()
    except (TypeError, ValueError):
        pass
    name = getattr(func, "__name__", "")
    if name.startswith("__") or not name:
        return (), ()
    try:
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{name}")
    except Exception:
        return (), ()
    if not schemas:
        return (), ()
    overloads = [[a for a in schema.arguments if not a.kwarg_only] for schema in schemas]
    # the first overload's names, taken further by one that names more after the same ones
    # (`mean(self)` names no `dim, keepdim`: `mean.dim`'s do), never renamed by one that
    # names another first (`arange.start_step`'s `start` is `arange(end)`'s one argument)
    args = overloads[0]
    for other in sorted(overloads[1:], key=len, reverse=True):
        if len(other) > len(args) and [a.name for a in other[: len(args)]] == [
            a.name for a in args
        ]:
            args = other
            break
    typed = tuple((_names(o), tuple(str(a.type) for a in o)) for o in overloads)
    return _names(args), typed if len(typed) > 1 else ()


def _names(args: list[Any]) -> tuple[str, ...]:
    """An overload's positional names, a list Python also takes spread out marked `*`."""
    names = [a.name for a in args]
    if _sizes_only(args):
        names[-1] = "*" + names[-1]
    return tuple(names)


def _sizes_only(args: list[Any]) -> bool:
    """A list of ints that is the call's only argument beside `self` (`view(self, size)`,
    `zeros(size)`): Python also takes it spread out, `x.view(2, 4, 8)`."""
    if not args or len(args) > 2 or (len(args) == 2 and args[0].name != "self"):
        return False
    kind = str(args[-1].type)  # "List[int]" (this torch), "SymInt[]", "int[]" (others)
    return kind in ("List[int]", "List[SymInt]") or kind in ("int[]", "SymInt[]")


def overload_names(info: FuncInfo, args: tuple) -> tuple[str, ...]:
    """The names of a call's positional arguments: the first overload whose schema types
    they fit (`x.max(-1)` is max.dim's `dim`, not max.other's `other`), else `arg_names`."""
    for names, kinds in info.overloads:
        spread = bool(names) and names[-1].startswith("*")
        if len(args) > len(names) and not spread:
            continue
        # (past the names only a spread list's further ints)
        if all(_fits(a, kinds[i] if i < len(kinds) else "int") for i, a in enumerate(args)):
            return names
    return info.arg_names


def _fits(value: Any, kind: str) -> bool:
    """Whether torch's argument parser takes `value` for a parameter of schema type `kind`."""
    if kind.startswith("Optional["):
        if value is None:
            return True
        kind = kind[len("Optional[") : -1]
    if isinstance(value, torch.Tensor):
        return kind.startswith("Tensor") or kind == "number"
    if isinstance(value, bool):
        return kind in ("bool", "number")
    if isinstance(value, int):
        return kind in ("int", "SymInt", "float", "number", "List[int]", "List[SymInt]")
    if isinstance(value, float):
        return kind in ("float", "number")
    if isinstance(value, (list, tuple, torch.Size)):
        return kind.startswith("List[")
    if isinstance(value, str):
        return kind == "str"
    if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
        return kind == "int"  # (ScalarType, Layout, MemoryFormat read as int)
    if isinstance(value, torch.device):
        return kind == "Device"
    return True


@functools.cache
def pointwise(name: str) -> bool:
    """Whether the op called `name` (`log`, `add_`, `where`) is pointwise: each output value
    made of the inputs' values at its own place (an aten overload of that name tagged so)."""
    packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
    if packet is None:
        return False
    try:
        return any(torch.Tag.pointwise in getattr(packet, o).tags for o in packet.overloads())
    except Exception:  # (an op namespace entry that is no overload packet)
        return False
