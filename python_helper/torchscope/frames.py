"""A paused program's stack frame: the module calls on the stack, the modules reachable by
name from the frame (likeliest first), and the values in it that could be a model's input.
Runs in the debuggee (docs/debugging.md, "Which model, which input")."""

from __future__ import annotations

import ast
import linecache
import os
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import nn

from . import safe_read
from .failure import Failure, a_or_an, one_line, traceback_text
from .line_call import TENSOR_METHODS, LineCall, calls_on_line
from .state import rng_kept
from .values import count_parameters

MAX_CANDIDATES = 40
_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

# Names a model's input often has in a training loop or a forward; tried first.
INPUT_NAMES = (
    "x",
    "inputs",
    "input",
    "input_ids",
    "data",
    "batch",
    "images",
    "image",
    "xb",
    "src",
    "tokens",
    "features",
    "sample",
)


def is_debugger_file(filename: str) -> bool:
    f = filename.replace("\\", "/")
    return "/pydevd" in f or "/debugpy/" in f or "/_pydev" in f


def paused_frame(start: Optional[types.FrameType]) -> types.FrameType:
    """The frame the debugger evaluates in: pydevd's `evaluate_expression(py_db, frame, ...)`
    holds it; outside a debugger (a test), the first caller frame that is neither torchscope's,
    an eval string nor the debugger's."""
    f = start
    while f is not None:
        code = f.f_code
        if code.co_name == "evaluate_expression" and is_debugger_file(code.co_filename):
            frame = f.f_locals.get("frame")
            if isinstance(frame, types.FrameType):
                return frame
        f = f.f_back
    f = start
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith(_PKG_DIR) or name == "<string>" or is_debugger_file(name)):
            return f
        f = f.f_back
    raise Failure("no-frame", "no paused frame found")


def namespace(frame: types.FrameType) -> dict[str, Any]:
    """Globals and locals of the frame merged, as the debugger evaluates expressions."""
    ns = dict(frame.f_globals)
    ns.update(frame.f_locals)
    return ns


# -- module calls on the stack ---------------------------------------------------------------


@dataclass
class ModuleCall:
    """A module call on the stack: the module and the arguments it was called with."""

    module: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    depth: int


def module_calls(frame: types.FrameType) -> list[ModuleCall]:
    """Module calls on the stack from `frame` outward, innermost first. The arguments are those
    of `Module._wrapped_call_impl` (as the caller passed them, before forward pre-hooks, which a
    trace runs again), else of `Module._call_impl`; never the forward's possibly rebound locals."""
    call_code = getattr(nn.Module._call_impl, "__code__", None)
    wrapped_code = getattr(getattr(nn.Module, "_wrapped_call_impl", None), "__code__", None)
    calls: list[ModuleCall] = []
    f: Optional[types.FrameType] = frame
    depth = 0
    while f is not None:
        code = f.f_code
        if code is call_code or code is wrapped_code:
            loc = f.f_locals
            m, args, kwargs = loc.get("self"), loc.get("args"), loc.get("kwargs")
            if isinstance(m, nn.Module) and isinstance(args, tuple) and isinstance(kwargs, dict):
                last = calls[-1] if calls else None
                if last and last.module is m and code is wrapped_code and last.depth == depth - 1:
                    last.args, last.kwargs = args, dict(kwargs)  # the same call, outer frame
                else:
                    calls.append(ModuleCall(m, args, dict(kwargs), depth))
        f = f.f_back
        depth += 1
    return calls


# -- modules reachable from the frame --------------------------------------------------------

_SKIP_TYPES = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
)


def _plain_object(v: Any) -> bool:
    """An instance of a user class whose attributes may hold models (a Trainer)."""
    if isinstance(v, _SKIP_TYPES):
        return False
    try:
        vars(v)  # (not hasattr: it calls a __getattr__ of the program's)
    except TypeError:
        return False
    mod = type(v).__module__ or ""
    if mod in ("__main__", "__mp_main__"):
        return True
    return not (mod == "builtins" or mod.startswith(("torch", "numpy", "typing", "_")))


def _named_modules(frame: types.FrameType) -> Iterator[tuple[str, nn.Module, str]]:
    """(expression, module, reason) for modules reachable by name from the frame, best first:
    self, locals, globals; one level into lists/tuples/dicts; attributes of plain objects."""
    seen_objects: set[int] = set()

    def visit(expr: str, v: Any, reason: str, deep: bool) -> Iterator[tuple[str, nn.Module, str]]:
        if isinstance(v, nn.Module):
            yield expr, v, reason
            return
        if not deep:
            return
        # (the builtin types' own reads: a subclass's overrides are the program's code)
        if isinstance(v, (list, tuple)):
            first = (
                list.__getitem__(v, slice(64))
                if isinstance(v, list)
                else tuple.__getitem__(v, slice(64))
            )
            for i, item in enumerate(first):
                if isinstance(item, nn.Module):
                    yield f"{expr}[{i}]", item, f"item of {reason}"
        elif isinstance(v, dict):
            for k, item in list(dict.items(v))[:64]:
                if isinstance(item, nn.Module) and isinstance(k, (str, int)):
                    yield f"{expr}[{k!r}]", item, f"item of {reason}"
        elif _plain_object(v) and id(v) not in seen_objects:
            seen_objects.add(id(v))
            try:
                attrs = list(vars(v).items())[:200]
            except TypeError:
                return
            for k, item in attrs:
                if isinstance(k, str) and k.isidentifier():
                    deeper = isinstance(item, (list, tuple, dict))
                    yield from visit(f"{expr}.{k}", item, f"attribute of {expr}", deeper)

    loc = frame.f_locals
    if "self" in loc:
        yield from visit("self", loc["self"], "self", True)
    for k, v in list(loc.items()):
        if k != "self" and isinstance(k, str) and k.isidentifier():
            yield from visit(k, v, "local", True)
    if frame.f_globals is not loc:
        for k, v in list(frame.f_globals.items()):
            if isinstance(k, str) and k.isidentifier() and not k.startswith("__") and k not in loc:
                yield from visit(k, v, "global", True)


@dataclass
class Candidate:
    """A module the user may mean, with how the frame reaches it."""

    expr: Optional[str]
    module: nn.Module
    reason: str
    stack: Optional[int] = None  # index into the module calls, when its call is on the stack
    params: int = 0
    root: bool = True
    extra: dict[str, Any] = field(default_factory=dict[str, Any])


def candidates(frame: types.FrameType) -> tuple[list[Candidate], list[ModuleCall]]:
    """The candidate modules of the frame, likeliest first: the module whose forward the frame
    is in, then the modules with weights the paused line calls, then root modules by size,
    then the rest in the order found."""
    calls = module_calls(frame)
    by_id: dict[int, Candidate] = {}
    order: list[Candidate] = []
    on_line = _modules_on_line(frame)
    for expr, m, reason in [*on_line, *_named_modules(frame)]:
        if id(m) not in by_id:
            c = by_id[id(m)] = Candidate(expr, m, reason)
            order.append(c)
    for i, call in enumerate(calls):
        c = by_id.get(id(call.module))
        if c is None:
            c = by_id[id(call.module)] = Candidate(None, call.module, "", stack=i)
            order.append(c)
        elif c.stack is None:
            c.stack = i
        c.reason = "paused in its forward" if i == 0 else "its forward is on the stack"
    for c in order:  # a stack module with no name: a path from a named root, else "@stack:i"
        if c.expr is None:
            c.expr = _path_from_roots(c, order) or f"@stack:{c.stack}"
    contained: set[int] = set()
    for c in order:
        try:
            contained.update(id(sub) for sub in c.module.modules() if sub is not c.module)
        except Exception:
            pass
    for c in order:
        c.params = _safe_count(c.module)
        c.root = id(c.module) not in contained
    innermost = [c for c in order if c.stack == 0]
    # what the line calls next: a submodule (`self.lm(…)`), a model (`head(feats)`); a root
    # without weights (a loss: `criterion(out, y)`) by its size, after the models
    called = [
        c
        for c in order
        if c.stack != 0 and c.reason == CALLED_HERE and (not c.root or c.params > 0)
    ]
    rest = [c for c in order if c.stack != 0 and c not in called]
    rest.sort(key=lambda c: (not c.root, -c.params))  # stable: discovery order otherwise
    return innermost + called + rest, calls


CALLED_HERE = "called on this line"


def _modules_on_line(frame: types.FrameType) -> list[tuple[str, nn.Module, str]]:
    """The modules the paused line is about to call (`self.lm(input_ids=…)`: a submodule no
    name in the frame reaches), whatever their arguments (`head(torch.randn(2, 16))`: only
    its input is not read from the line)."""
    return [
        (call.func, callee, CALLED_HERE)
        for call, _node, callee, _ns in _line_calls(frame, safe_arguments=False)
        if isinstance(callee, nn.Module)
    ]


def _line_calls(
    frame: types.FrameType, safe_arguments: bool = True
) -> Iterator[tuple[LineCall, ast.Call, Any, dict[str, Any]]]:
    """`(call, its syntax, its callee, the namespace)` for each call on the paused line whose
    callee reads without running the program's code (safe_read), and whose arguments do
    too unless not `safe_arguments`; the namespace is a copy."""
    source = "".join(linecache.getlines(frame.f_code.co_filename, frame.f_globals))
    if not source:
        return
    ns = namespace(frame)  # (a copy: the frame's names stay as they are)
    for call in calls_on_line(source, frame.f_lineno, safe_arguments):
        try:
            node = ast.parse(call.text, mode="eval").body
            assert isinstance(node, ast.Call)
            callee = safe_read.read(node.func, ns, TENSOR_METHODS)
        except Exception:  # not bound yet, or the program's own code to read it
            continue
        yield call, node, callee, ns


def _safe_count(m: nn.Module) -> int:
    try:
        return count_parameters(m)
    except Exception:
        return 0


def _path_from_roots(c: Candidate, order: list[Candidate]) -> Optional[str]:
    for root in order:
        if root.expr is None or root is c:
            continue
        try:
            for name, sub in root.module.named_modules():
                if sub is c.module and name:
                    return f"{root.expr}.get_submodule({name!r})"
        except Exception:
            continue
    return None


def resolve(expr: str, frame: types.FrameType, calls: list[ModuleCall]) -> nn.Module:
    """The module a candidate's expression (or `@stack:N`) names in the frame."""
    if expr.startswith("@stack:"):
        try:
            obj: Any = calls[int(expr.split(":", 1)[1])].module
        except (ValueError, IndexError):
            raise Failure("target-error", f"{expr}: no such module call on the stack") from None
    else:
        try:
            obj = eval(expr, namespace(frame))  # noqa: S307 - the user's own expression, as in the debug console
        except Exception as exc:
            raise Failure(
                "target-error", f"{expr} failed: {one_line(exc)}", traceback_text(exc)
            ) from exc
    if not isinstance(obj, nn.Module):
        raise Failure("target-error", f"{expr} is {a_or_an(type(obj).__name__)}, not an nn.Module")
    return obj


def frame_values(frame: types.FrameType) -> list[tuple[str, Any]]:
    """The frame's named values (locals, then globals), likely input names first."""
    scopes = [frame.f_locals]
    if frame.f_globals is not frame.f_locals:
        scopes.append(frame.f_globals)
    named = [
        (k, v)
        for scope in scopes
        for k, v in list(scope.items())
        if isinstance(k, str) and k.isidentifier() and not k.startswith("__")
    ]
    rank = {n: i for i, n in enumerate(INPUT_NAMES)}
    named.sort(key=lambda kv: rank.get(kv[0], len(INPUT_NAMES)))
    return named


def eval_in_frame(expr: str, frame: types.FrameType) -> Any:
    """An input expression typed by the user, in the frame (with `torch` and `nn` in scope
    when the frame has no such names, as in the editor)."""
    ns = namespace(frame)
    ns.setdefault("torch", torch)
    ns.setdefault("nn", nn)
    return eval(expr, ns)  # noqa: S307 - the user's expression


# -- the call on the paused line -------------------------------------------------------------


def call_on_line(
    frame: types.FrameType, model: nn.Module
) -> Optional[tuple[tuple[Any, ...], dict[str, Any], str]]:
    """`(args, kwargs, what)` of a call of `model` on the line the frame is paused at (a
    breakpoint on `out = model(x, mask=m)` stops before it runs): its arguments read in the
    frame, as the program is about to pass them. None when the line calls `model` with
    arguments that would run code to evaluate (`model(next(loader))`), or not at all."""
    for call, node, callee, ns in _line_calls(frame):
        if callee is not model:
            continue
        try:
            with rng_kept(), torch.no_grad():
                args, kwargs = safe_read.call_arguments(node, ns, TENSOR_METHODS)
        except Exception:  # a key the batch lacks, the program's own code to read it
            continue
        return args, kwargs, f"line {frame.f_lineno}: {call.text}"
    return None
