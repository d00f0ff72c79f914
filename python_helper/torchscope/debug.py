"""The loader of the paused-debugger entry: what must run in a debuggee before the torchscope
package is importable there. See docs/debugging.md and docs/protocol.md ("Debug entry").

The VS Code extension loads this file BY PATH into a debuggee paused at a breakpoint and
calls `handle(<request json>)` through DAP `evaluate` on the selected frame. The debuggee may
not have torchscope installed: the package this file sits in is imported from beside it under
a private name (no `sys.path` change), or from sources the extension sent (a remote
debuggee); msgpack comes from the extension's bundled libraries when the debuggee has none.
Then the request goes to `paused.handle`, the package's code for a paused program.

`handle` returns a short JSON string and never raises: `{"ok": true, ...}` or
`{"ok": false, "kind", "error", "traceback"}`. Only the standard library is imported at load
time, so loading never fails, and torch is never imported into a program that has none.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import tempfile
import time
import types
from typing import Any, Optional

MODULE_NAME = "_torchscope_debug"  # sys.modules key of this file when loaded by path
PACKAGE_ALIAS = "_torchscope_debug_pkg"  # the package, when another torchscope is loaded
MAX_CHUNK = 4 * 1024 * 1024  # read_chunk: at most 4 MiB per evaluate (base64 ≈ 5.6 MB)
NEEDS_TORCH = frozenset(("candidates", "warm", "trace", "trace_next_call", "poll", "disarm"))
TRACES = frozenset(("warm", "trace", "trace_next_call"))  # need the tracer and msgpack

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

# The package's modules a paused trace does not need (every other top-level module is sent:
# the command line's, the runner's, the comparison's, the notebook's; test_debug_shipped.py
# checks no sent module imports one of them); msgpack's pure-Python files.
NOT_SHIPPED = (
    "__main__.py",
    "align.py",
    "cli.py",
    "cli_args.py",
    "cli_say.py",
    "cli_trace.py",
    "compare.py",
    "diff.py",
    "diff_cli.py",
    "diff_text.py",
    "entry_path.py",
    "file_texts.py",
    "html.py",
    "launch.py",
    "notebook.py",
    "op_libraries.py",
    "output_file.py",
    "process_defaults.py",
    "runner.py",
    "side_imports.py",
    "stuck.py",
    "summary.py",
)
SHIPPED_MSGPACK = ("__init__.py", "exceptions.py", "ext.py", "fallback.py")


def shipped_files(folder: str = _HERE) -> list[str]:
    """The package files sent to a remote debuggee, as the extension picks them."""
    names = (f for f in os.listdir(folder) if f.endswith(".py") and f not in NOT_SHIPPED)
    return sorted(names)


def ship_expression(path: str, source: str, files: dict[str, str]) -> str:
    """The evaluate expression that loads this file from `source` as if it were at `path`;
    `files`: relative path (`tracer.py`, `msgpack/fallback.py`) → source."""
    return SHIP_TEMPLATE.format(
        path=json.dumps(path),
        source=json.dumps(source),
        # as the extension writes it: JSON.stringify's spacing, then one ASCII literal
        files=json.dumps(json.dumps(files, separators=(",", ":"), ensure_ascii=False)),
    )


_SHIPPED: dict[str, str] = {}  # relative path → source, when the extension sent the files


def _shipped(files_json: str) -> str:
    """The end of `SHIP_TEMPLATE`: keep the sources the extension sent."""
    _SHIPPED.update(json.loads(files_json))
    return json.dumps({"ok": True, "files": len(_SHIPPED)})


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


def _same_dir(file: Optional[str]) -> bool:
    return bool(file) and os.path.dirname(os.path.abspath(str(file))) == _HERE


def _package() -> types.ModuleType:
    """The torchscope package this file belongs to."""
    if __package__:  # imported normally, as torchscope.debug
        return importlib.import_module(__package__)
    for name in ("torchscope", PACKAGE_ALIAS):
        loaded = sys.modules.get(name)
        if loaded is not None and _same_dir(getattr(loaded, "__file__", None)):
            return loaded
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


class _Fail(Exception):
    """Before the package (and its Failure type) is importable."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.reply = {"ok": False, "kind": kind, "error": message, "traceback": None}


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


def _import(name: str, tracer: bool) -> types.ModuleType:
    """A module of the package (importing torch, which the program already has); `tracer`:
    also the tracer and msgpack, which listing candidates doesn't need (~0.3 s)."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "nn"):
        raise _Fail("no-torch", "torch is not imported in the debugged program: nothing to trace")
    try:
        if tracer:
            _ensure_msgpack()
        pkg = _package()
        with _shipped_imports():
            if tracer:
                importlib.import_module(f"{pkg.__name__}.tracefile")
            return importlib.import_module(f"{pkg.__name__}.{name}")
    except _Fail:
        raise
    except Exception as exc:
        version = ".".join(map(str, sys.version_info[:3]))
        text = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
        fail = _Fail(
            "import-error",
            f"torchscope's tracer could not be imported in the debugged Python {version}: {text}",
        )
        fail.reply["traceback"] = _traceback(exc)
        raise fail from exc


def _traceback(exc: BaseException) -> Optional[str]:
    import traceback

    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:
        return None


# -- files for an extension that can't read the debuggee's (remote attach) ------------------


def _read_chunk(path: str, offset: int = 0, size: int = MAX_CHUNK) -> dict[str, Any]:
    """At most 4 MiB of a file, base64."""
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


def _remove(path: str) -> dict[str, Any]:
    try:
        os.remove(path)
        return {"ok": True, "removed": True}
    except FileNotFoundError:
        return {"ok": True, "removed": False}


# -- the one entry ---------------------------------------------------------------------------


# a trace's time limit when a request names none (paused.DEFAULT_BUDGET: this file imports
# no torch, so not paused.py before it must), a margin, and what no limit (0) gets
_DEFAULT_LIMIT = 60.0
_LIMIT_MARGIN = 30.0
_NO_LIMIT = 24 * 3600.0


def _slow_evaluations_expected(limit: Any) -> None:
    """A trace is one evaluation of the debugger's, as long as its time limit: debugpy warns
    of any over PYDEVD_WARN_EVALUATION_TIMEOUT (3 s) in a notification that shows
    torchscope's internal expression. That threshold, read as each evaluation begins, is
    raised for this program to the limit and a margin (never lowered)."""
    constants = sys.modules.get("_pydevd_bundle.pydevd_constants")
    now = getattr(constants, "PYDEVD_WARN_EVALUATION_TIMEOUT", None)
    if not isinstance(limit, (int, float)) or limit < 0:
        limit = _DEFAULT_LIMIT
    seconds = limit + _LIMIT_MARGIN if limit > 0 else _NO_LIMIT
    if isinstance(now, (int, float)) and now < seconds:
        constants.PYDEVD_WARN_EVALUATION_TIMEOUT = float(seconds)  # type: ignore[union-attr]


def handle(request_json: str, frame: Optional[types.FrameType] = None) -> str:
    """One request as JSON: `{"op": "candidates" | "warm" | "trace" | "trace_next_call" |
    "poll" | "disarm" | "read_chunk" | "remove", ...arguments}` (docs/protocol.md). The paused
    frame is the one the debugger evaluates in, found from the caller; `frame` names it
    instead (tests, or a program calling the entry itself)."""
    start = frame or sys._getframe(1)
    try:
        try:
            req = json.loads(request_json)
            op = str(req.pop("op"))
        except Exception as exc:  # a malformed request
            raise _Fail("bad-request", f"{type(exc).__name__}: {exc}".splitlines()[0]) from exc
        if op == "read_chunk":
            reply = _read_chunk(str(req["path"]), req.get("offset", 0), req.get("size", MAX_CHUNK))
        elif op == "remove":
            reply = _remove(str(req["path"]))
        elif op in NEEDS_TORCH:
            if sys.version_info < (3, 10):  # noqa: UP036 - the debugged program's Python
                raise _Fail(
                    "import-error",
                    f"torchscope needs Python 3.10 or newer; this program runs Python "
                    f"{sys.version.split()[0]}",
                )
            _slow_evaluations_expected(req.get("timeBudget"))
            started = time.perf_counter()
            paused = _import("paused", op in TRACES)
            session = paused.Session(start, bool(_SHIPPED))
            reply = _run(paused, op, req, session)
            if op == "warm":  # what the imports cost, for the extension's log
                reply["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
        else:
            raise _Fail("bad-request", f"unknown op {op!r}")
    except _Fail as f:
        reply = f.reply
    except BaseException as exc:  # noqa: BLE001 - the entry never raises, SystemExit included
        text = f"{type(exc).__name__}: {exc}".strip().splitlines()
        reply = {
            "ok": False,
            "kind": "internal",
            "error": (text[0] if text else type(exc).__name__)[:500],
            "traceback": _traceback(exc),
        }
    return json.dumps(reply, default=str)


def _run(paused: Any, op: str, req: dict[str, Any], session: Any) -> dict[str, Any]:
    """`paused.handle`, its Failure as a reply."""
    try:
        return paused.handle(op, req, session)
    except paused.Failure as exc:
        return exc.debug_reply()
