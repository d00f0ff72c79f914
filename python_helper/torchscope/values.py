"""Walking the Python values a forward passes around: nested tensors and small attributes."""

from __future__ import annotations

import dataclasses
import inspect
import math
import types
from collections.abc import Callable, Iterator
from typing import Any, Optional

import torch

Tensor = torch.Tensor

MAX_STR = 120
MAX_LIST = 16
MAX_DEPTH = 6


def iter_tensors(value: Any, depth: int = 0) -> Iterator[Tensor]:
    """Every tensor inside a (possibly nested) tuple/list/dict/dataclass value."""
    if isinstance(value, Tensor):
        yield value
    elif depth > MAX_DEPTH:
        return
    elif isinstance(value, (tuple, list)):
        for v in value:
            if isinstance(v, Tensor):
                yield v
            elif isinstance(v, (tuple, list, dict)):
                yield from iter_tensors(v, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from iter_tensors(v, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from iter_tensors(getattr(value, f.name, None), depth + 1)


def named_tensors(
    value: Any, name: str, depth: int = 0, objects: bool = False
) -> Iterator[tuple[str, Tensor]]:
    """(name, tensor) pairs with readable names: "x", "x[0]", "out.logits"; with `objects`,
    a plain object's attributes too ("past_key_values.layers[0].keys")."""
    if isinstance(value, Tensor):
        yield name, value
    elif depth > MAX_DEPTH:
        return
    elif isinstance(value, dict):  # also transformers ModelOutput (an OrderedDict)
        for k, v in value.items():
            yield from named_tensors(v, f"{name}.{k}" if name else str(k), depth + 1, objects)
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from named_tensors(v, f"{name}[{i}]", depth + 1, objects)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            sub = f"{name}.{f.name}" if name else f.name
            yield from named_tensors(getattr(value, f.name, None), sub, depth + 1, objects)
    elif objects:  # an object holding tensors: a KV cache ("past_key_values.layers[0].keys")
        for k, v in _plain_attributes(value):
            yield from named_tensors(v, f"{name}.{k}" if name else k, depth + 1, objects)


# objects whose attributes are no value of the forward's: the model's own parts, a Python
# module, a function, a class
_NOT_VALUES = (
    torch.nn.Module,
    types.ModuleType,
    types.FunctionType,
    types.MethodType,
    type,
)
_MAX_ATTRIBUTES = 64


def _plain_attributes(value: Any) -> list[tuple[str, Any]]:
    """The instance attributes of a plain object (the first _MAX_ATTRIBUTES), none for the
    kinds in _NOT_VALUES or an object without an attribute dict."""
    attrs = getattr(value, "__dict__", None)
    if type(attrs) is not dict or not attrs or isinstance(value, _NOT_VALUES):
        return []
    return [(k, v) for k, v in list(attrs.items())[:_MAX_ATTRIBUTES] if not k.startswith("__")]


def output_tensors(result: Any) -> Iterator[tuple[str, Tensor]]:
    """Output names: a bare tensor is "output"; dict-like outputs use their keys. A plain
    object is not walked: a KV cache returned by every transformers forward would add two
    outputs a layer (160 for Llama-70B), each an edge across the graph."""
    if isinstance(result, dict) or (
        dataclasses.is_dataclass(result) and not isinstance(result, type)
    ):
        yield from named_tensors(result, "")
    else:
        yield from named_tensors(result, "output")


def argument_tensors(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, Tensor]]:
    """Input names from the forward signature; falls back to arg0, arg1, … ."""
    names: list[tuple[str, Any]] = []
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        for pname, value in bound.arguments.items():
            param = bound.signature.parameters[pname]
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                names.extend((f"{pname}[{i}]", v) for i, v in enumerate(value))
            elif param.kind is inspect.Parameter.VAR_KEYWORD:
                names.extend(value.items())
            else:
                names.append((pname, value))
    except (TypeError, ValueError):
        names = [(f"arg{i}", v) for i, v in enumerate(args)] + list(kwargs.items())
    out: list[tuple[str, Tensor]] = []
    for pname, value in names:
        out.extend(named_tensors(value, pname, objects=True))
    return out


def count_parameters(model: torch.nn.Module) -> int:
    """Parameters of a module and its submodules, a shared (tied) one counted once."""
    with torch._C.DisableTorchFunction():
        return sum(p.numel() for p in model.parameters())  # parameters() yields each once


def shape_of(t: Tensor) -> Optional[list[int]]:
    try:
        return [int(d) for d in t.shape]
    except Exception:  # symbolic or exotic tensors
        return None


_DTYPE_NAMES: dict[torch.dtype, str] = {}


def dtype_name(t: Tensor) -> str:
    try:
        dt = t.dtype
    except Exception:
        return ""
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = str(dt).removeprefix("torch.")
    return name


# the integers a reader holds exactly (JavaScript's numbers: the viewer reads 2**61 - 1 as
# 2305843009213694000); beyond them a value is kept as its text
_INT_MIN, _INT_MAX = -(2**53 - 1), 2**53 - 1


def _int_text(v: int) -> str:
    try:
        return _cut(str(v))
    except ValueError:  # (past Python's 4,300 digits)
        return "an integer of more than 4300 digits"


def _cut(text: str) -> str:
    """`text`, cut to MAX_STR characters (an ellipsis last)."""
    return text if len(text) <= MAX_STR else text[: MAX_STR - 1] + "…"


def attr_value(v: Any) -> Any:
    """A small wire-safe rendering of a non-tensor argument; `...` marks "leave it out"."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v) if _INT_MIN <= v <= _INT_MAX else _int_text(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)  # "inf", "-inf", "nan": strict JSON has none
    if isinstance(v, str):
        return _cut(v)
    if isinstance(v, (tuple, list, torch.Size)):
        if any(isinstance(x, Tensor) for x in v):
            return ...
        items = [attr_value(x) for x in list(v)[:MAX_LIST]]
        if any(x is ... for x in items):
            return ...
        if len(v) > MAX_LIST:
            items.append("…")
        return items
    if isinstance(v, (torch.dtype, torch.device, torch.memory_format, torch.layout)):
        return str(v).removeprefix("torch.")
    if isinstance(v, slice):
        return f"{'' if v.start is None else v.start}:{'' if v.stop is None else v.stop}" + (
            "" if v.step is None else f":{v.step}"
        )
    if v is Ellipsis:
        return "..."
    return ...


def split_extra_repr(text: str) -> dict[str, Any]:
    """`in_features=768, out_features=3072, bias=True` → a map; bare pieces get their index."""
    pieces: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    out: dict[str, Any] = {}
    for i, piece in enumerate(p.strip() for p in pieces):
        if not piece:
            continue
        key, sep, val = piece.partition("=")
        if sep and key.strip().isidentifier():
            out[key.strip()] = _scalar(val.strip())
        else:
            out[str(i)] = _scalar(piece)
    return out


def _scalar(text: str) -> Any:
    try:
        number = int(text)
        return number if _INT_MIN <= number <= _INT_MAX else _int_text(number)
    except ValueError:
        pass
    try:
        value = float(text)
        if math.isfinite(value):
            return value
    except ValueError:
        pass
    if text in ("True", "False"):
        return text == "True"
    return _cut(text)
