"""Trace the live model of a paused debug session.

See docs/debugging.md and docs/protocol.md ("Debug entry").

The VS Code extension loads this file BY PATH into a debuggee paused at a breakpoint and
calls it through DAP `evaluate` on the selected frame (see `loader_expression`). The
debuggee may not have torchscope installed: the package this file sits in is imported
from here under a private name (no `sys.path` change), and msgpack comes from the
extension's bundled libraries when the debuggee has none.

Every public function returns a short JSON string and never raises:
`{"ok": true, ...}` or `{"ok": false, "kind", "error", "traceback"}`. None starts a
thread: a new thread in a paused debuggee hits breakpoints and deadlocks the evaluate.
The graph itself goes through a file (any DAP message over 16 MiB kills the session).

Only the standard library is imported at load time, so loading never fails.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import gc
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import os
import random
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable
from typing import Any, Optional

MODULE_NAME = "_torchscope_debug"  # sys.modules key of this file when loaded by path
PACKAGE_ALIAS = "_torchscope_debug_pkg"  # the package, when another torchscope is loaded
MAX_CHUNK = 4 * 1024 * 1024  # read_chunk: at most 4 MiB per evaluate (base64 ≈ 5.6 MB)
MAX_CANDIDATES = 40
MAX_OUTPUT = 4000  # characters of captured stdout/stderr returned with a trace
_ACTIVE = [False]  # one of our traces is running: armed hooks ignore the calls it makes

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)

# One Python expression (no statements, no assignment into the paused frame) that loads
# this file by path once per debuggee and returns the module; `{path}` is a Python string
# literal (a JSON string literal is one). The extension sends `<this>.handle(<json literal>)`.
LOADER_TEMPLATE = (
    "(lambda p, s=__import__('sys'), u=__import__('importlib.util').util: "
    "s.modules['" + MODULE_NAME + "'] "
    "if getattr(s.modules.get('" + MODULE_NAME + "'), '__file__', None) == p "
    "else (lambda sp: (lambda m: (s.modules.__setitem__('" + MODULE_NAME + "', m), "
    "sp.loader.exec_module(m), m)[2])(u.module_from_spec(sp)))"
    "(u.spec_from_file_location('" + MODULE_NAME + "', p)))({path})"
)


def loader_expression(path: Optional[str] = None) -> str:
    """The expression that loads this file (at `path`) into a debuggee and yields the module."""
    return LOADER_TEMPLATE.format(path=json.dumps(path or os.path.abspath(__file__)))


def request_expression(request: dict[str, Any], path: Optional[str] = None) -> str:
    """The whole evaluate expression for one request: `loader.handle('<json>')`."""
    return f"{loader_expression(path)}.handle({json.dumps(json.dumps(request))})"


# When the debuggee can't read the extension's files (another machine, a container), the
# extension sends this file's source and the package's (and msgpack's pure-Python files)
# in one evaluate: the module is made from the source under the same `__file__`, so
# `loader_expression` finds it from then on, and imports come from the sent sources. The
# code is named after a folder of the debuggee's temp dir (`_shipped_dir`), as the
# package's files are: sites skip the tracer's own frames by that folder.
SHIP_TEMPLATE = (
    "(lambda m, s=__import__('sys'): (m.__dict__.update(__file__={path}), "
    "exec(compile({source}, __import__('os').path.join(__import__('tempfile').gettempdir(), "
    "'torchscope-shipped', 'torchscope', 'debug.py'), 'exec'), m.__dict__), "
    "s.modules.__setitem__('" + MODULE_NAME + "', m), m._shipped({files}))[3])"
    "(__import__('types').ModuleType('" + MODULE_NAME + "'))"
)

# What the tracer needs of the package (not the CLI, server or viewer), and of msgpack.
SHIPPED_FILES = (
    "__init__.py", "debug.py", "folding.py", "graph.py", "ops.py", "sites.py", "state.py",
    "target.py", "tracer.py", "values.py",
)  # fmt: skip
SHIPPED_MSGPACK = ("__init__.py", "exceptions.py", "ext.py", "fallback.py")


def ship_expression(path: str, source: str, files: dict[str, str]) -> str:
    """The evaluate expression that loads this file from `source` as if it were at `path`;
    `files`: relative path (`tracer.py`, `msgpack/fallback.py`) → source."""
    return SHIP_TEMPLATE.format(
        path=json.dumps(path),
        source=json.dumps(source),
        # as the extension writes it: JSON.stringify's spacing, then one ASCII literal
        files=json.dumps(json.dumps(files, separators=(",", ":"), ensure_ascii=False)),
    )


# -- replies ---------------------------------------------------------------------------------


class _Fail(Exception):
    """A request that ends in `{ok: false, kind, error}`."""

    def __init__(self, kind: str, message: str, details: Optional[str] = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, default=str)


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def _guarded(fn: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> str:
    """Run one request: its reply as JSON; any failure becomes `{ok: false}`, never an exception."""
    try:
        return _dump(fn(*args, **kwargs))
    except _Fail as f:
        return _dump({"ok": False, "kind": f.kind, "error": f.message, "traceback": f.details})
    except BaseException as exc:  # noqa: BLE001 - the entry never raises, SystemExit included
        try:
            tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        except Exception:
            tb = None
        return _dump({"ok": False, "kind": "internal", "error": _one_line(exc), "traceback": tb})


# -- the torchscope package, imported from beside this file ----------------------------------

_SHIPPED: dict[str, str] = {}  # relative path → source, when the extension sent the files


def _shipped(files_json: str) -> str:
    """The end of `SHIP_TEMPLATE`: keep the sources the extension sent."""
    _SHIPPED.update(json.loads(files_json))
    return _dump({"ok": True, "files": len(_SHIPPED)})


def _shipped_dir() -> str:
    """The folder the sent files are named in (they are not written): absolute on this
    machine, apart from the program's own files, as sites need to tell the tracer's frames
    from the model's. The extension's own path may not even be one here (Windows → Linux)."""
    return os.path.join(tempfile.gettempdir(), "torchscope-shipped", "torchscope")


class _ShippedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the package (under its private name) and msgpack from the sent sources. On
    sys.meta_path only for the duration of an import (`_shipped_imports`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        for prefix, folder in ((PACKAGE_ALIAS, ""), ("msgpack", "msgpack/")):
            if name == prefix:
                rel, package = folder + "__init__.py", True
            elif name.startswith(prefix + "."):
                rel, package = folder + name[len(prefix) + 1 :].replace(".", "/") + ".py", False
            else:
                continue
            if rel not in _SHIPPED:
                return None
            origin = os.path.join(_shipped_dir(), *rel.split("/"))
            spec = importlib.machinery.ModuleSpec(
                name, self, origin=origin, is_package=package, loader_state=rel
            )
            spec.has_location = True
            return spec
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        assert spec is not None and spec.origin is not None
        exec(compile(_SHIPPED[spec.loader_state], spec.origin, "exec"), module.__dict__)


@contextlib.contextmanager
def _shipped_imports():
    """The sent sources importable while the block runs (nothing left in sys.meta_path)."""
    if not _SHIPPED:
        yield
        return
    finder = _ShippedFinder()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)


def _package() -> types.ModuleType:
    """The torchscope package this file belongs to."""
    if __package__:  # imported normally, as torchscope.debug
        return importlib.import_module(__package__)
    loaded = sys.modules.get("torchscope")
    if loaded is not None and _same_dir(getattr(loaded, "__file__", None)):
        return loaded
    pkg = sys.modules.get(PACKAGE_ALIAS)
    if pkg is not None and _same_dir(getattr(pkg, "__file__", None)):
        return pkg
    if _SHIPPED:
        with _shipped_imports():
            return importlib.import_module(PACKAGE_ALIAS)
    # a private name: never shadow (or be shadowed by) a torchscope the program imports itself
    spec = importlib.util.spec_from_file_location(
        PACKAGE_ALIAS, os.path.join(_HERE, "__init__.py"), submodule_search_locations=[_HERE]
    )
    assert spec is not None and spec.loader is not None
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE_ALIAS] = pkg
    try:
        spec.loader.exec_module(pkg)
    except BaseException:
        sys.modules.pop(PACKAGE_ALIAS, None)
        raise
    return pkg


def _same_dir(file: Optional[str]) -> bool:
    return bool(file) and os.path.dirname(os.path.abspath(str(file))) == _HERE


def _ensure_msgpack() -> None:
    """msgpack from the debuggee, else the pure-Python one the extension sent, else from the
    extension's bundled libraries (bundled/libs beside bundled/tool); the folder is on
    sys.path only while msgpack is imported."""
    try:
        importlib.import_module("msgpack")
        return
    except ImportError:
        pass
    if "msgpack/__init__.py" in _SHIPPED:
        with _shipped_imports():
            importlib.import_module("msgpack")
        return
    libs = os.path.join(os.path.dirname(_ROOT), "libs")
    if not os.path.isdir(libs):
        raise _Fail("no-msgpack", "msgpack is not installed in the debugged program's Python")
    sys.path.insert(0, libs)
    try:
        importlib.import_module("msgpack")
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(libs)


def _torch() -> Any:
    """torch as the program imported it; the entry never imports torch into a program without it."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "nn"):
        raise _Fail("no-torch", "torch is not imported in the debugged program: nothing to trace")
    return torch


def _submodule(name: str) -> types.ModuleType:
    _ensure_msgpack()
    try:
        pkg = _package()
        with _shipped_imports():
            return importlib.import_module(f"{pkg.__name__}.{name}")
    except Exception as exc:
        version = ".".join(map(str, sys.version_info[:3]))
        raise _Fail(
            "import-error",
            f"torchscope's tracer could not be imported in the debugged Python {version}: "
            f"{_one_line(exc)}",
            _tb(exc),
        ) from exc


# -- the paused frame ------------------------------------------------------------------------


def _is_debugger_file(filename: str) -> bool:
    f = filename.replace("\\", "/")
    return "/pydevd" in f or "/debugpy/" in f or "/_pydev" in f


def _paused_frame(start: Optional[types.FrameType]) -> types.FrameType:
    """The frame the debugger evaluates in: pydevd's `evaluate_expression(py_db, frame, ...)`
    holds it; outside a debugger, the first caller frame that is not ours or an eval string."""
    f = start
    while f is not None:
        code = f.f_code
        if code.co_name == "evaluate_expression" and _is_debugger_file(code.co_filename):
            frame = f.f_locals.get("frame")
            if isinstance(frame, types.FrameType):
                return frame
        f = f.f_back
    f = start
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith(_HERE) or name == "<string>" or _is_debugger_file(name)):
            return f
        f = f.f_back
    raise _Fail("no-frame", "no paused frame found")


def _namespace(frame: types.FrameType) -> dict[str, Any]:
    """Globals and locals of the frame merged, as the debugger evaluates expressions."""
    ns = dict(frame.f_globals)
    ns.update(frame.f_locals)
    return ns


class _Call:
    """A module call on the stack: the module and the arguments it was called with."""

    __slots__ = ("module", "args", "kwargs", "depth")

    def __init__(self, module: Any, args: tuple, kwargs: dict, depth: int) -> None:
        self.module = module
        self.args = args
        self.kwargs = kwargs
        self.depth = depth


def _module_calls(frame: types.FrameType) -> list[_Call]:
    """Module calls on the stack from `frame` outward, innermost first. The arguments are those
    of `Module._wrapped_call_impl` (as the caller passed them, before forward pre-hooks, which a
    trace runs again), else of `Module._call_impl`; never the forward's possibly rebound locals."""
    torch = _torch()
    mod = torch.nn.Module
    call_code = getattr(mod._call_impl, "__code__", None)
    wrapped_code = getattr(getattr(mod, "_wrapped_call_impl", None), "__code__", None)
    calls: list[_Call] = []
    f: Optional[types.FrameType] = frame
    depth = 0
    while f is not None:
        code = f.f_code
        if code is call_code or code is wrapped_code:
            loc = f.f_locals
            m = loc.get("self")
            args = loc.get("args")
            kwargs = loc.get("kwargs")
            if isinstance(m, mod) and isinstance(args, tuple) and isinstance(kwargs, dict):
                if (
                    calls
                    and calls[-1].module is m
                    and code is wrapped_code
                    and calls[-1].depth == depth - 1
                ):
                    calls[-1].args, calls[-1].kwargs = args, dict(kwargs)  # same call, outer frame
                else:
                    calls.append(_Call(m, args, dict(kwargs), depth))
        f = f.f_back
        depth += 1
    return calls


# -- finding modules -------------------------------------------------------------------------


_SKIP_TYPES = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
)


def _plain_object(v: Any) -> bool:
    """An instance of a user class whose attributes may hold models (a Trainer)."""
    if isinstance(v, _SKIP_TYPES) or not hasattr(v, "__dict__"):
        return False
    mod = type(v).__module__ or ""
    if mod in ("__main__", "__mp_main__"):
        return True
    return not (mod == "builtins" or mod.startswith(("torch", "numpy", "typing", "_")))


def _param_count(m: Any) -> int:
    try:
        seen: set[int] = set()
        n = 0
        for p in m.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                n += p.numel()
        return n
    except Exception:
        return 0


def _named_modules(frame: types.FrameType, module_type: type) -> list[tuple[str, Any, str]]:
    """(expression, module, reason) for modules reachable by name from the frame, best first."""
    out: list[tuple[str, Any, str]] = []
    seen_objects: set[int] = set()

    def visit(expr: str, v: Any, reason: str, deep: bool) -> None:
        if isinstance(v, module_type):
            out.append((expr, v, reason))
            return
        if not deep:
            return
        if isinstance(v, (list, tuple)) and not isinstance(v, str):
            for i, item in enumerate(v[:64]):
                if isinstance(item, module_type):
                    out.append((f"{expr}[{i}]", item, f"item of {reason}"))
        elif isinstance(v, dict):
            for k, item in list(v.items())[:64]:
                if isinstance(item, module_type) and isinstance(k, (str, int)):
                    out.append((f"{expr}[{k!r}]", item, f"item of {reason}"))
        elif _plain_object(v) and id(v) not in seen_objects:
            seen_objects.add(id(v))
            try:
                attrs = list(vars(v).items())[:200]
            except TypeError:
                return
            for k, item in attrs:
                if isinstance(k, str) and k.isidentifier():
                    visit(
                        f"{expr}.{k}",
                        item,
                        f"attribute of {expr}",
                        isinstance(item, (list, tuple, dict)),
                    )

    loc = frame.f_locals
    if "self" in loc:
        visit("self", loc["self"], "self", True)
    for k, v in list(loc.items()):
        if k != "self" and isinstance(k, str) and k.isidentifier():
            visit(k, v, "local", True)
    if frame.f_globals is not loc:
        for k, v in list(frame.f_globals.items()):
            if isinstance(k, str) and k.isidentifier() and not k.startswith("__") and k not in loc:
                visit(k, v, "global", True)
    return out


def _collect(frame: types.FrameType) -> tuple[list[dict[str, Any]], list[_Call]]:
    """The candidate modules of the frame, likeliest first, each with `obj` (dropped in replies)."""
    torch = _torch()
    module_type = torch.nn.Module
    calls = _module_calls(frame)
    named = _named_modules(frame, module_type)
    by_id: dict[int, dict[str, Any]] = {}
    order: list[dict[str, Any]] = []
    for expr, m, reason in named:
        if id(m) not in by_id:
            c = {"expr": expr, "obj": m, "reason": reason, "stack": None}
            by_id[id(m)] = c
            order.append(c)
    for i, call in enumerate(calls):
        c = by_id.get(id(call.module))
        if c is None:
            c = {"expr": None, "obj": call.module, "reason": "", "stack": i}
            by_id[id(call.module)] = c
            order.append(c)
        else:
            c["stack"] = i if c["stack"] is None else c["stack"]
        c["reason"] = "paused in its forward" if i == 0 else "its forward is on the stack"
    # a stack module with no name in the frame: a path from a named root, else "@stack:i"
    for c in order:
        if c["expr"] is None:
            for root in order:
                if root["expr"] is None or root is c:
                    continue
                path = _path_in(root["obj"], c["obj"])
                if path is not None:
                    c["expr"] = f"{root['expr']}.get_submodule({path!r})"
                    break
            else:
                c["expr"] = f"@stack:{c['stack']}"
    contained: set[int] = set()
    for c in order:
        try:
            for sub in c["obj"].modules():
                if sub is not c["obj"]:
                    contained.add(id(sub))
        except Exception:
            pass
    for c in order:
        c["params"] = _param_count(c["obj"])
        c["root"] = id(c["obj"]) not in contained
    innermost = [c for c in order if c["stack"] == 0]
    rest = [c for c in order if c["stack"] != 0]
    rest.sort(key=lambda c: (not c["root"], -c["params"]))  # stable: discovery order otherwise
    return innermost + rest, calls


def _path_in(root: Any, target: Any) -> Optional[str]:
    try:
        for name, sub in root.named_modules():
            if sub is target and name:
                return name
    except Exception:
        pass
    return None


def _resolve(expr: str, frame: types.FrameType, calls: list[_Call]) -> Any:
    torch = _torch()
    if expr.startswith("@stack:"):
        try:
            obj = calls[int(expr.split(":", 1)[1])].module
        except (ValueError, IndexError):
            raise _Fail("target-error", f"{expr}: no such module call on the stack") from None
    else:
        try:
            obj = eval(expr, _namespace(frame))  # noqa: S307 - the user's own expression, as in the debug console
        except Exception as exc:
            raise _Fail("target-error", f"{expr} failed: {_one_line(exc)}", _tb(exc)) from exc
    if not isinstance(obj, torch.nn.Module):
        raise _Fail("target-error", f"{expr} is a {type(obj).__name__}, not an nn.Module")
    return obj


def _tb(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


# -- inputs from the frame -------------------------------------------------------------------

_INPUT_NAMES = (
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


def _first_layer(model: Any, nn: Any) -> Any:
    known = (
        nn.Linear,
        nn.Bilinear,
        nn.Embedding,
        nn.EmbeddingBag,
        nn.Conv1d,
        nn.Conv2d,
        nn.Conv3d,
        nn.ConvTranspose1d,
        nn.ConvTranspose2d,
        nn.ConvTranspose3d,
        nn.RNNBase,
        nn.LayerNorm,
        nn.MultiheadAttention,
        nn.modules.batchnorm._BatchNorm,
    )
    for m in model.modules():
        if isinstance(m, known):
            return m
    return None


def _fits(layer: Any, t: Any, nn: Any) -> bool:
    """Whether tensor `t` looks like what the first layer takes."""
    try:
        shape = tuple(t.shape)
        floating = t.is_floating_point() or t.is_complex()
        if isinstance(layer, (nn.Embedding, nn.EmbeddingBag)):
            if floating or str(t.dtype) == "torch.bool" or t.numel() == 0:
                return False
            return bool(t.min() >= 0) and bool(t.max() < layer.num_embeddings)
        if not floating:
            return False
        if isinstance(layer, (nn.Linear, nn.Bilinear)):
            n = layer.in_features if isinstance(layer, nn.Linear) else layer.in1_features
            return len(shape) >= 1 and shape[-1] == n
        for conv, spatial in (
            (nn.Conv1d, 1),
            (nn.Conv2d, 2),
            (nn.Conv3d, 3),
            (nn.ConvTranspose1d, 1),
            (nn.ConvTranspose2d, 2),
            (nn.ConvTranspose3d, 3),
        ):
            if isinstance(layer, conv):
                return (
                    len(shape) in (spatial + 1, spatial + 2)
                    and shape[-(spatial + 1)] == layer.in_channels
                )
        if isinstance(layer, nn.RNNBase):
            return len(shape) in (2, 3) and shape[-1] == layer.input_size
        if isinstance(layer, nn.LayerNorm):
            ns = tuple(layer.normalized_shape)
            return len(shape) >= len(ns) and shape[len(shape) - len(ns) :] == ns
        if isinstance(layer, nn.MultiheadAttention):
            return len(shape) in (2, 3) and shape[-1] == layer.embed_dim
        if isinstance(layer, nn.modules.batchnorm._BatchNorm):
            return len(shape) >= 2 and shape[1] == layer.num_features
    except Exception:
        return False
    return False


def _frame_input(model: Any, frame: types.FrameType) -> Optional[tuple[tuple, dict, str]]:
    """Tensors in the frame that fit the model: a dict of keyword tensors the forward accepts
    (a tokenizer batch), or a tensor that fits the first layer; preferred names first."""
    torch = _torch()
    nn = torch.nn
    own = {id(p) for p in model.parameters()} | {id(b) for b in model.buffers()}
    found: list[tuple[str, Any]] = []
    seen: set[int] = set()

    def add(name: str, v: Any) -> None:
        if isinstance(v, torch.Tensor) and not isinstance(v, nn.Parameter) and id(v) not in own:
            if id(v) not in seen:
                seen.add(id(v))
                found.append((name, v))

    scopes = [frame.f_locals]
    if frame.f_globals is not frame.f_locals:
        scopes.append(frame.f_globals)
    names: list[tuple[str, Any]] = []
    for scope in scopes:
        for k, v in list(scope.items()):
            if isinstance(k, str) and k.isidentifier() and not k.startswith("__"):
                names.append((k, v))
    names.sort(
        key=lambda kv: _INPUT_NAMES.index(kv[0]) if kv[0] in _INPUT_NAMES else len(_INPUT_NAMES)
    )

    try:
        import inspect

        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        params = {}
    from collections.abc import Mapping

    for k, v in names:  # a mapping whose keys the forward takes: call with keywords
        if (
            isinstance(v, Mapping)
            and v
            and params
            and all(isinstance(key, str) and key in params for key in v)
        ):
            if any(isinstance(t, torch.Tensor) for t in v.values()):
                return (), dict(v), f"{k} (keywords {', '.join(v)})"
    layer = _first_layer(model, nn)
    if layer is None:
        return None
    for k, v in names:
        add(k, v)
        if isinstance(v, (list, tuple)) and not isinstance(v, str):
            for i, item in enumerate(v[:8]):
                add(f"{k}[{i}]", item)
        elif isinstance(v, dict):
            for key, item in list(v.items())[:16]:
                if isinstance(key, (str, int)):
                    add(f"{k}[{key!r}]", item)
    for name, t in found:
        if _fits(layer, t, nn):
            return (t,), {}, f"{name} ({_describe_tensor(t)})"
    return None


def _describe_tensor(t: Any) -> str:
    return f"tensor {list(t.shape)} {str(t.dtype).replace('torch.', '')}"


def _describe(args: tuple, kwargs: dict) -> str:
    torch = _torch()

    def one(v: Any) -> str:
        return _describe_tensor(v) if isinstance(v, torch.Tensor) else type(v).__name__

    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


def _choose_inputs(
    model: Any, frame: types.FrameType, calls: list[_Call], input_expr: Optional[str]
) -> tuple[tuple, dict, str]:
    if input_expr:  # typed by the user: it wins
        ns = _namespace(frame)
        torch = _torch()
        ns.setdefault("torch", torch)  # as in the editor path, even where the frame has no name
        ns.setdefault("nn", torch.nn)
        try:
            value = eval(input_expr, ns)  # noqa: S307 - the user's expression
        except Exception as exc:
            raise _Fail(
                "needs-input", f"the input {input_expr} failed: {_one_line(exc)}", _tb(exc)
            ) from exc
        args, kwargs = _submodule("target").as_call(value)  # the editor path's rule
        return args, kwargs, input_expr
    for call in calls:
        if call.module is model:
            return call.args, call.kwargs, f"paused call {_describe(call.args, call.kwargs)}"
    found = _frame_input(model, frame)
    if found is not None:
        args, kwargs, what = found
        return args, kwargs, f"from the frame: {what}"
    raise _Fail(
        "needs-input",
        f"no input for {type(model).__name__} in this frame: give an input expression "
        '(e.g. torch.randn(1, 3, 224, 224)) or use "trace the next call"',
    )


# -- tracing ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _rng_kept():
    """Every RNG as it was afterwards: torch's (CPU, and CUDA when initialized), Python's and
    numpy's. The tracer restores torch's around the forward; this also covers an input
    expression such as `torch.randn(1, 8)` and code the entry runs outside the trace."""
    torch: Any = sys.modules.get("torch")
    cpu = cuda = None
    with contextlib.suppress(Exception):
        cpu = torch.get_rng_state() if torch is not None else None
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            cuda = torch.cuda.get_rng_state_all()
    py_state = random.getstate()
    np: Any = sys.modules.get("numpy")
    np_state = None
    with contextlib.suppress(Exception):
        np_state = np.random.get_state() if np is not None else None
    try:
        yield
    finally:
        random.setstate(py_state)
        if np_state is not None and np is not None:
            with contextlib.suppress(Exception):
                np.random.set_state(np_state)
        if cpu is not None and torch is not None:
            with contextlib.suppress(Exception):
                torch.set_rng_state(cpu)
        if cuda is not None and torch is not None:
            with contextlib.suppress(Exception):
                torch.cuda.set_rng_state_all(cuda)


@contextlib.contextmanager
def _quiet():
    """Capture what the forward prints: it would change the program's output."""
    buf = io.StringIO()
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = buf
    try:
        yield buf
    finally:
        sys.stdout, sys.stderr = old_out, old_err


@contextlib.contextmanager
def _core_spared(torch: Any):
    """One intra-op thread fewer than cores while tracing (torch's own count restored after):
    the editor opens the graph's panel at that very moment, and torch's threads spin-waiting
    for a core the editor holds make the trace several times slower (GPT-2, 2 cores beside
    a busy process: 0.17 s with one thread, 0.3-2 s with two)."""
    before = torch.get_num_threads()
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity else (os.cpu_count() or 1)
    spared = max(1, min(before, cores - 1))
    if spared != before:
        torch.set_num_threads(spared)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


_LIB_DIRS: Optional[tuple[str, ...]] = None


def _library_dirs() -> tuple[str, ...]:
    global _LIB_DIRS
    if _LIB_DIRS is None:
        import sysconfig

        dirs = {_HERE}
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            with contextlib.suppress(Exception):
                dirs.add(os.path.abspath(sysconfig.get_paths()[key]))
        with contextlib.suppress(Exception):
            import site

            dirs.update(os.path.abspath(p) for p in site.getsitepackages())
        torch_file = getattr(sys.modules.get("torch"), "__file__", None)
        if torch_file:
            dirs.add(os.path.dirname(os.path.abspath(str(torch_file))))
        _LIB_DIRS = tuple(d.rstrip(os.sep) + os.sep for d in dirs)
    return _LIB_DIRS


def _user_code(file: str) -> bool:
    """Not the standard library, site-packages, torch or an eval string: where an error is
    best shown (`Graph.error_location`)."""
    return not file.startswith("<") and not os.path.abspath(file).startswith(_library_dirs())


def _private_copy(model: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict, bool]:
    """A deep copy of the call arguments for the trace, sharing the model's own modules,
    parameters and buffers: a forward that writes into its inputs (`x.mul_(2)`, a
    transformers cache it appends to, a list it logs into) must not change the live ones."""
    memo: dict[int, Any] = {}
    try:
        for m in model.modules():
            memo[id(m)] = m
        for t in model.parameters():
            memo[id(t)] = t
        for t in model.buffers():
            memo[id(t)] = t
        _seed_tensors((args, kwargs), memo, 0)  # autograd's non-leaf tensors refuse deepcopy
        copied = copy.deepcopy((args, kwargs), memo)
        return copied[0], copied[1], True
    except Exception:
        return args, kwargs, False
    finally:
        memo.clear()


def _seed_tensors(value: Any, memo: dict[int, Any], depth: int) -> None:
    """Detached clones of the tensors in nested tuples/lists/dicts, put in the deepcopy memo."""
    torch = _torch()
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            c = value.detach().clone()
            if value.requires_grad and (c.is_floating_point() or c.is_complex()):
                c.requires_grad_(True)
            memo[id(value)] = c
    elif depth < 8 and isinstance(value, (tuple, list)):
        for v in value:
            _seed_tensors(v, memo, depth + 1)
    elif depth < 8 and isinstance(value, dict):
        for v in value.values():
            _seed_tensors(v, memo, depth + 1)


def _out_path(out_path: str) -> str:
    """Where the graph is written: the extension's file, or (the helper was sent over: the
    extension's folders are not on this machine) the same name in the temp folder, which
    the extension reads back with `read_chunk`."""
    if not _SHIPPED:
        return os.path.abspath(out_path)
    name = out_path.replace("\\", "/").rsplit("/", 1)[-1]
    return os.path.join(tempfile.gettempdir(), "torchscope-debug", name)


def _write(out_path: str, data: bytes) -> None:
    folder = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(folder, exist_ok=True)
    tmp = out_path + ".part"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, out_path)  # a watcher never sees a half-written file


def _run_trace(
    model: Any,
    args: tuple,
    kwargs: dict,
    described: str,
    out_path: str,
    time_budget: Optional[float],
    cancel_file: Optional[str] = None,
) -> dict[str, Any]:
    """Trace, write the file, and build the reply; no reference to the inputs or graph is kept."""
    out_path = _out_path(out_path)
    tracer = _submodule("tracer")
    cancel = (lambda: os.path.exists(cancel_file)) if cancel_file else None
    if cancel_file and os.path.exists(cancel_file):
        raise _Fail("cancelled", "the trace was cancelled")
    started = time.perf_counter()
    args, kwargs, copied = _private_copy(model, args, kwargs)
    was_active, _ACTIVE[0] = _ACTIVE[0], True
    try:
        with _quiet() as printed, _core_spared(_torch()):
            graph = tracer.trace_call(
                model,
                args,
                kwargs,
                time_budget=time_budget or None,
                cancel=cancel,
                raise_errors=False,
            )
    finally:
        _ACTIVE[0] = was_active
    args = kwargs = None  # type: ignore[assignment]
    error = graph.error
    if error is not None and error.type in ("TraceTimeout", "TraceCancelled"):
        graph = None
        gc.collect()
        if error.type == "TraceTimeout":
            raise _Fail("timeout", f"the trace ran past {time_budget:g} s and was stopped")
        raise _Fail("cancelled", "the trace was cancelled")
    data = graph.to_msgpack()
    _write(out_path, data)
    summary = graph.result_summary(described, _user_code)
    size = len(data)
    graph = data = None
    if error is not None:
        gc.collect()  # the exception's traceback holds the forward's frames (tensors) in a cycle
    out = printed.getvalue()
    reply: dict[str, Any] = {
        "ok": True,
        "path": out_path,
        "size": size,
        "summary": summary,
    }
    if out:
        reply["output"] = out[-MAX_OUTPUT:]
    if not copied:
        reply["warning"] = "the inputs could not be copied: the trace ran on the live objects"
    reply["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return reply


# -- the requests ----------------------------------------------------------------------------


def _warm() -> dict[str, Any]:
    """Import the tracer (and msgpack) ahead of the first trace: the extension asks while
    the user is still picking a model, so the pick is not followed by the imports' wait."""
    _torch()  # never import torch (through the tracer) into a program without it
    started = time.perf_counter()
    _submodule("tracer")
    _submodule("graph")
    return {"ok": True, "elapsed_ms": round((time.perf_counter() - started) * 1000, 1)}


def _candidates(frame: types.FrameType) -> dict[str, Any]:
    torch = _torch()
    ordered, calls = _collect(frame)
    modules = []
    for c in ordered[:MAX_CANDIDATES]:
        m = c["obj"]
        if c["stack"] is not None:
            call = calls[c["stack"]]
            inputs, how = True, f"paused call {_describe(call.args, call.kwargs)}"
        else:
            found = None
            with contextlib.suppress(Exception), torch.no_grad():
                found = _frame_input(m, frame)
            inputs, how = found is not None, (f"from the frame: {found[2]}" if found else None)
        cls = type(m)
        modules.append(
            {
                "expr": c["expr"],
                "name": c["expr"] if not c["expr"].startswith("@") else cls.__name__,
                "cls": cls.__name__,
                "qualname": f"{cls.__module__}.{cls.__qualname__}",
                "params": c["params"],
                "reason": c["reason"],
                "inputs": inputs,
                "input": how,
            }
        )
    return {"ok": True, "modules": modules, "more": max(0, len(ordered) - MAX_CANDIDATES)}


def _trace(
    frame: types.FrameType,
    expr: str,
    out_path: str,
    input_expr: Optional[str],
    time_budget: Optional[float],
    cancel_file: Optional[str],
) -> dict[str, Any]:
    with _rng_kept():
        calls = _module_calls(frame)
        model = _resolve(expr, frame, calls)
        args, kwargs, described = _choose_inputs(model, frame, calls, input_expr)
        calls = []
        return _run_trace(model, args, kwargs, described, out_path, time_budget, cancel_file)


def candidates(frame: Optional[types.FrameType] = None) -> str:
    """`{ok, modules: [{expr, name, cls, qualname, params, reason, inputs, input}], more}`: the
    nn.Module objects reachable from the paused frame, likeliest first. `frame` defaults to
    the frame the debugger evaluates in."""
    start = sys._getframe(1)

    def run() -> dict[str, Any]:
        return _candidates(frame or _paused_frame(start))

    return _guarded(run)


def trace(
    expr: str,
    out_path: str,
    input_expr: Optional[str] = None,
    time_budget: Optional[float] = 60,
    cancel_file: Optional[str] = None,
    frame: Optional[types.FrameType] = None,
) -> str:
    """Trace the module `expr` (a candidate's expression) with the real inputs of the paused
    frame; write the msgpack graph to `out_path`. `{ok, path, size, summary}`."""
    start = sys._getframe(1)

    def run() -> dict[str, Any]:
        return _trace(
            frame or _paused_frame(start), expr, out_path, input_expr, time_budget, cancel_file
        )

    return _guarded(run)


# trace_next_call: armed hooks and finished results, by output path
_ARMED: dict[str, Any] = {}  # out_path → hook handle
_RESULTS: dict[str, dict[str, Any]] = {}


def _inside_evaluate(frame: Optional[types.FrameType]) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_name == "evaluate_expression" and _is_debugger_file(code.co_filename):
            return True
        frame = frame.f_back
    return False


def _debugger_tracing_off() -> Callable[[], None]:
    """Stop the debugger tracing this thread (breakpoints in the traced forward would stop it
    mid-trace); returns the function that turns it back on. Used when a hook fires while the
    program runs; an evaluate already runs with tracing off."""
    dbg = sys.modules.get("debugpy")
    if dbg is None or not hasattr(dbg, "trace_this_thread"):
        return lambda: None
    if sys.version_info < (3, 12) and sys.gettrace() is None:
        return lambda: None  # not traced now (inside an evaluate, or no client)
    if _inside_evaluate(sys._getframe(1)):
        return lambda: None  # the module ran from an evaluate: tracing is off and must stay off
    try:
        if not dbg.is_client_connected():
            return lambda: None
        dbg.trace_this_thread(False)
    except Exception:
        return lambda: None

    def back_on() -> None:
        with contextlib.suppress(Exception):
            dbg.trace_this_thread(True)

    return back_on


def _arm(
    frame: types.FrameType, expr: str, out_path: str, time_budget: Optional[float]
) -> dict[str, Any]:
    with _rng_kept():
        model = _resolve(expr, frame, _module_calls(frame))
    out_path = _out_path(out_path)
    old = _ARMED.pop(out_path, None)
    if old is not None:
        old.remove()
    _RESULTS.pop(out_path, None)
    handle_box: list[Any] = []

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        if _ACTIVE[0]:
            return None  # a call inside one of our traces, not the program's: stay armed
        handle = handle_box[0] if handle_box else None
        if handle is not None:
            handle.remove()  # one shot, and the traced call below must not fire it again
        if _ARMED.get(out_path) is handle:
            _ARMED.pop(out_path, None)
        back_on = _debugger_tracing_off()
        try:
            described = f"next call {_describe(args, kwargs)}"
            with _rng_kept():
                _RESULTS[out_path] = _dump_result(
                    lambda: _run_trace(module, args, kwargs, described, out_path, time_budget),
                    out_path,
                )
        finally:
            back_on()
        return None  # the real call goes on with its own arguments

    handle = model.register_forward_pre_hook(hook, with_kwargs=True, prepend=True)
    handle_box.append(handle)
    _ARMED[out_path] = handle
    return {"ok": True, "armed": True, "path": out_path, "model": type(model).__name__}


def _dump_result(fn: Callable[[], dict[str, Any]], out_path: str) -> dict[str, Any]:
    """The reply of a hook's trace; a failure (timeout, …) also goes to `<out>.error.json`, so
    an extension watching for the graph file learns of it without a paused frame to poll."""
    text = _guarded(fn)
    reply = json.loads(text)
    if not reply.get("ok"):
        with contextlib.suppress(Exception):
            _write(out_path + ".error.json", text.encode("utf-8"))
    return reply


def trace_next_call(
    expr: str,
    out_path: str,
    time_budget: Optional[float] = 60,
    frame: Optional[types.FrameType] = None,
) -> str:
    """Arm a one-shot forward pre-hook on the module `expr`: its next call is traced with its
    real arguments and written to `out_path`; `poll(out_path)` gives the result. `{ok, armed}`."""
    start = sys._getframe(1)

    def run() -> dict[str, Any]:
        return _arm(frame or _paused_frame(start), expr, out_path, time_budget)

    return _guarded(run)


def poll(out_path: str) -> str:
    """The result of an armed `trace_next_call`: `{ok, done: false, armed}` until the module
    ran, then the trace reply (`{ok, path, size, summary}` or `{ok: false}`) with `done: true`."""

    def run() -> dict[str, Any]:
        key = _out_path(out_path)
        result = _RESULTS.get(key)
        if result is None:
            return {"ok": True, "done": False, "armed": key in _ARMED}
        return {**result, "done": True}

    return _guarded(run)


def disarm(out_path: str) -> str:
    """Remove an armed hook (the user cancelled). `{ok, disarmed: bool}`."""

    def run() -> dict[str, Any]:
        key = _out_path(out_path)
        handle = _ARMED.pop(key, None)
        _RESULTS.pop(key, None)
        if handle is not None:
            handle.remove()
        return {"ok": True, "disarmed": handle is not None}

    return _guarded(run)


def read_chunk(path: str, offset: int = 0, size: int = MAX_CHUNK) -> str:
    """`{ok, data: base64, offset, size, total, eof}`: at most 4 MiB of a file, for an extension
    that cannot read the debuggee's files (remote attach)."""

    def run() -> dict[str, Any]:
        n = max(0, min(int(size), MAX_CHUNK))
        start = max(0, int(offset))
        with open(path, "rb") as fh:
            total = os.fstat(fh.fileno()).st_size
            fh.seek(start)
            data = fh.read(n)
        return {
            "ok": True,
            "data": base64.b64encode(data).decode("ascii"),
            "offset": start,
            "size": len(data),
            "total": total,
            "eof": start + len(data) >= total,
        }

    return _guarded(run)


def remove(path: str) -> str:
    """Delete a graph file written here (remote attach: the extension cannot). `{ok, removed}`."""

    def run() -> dict[str, Any]:
        try:
            os.remove(path)
            return {"ok": True, "removed": True}
        except FileNotFoundError:
            return {"ok": True, "removed": False}

    return _guarded(run)


def handle(request_json: str) -> str:
    """One request as JSON (what the extension sends): `{"op": "candidates" | "warm" | "trace" |
    "trace_next_call" | "poll" | "disarm" | "read_chunk" | "remove", ...arguments}`;
    docs/protocol.md lists the arguments."""
    start = sys._getframe(1)
    try:
        req = json.loads(request_json)
        op = req.pop("op")
        return _dispatch(op, req, start)
    except BaseException as exc:  # noqa: BLE001 - a malformed request: never raise
        return _dump(
            {"ok": False, "kind": "bad-request", "error": _one_line(exc), "traceback": None}
        )


def _dispatch(op: str, req: dict[str, Any], start: types.FrameType) -> str:
    def frame() -> types.FrameType:
        return _paused_frame(start)

    if op == "candidates":
        return _guarded(lambda: _candidates(frame()))
    if op == "warm":
        return _guarded(_warm)
    if op == "trace":
        expr, out = str(req["expr"]), str(req["out"])
        return _guarded(
            lambda: _trace(
                frame(),
                expr,
                out,
                req.get("input"),
                req.get("timeBudget", 60),
                req.get("cancelFile"),
            )
        )
    if op == "trace_next_call":
        expr, out = str(req["expr"]), str(req["out"])
        return _guarded(lambda: _arm(frame(), expr, out, req.get("timeBudget", 60)))
    if op == "poll":
        return poll(str(req["out"]))
    if op == "disarm":
        return disarm(str(req["out"]))
    if op == "read_chunk":
        return read_chunk(str(req["path"]), req.get("offset", 0), req.get("size", MAX_CHUNK))
    if op == "remove":
        return remove(str(req["path"]))
    raise ValueError(f"unknown op {op!r}")
