"""Evaluate a paused line's argument expressions without running the program's own code.

`line_call` keeps only expressions that read values (names, attributes, subscripts,
literals, tensor methods). Reading can still run code: `ds[0]` calls the dataset's
`__getitem__`, `ds.batch` a property that draws the next batch. Such code, when it is the
program's own (defined in a user file, as `usercode.is_user_file` tells), is never run:
the read is refused (`Unsafe`) and the call's arguments are then not used. Library code
(torch's indexing and attributes, a dict's, transformers' BatchEncoding) reads as usual.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Mapping
from typing import Any, Optional

from .usercode import is_library_file

__all__ = ["Unsafe", "call_arguments", "read"]


class Unsafe(Exception):
    """Reading the expression would run the program's own code (or is not a plain read)."""


_MISSING = object()


def read(node: ast.expr, ns: Mapping[str, Any], methods: frozenset[str]) -> Any:
    """The value of `node` in `ns`; `methods`: the tensor methods it may call."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ns:
            return ns[node.id]
        builtins = ns.get("__builtins__")
        table = builtins if isinstance(builtins, dict) else getattr(builtins, "__dict__", {})
        if node.id in table:
            return table[node.id]
        raise NameError(node.id)
    if isinstance(node, ast.Attribute):
        return _attribute(read(node.value, ns, methods), node.attr)
    if isinstance(node, ast.Subscript):
        return _item(read(node.value, ns, methods), read(node.slice, ns, methods))
    if isinstance(node, ast.Slice):
        lower, upper, step = (
            None if p is None else read(p, ns, methods) for p in (node.lower, node.upper, node.step)
        )
        return slice(lower, upper, step)
    if isinstance(node, ast.Tuple):
        return tuple(_elements(node.elts, ns, methods))
    if isinstance(node, ast.List):
        return list(_elements(node.elts, ns, methods))
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                out.update(_mapping(read(v, ns, methods)))
            else:
                out[read(k, ns, methods)] = read(v, ns, methods)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = read(node.operand, ns, methods)
        _refuse_user(
            getattr(type(value), "__neg__" if isinstance(node.op, ast.USub) else "__pos__", None)
        )
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.Call):
        return _tensor_method(node, ns, methods)
    raise Unsafe(type(node).__name__)


def call_arguments(
    call: ast.Call, ns: Mapping[str, Any], methods: frozenset[str]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """What `call` passes: its positional and keyword arguments, read with `read`."""
    args = _elements(call.args, ns, methods)
    kwargs: dict[str, Any] = {}
    for k in call.keywords:
        value = read(k.value, ns, methods)
        if k.arg is None:
            kwargs.update(_mapping(value))
        else:
            kwargs[k.arg] = value
    return tuple(args), kwargs


def _elements(nodes: list[ast.expr], ns: Mapping[str, Any], methods: frozenset[str]) -> list[Any]:
    out: list[Any] = []
    for e in nodes:
        if isinstance(e, ast.Starred):
            value = read(e.value, ns, methods)
            if not isinstance(value, (tuple, list)):  # (iterating anything else runs its code)
                raise Unsafe("* of a non-sequence")
            out.extend(value)
        else:
            out.append(read(e, ns, methods))
    return out


def _mapping(value: Any) -> dict[str, Any]:
    if type(value) is not dict:  # (** of a user's mapping calls its keys() and __getitem__)
        if not isinstance(value, Mapping) or _user_type(type(value)):
            raise Unsafe("** of a non-dict")
    return dict(value)


def _attribute(obj: Any, attr: str) -> Any:
    cls = type(obj)
    _refuse_user(getattr(cls, "__getattribute__", None))
    found = inspect.getattr_static(obj, attr, _MISSING)
    if found is _MISSING:
        _refuse_user(getattr(cls, "__getattr__", None))  # (nn.Module's: its submodules)
    elif isinstance(found, property):
        _refuse_user(found.fget)
    elif isinstance(found, functools.cached_property):
        if attr not in getattr(obj, "__dict__", {}):  # (computed before: only read)
            _refuse_user(found.func)
    elif not isinstance(found, (staticmethod, classmethod)):
        _refuse_user(getattr(type(found), "__get__", None))
    return getattr(obj, attr)


def _item(obj: Any, key: Any) -> Any:
    cls = type(obj)
    _refuse_user(getattr(cls, "__getitem__", None))
    if isinstance(obj, dict) and cls is not dict and key not in obj:
        missing = getattr(cls, "__missing__", None)  # a defaultdict's inserts the key
        if missing is not None:
            raise Unsafe("a missing key of a dict with __missing__")
    return obj[key]


def _tensor_method(call: ast.Call, ns: Mapping[str, Any], methods: frozenset[str]) -> Any:
    import torch

    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in methods):
        raise Unsafe("a call")
    receiver = read(func.value, ns, methods)
    if not isinstance(receiver, torch.Tensor):
        raise Unsafe(f".{func.attr}() of a {type(receiver).__name__}")
    method = _attribute(receiver, func.attr)  # (a subclass's own method is its code)
    args, kwargs = call_arguments(call, ns, methods)
    return method(*args, **kwargs)


def _refuse_user(fn: Optional[Any]) -> None:
    """Refuse when `fn` (a function, method or slot wrapper) is the program's own code."""
    if _is_user(fn):
        raise Unsafe(f"{getattr(fn, '__qualname__', fn)} is the program's own code")


def _user_type(cls: type) -> bool:
    return any(_is_user(getattr(cls, name, None)) for name in ("keys", "__getitem__", "__iter__"))


def _is_user(fn: Any) -> bool:
    fn = getattr(fn, "__func__", fn)  # (a bound or class method: its function)
    code = getattr(fn, "__code__", None)  # (C code has none: torch's, a dict's)
    return code is not None and not is_library_file(code.co_filename)
