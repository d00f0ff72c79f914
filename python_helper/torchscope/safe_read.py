"""Evaluate a paused line's argument expressions without running the program's own code.

`line_call` keeps only expressions that read values (names, attributes, subscripts,
literals, tensor methods). Reading can still run code: `ds[0]` calls the dataset's
`__getitem__`, `ds.batch` a property that draws the next batch. Code of the program's
(anything not in a library, as `usercode.is_library_file` tells: a notebook cell and an
`exec`'d string too; seen through decorators) is never run: the read is refused (`Unsafe`)
and the call's arguments are then not used. `[ ]` reads only containers known to read
purely (`_item`). C code and library attributes (torch's, a dict's) read as usual.
"""

from __future__ import annotations

import ast
import collections
import functools
import inspect
import types
from collections.abc import Mapping
from typing import Any, Optional

import torch

from .usercode import is_library_file

__all__ = ["Unsafe", "call_arguments", "read"]


class Unsafe(Exception):
    """Reading the expression would run the program's own code (or is not a plain read)."""


_MISSING = object()
_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)
_PLAIN_ITEMS = (dict, list, tuple, str, bytes, collections.OrderedDict)
# modules whose __getitem__ only reads what the object holds (a UserDict's, a ModuleList's),
# and packages of such modules (transformers: a BatchEncoding's, a ModelOutput's)
_READER_MODULES = frozenset(("collections", "torch.nn.modules.container"))
_READER_PACKAGES = ("transformers.",)
# C code: builtins and the slots of C types (a dict's __getitem__, a tensor's)
_C_CALLABLES = (
    types.BuiltinFunctionType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.MethodDescriptorType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
)


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
            if getattr(type(value), "__iter__", None) not in (list.__iter__, tuple.__iter__):
                raise Unsafe("* of a non-sequence")  # (iterating it runs its own code)
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
    if isinstance(obj, torch.Tensor) and cls not in _PLAIN_TENSORS:
        raise Unsafe("a tensor subclass: its __torch_function__ is the program's")
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
    """obj[key] where that runs none of the program's code: the builtin containers, plain
    tensors, namedtuples, dicts that only add methods (a missing key with __missing__
    refused: a defaultdict inserts it), and the pure readers of a few libraries
    (collections' UserDict, transformers' BatchEncoding and ModelOutput, torch's ModuleList
    and Sequential). Anything else (torch's Subset calls the program's dataset) is refused."""
    if isinstance(obj, type):
        raise Unsafe("a class's [ ]: its __class_getitem__")
    cls = type(obj)
    if cls in _PLAIN_ITEMS or cls in _PLAIN_TENSORS:
        return obj[key]
    getitem = getattr(cls, "__getitem__", None)
    missing = getattr(cls, "__missing__", None)
    if isinstance(obj, dict) and getitem is dict.__getitem__:
        if missing is not None and not dict.__contains__(obj, key):
            raise Unsafe("a missing key of a dict with __missing__")
        return obj[key]
    if isinstance(obj, tuple) and getitem is tuple.__getitem__:  # a namedtuple
        return obj[key]
    if _pure_reader(getitem) and missing is None:
        return obj[key]
    raise Unsafe(f"[ ] of a {cls.__name__}")


def _pure_reader(fn: Any) -> bool:
    module = getattr(_unwrapped(fn), "__module__", None) or ""
    known = module in _READER_MODULES or module.startswith(_READER_PACKAGES)
    return known and not _is_user(fn)


def _tensor_method(call: ast.Call, ns: Mapping[str, Any], methods: frozenset[str]) -> Any:
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in methods):
        raise Unsafe("a call")
    receiver = read(func.value, ns, methods)
    if type(receiver) not in _PLAIN_TENSORS:  # (a subclass: its __torch_function__ runs)
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
    """Whether calling `fn` may run code outside a library: a function of the program's (its
    decorators' wrappers seen through, as torch.no_grad's and lru_cache's), or a callable
    of a kind not known to be C code."""
    if fn is None:
        return False
    fn = _unwrapped(fn)
    code = getattr(fn, "__code__", None)
    if code is not None:
        return not is_library_file(code.co_filename)
    return not isinstance(fn, _C_CALLABLES)


def _unwrapped(fn: Any) -> Any:
    fn = getattr(fn, "__func__", fn)  # (a bound or class method: its function)
    try:
        return inspect.unwrap(fn)
    except ValueError:  # (a cycle of __wrapped__)
        return fn
