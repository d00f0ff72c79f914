"""`python -m torchscope.runner`: traces models for the language server, one request at a time.

JSON lines in on stdin, JSON lines out on a private copy of stdout (docs/protocol.md, "Runner").
User code gets fd 0 from /dev/null and fd 1 pointed at stderr, so neither `input()` nor
`print` (nor a C library writing to fd 1) can touch the protocol stream.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Optional, TextIO, cast

Reply = dict[str, Any]


class Failure(Exception):
    """A request that ends in an error reply of one protocol kind: raised in the runner, sent
    as a reply, and raised again from it in the server (`from_reply`)."""

    def __init__(
        self, kind: str, message: str, details: Optional[str] = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details
        self.extra = extra

    def to_reply(self, rid: Any) -> Reply:
        reply: Reply = {"id": rid, "ok": False, "kind": self.kind, "message": self.message}
        if self.details is not None:
            reply["details"] = self.details
        reply.update(self.extra)
        return reply

    def data(self) -> dict[str, Any]:
        """The JSON-RPC error's `data` (docs/protocol.md)."""
        data: dict[str, Any] = {"kind": self.kind}
        if self.details is not None:
            data["details"] = self.details
        data.update(self.extra)
        return data

    @staticmethod
    def from_reply(reply: Reply) -> Failure:
        extra = {
            k: v for k, v in reply.items() if k not in ("id", "ok", "kind", "message", "details")
        }
        return Failure(
            reply.get("kind", "internal"),
            reply.get("message", "the runner failed"),
            reply.get("details"),
            **extra,
        )


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- project modules: forget them between requests so edited files are re-imported ----------


def _library_dirs() -> list[str]:
    """The standard library and torchscope itself: never the user's project."""
    import sysconfig

    paths = sysconfig.get_paths()
    dirs = {paths.get("stdlib", ""), paths.get("platstdlib", ""), os.path.dirname(__file__)}
    return [os.path.normcase(os.path.abspath(d)) + os.sep for d in dirs if d]


_LIBRARY_DIRS = _library_dirs()


def _is_project_file(file: str, roots: list[str]) -> bool:
    file = os.path.normcase(os.path.abspath(file))
    if "site-packages" in file or "dist-packages" in file:
        return False
    if any(file.startswith(d) for d in _LIBRARY_DIRS):
        return False
    return any(file.startswith(r) for r in roots)


def project_roots(path: Path, extra_roots: Iterable[str] = ()) -> list[str]:
    """The user's project folders: the file's folder, its package tree's root, the workspace."""
    from .target import module_name_for

    _, root = module_name_for(path)
    folders = [str(root), str(path.resolve().parent), *extra_roots]
    return sorted({os.path.normcase(os.path.abspath(f)).rstrip(os.sep) + os.sep for f in folders})


def _module_paths() -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        paths: Any = list(getattr(module, "__path__", []) or []) if file is None else [file]
        out.append((name, [p for p in paths if isinstance(p, str)]))
    return out


def project_files(roots: list[str]) -> dict[str, tuple[int, int]]:
    """The project's imported files with their (mtime_ns, size): what a reused build depends on."""
    files: dict[str, tuple[int, int]] = {}
    for _, paths in _module_paths():
        for p in paths:
            if _is_project_file(p, roots) and os.path.isfile(p):
                st = os.stat(p)
                files[p] = (st.st_mtime_ns, st.st_size)
    return files


def _unchanged(files: dict[str, tuple[int, int]]) -> bool:
    for p, sig in files.items():
        try:
            st = os.stat(p)
        except OSError:
            return False
        if (st.st_mtime_ns, st.st_size) != sig:
            return False
    return True


@dataclass
class _LastBuild:
    """The previous request's model, reused while its text and its project files are the same
    (a re-trace with another input does not import and build again)."""

    key: tuple[Any, ...]
    built: Any
    files: dict[str, tuple[int, int]]


_last: Optional[_LastBuild] = None


def forget_project_modules(path: Path, extra_roots: Iterable[str] = ()) -> list[str]:
    """Remove from sys.modules every module loaded from the user's project (the file's folder,
    its package tree's root, the workspace folders), so the next import reads the files again."""

    roots = project_roots(path, extra_roots)
    gone: list[str] = []
    for name, paths in _module_paths():
        if paths and all(_is_project_file(p, roots) for p in paths):
            del sys.modules[name]
            gone.append(name)
    importlib.invalidate_caches()
    return gone


def drop_stale_caches(gone: Iterable[str]) -> None:
    """Forget the tracer's per-class cache entries for classes of forgotten modules: through
    their methods' globals they hold the old module, and any model built at its top level."""
    from . import sites, tracer

    names = set(gone)
    caches: list[Any] = [getattr(tracer, "_class_infos", None), getattr(sites, "_defn_cache", None)]
    for cache in caches:
        if isinstance(cache, dict):
            table = cast(dict[Any, Any], cache)
            for cls in [c for c in table if getattr(c, "__module__", None) in names]:
                del table[cls]


# -- where an error happened -----------------------------------------------------------------


def _user_traceback(exc: BaseException) -> Optional[str]:
    """The traceback text of the user's frames (torchscope's own frames and importlib's are
    noise to the user), ending with the exception line; None if no user frame is in it."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = os.path.dirname(os.path.abspath(__file__))
    keep = [f for f in frames if not f.filename.startswith(here) and "importlib" not in f.filename]
    if not keep:
        return None
    lines = traceback.format_list(keep) + traceback.format_exception_only(type(exc), exc)
    return "Traceback (most recent call last):\n" + "".join(lines)


def _in_construction(tb: Optional[TracebackType]) -> bool:
    """The exception came out of building the model, not out of importing the file."""
    from . import target

    codes = {
        target._instantiate.__code__,  # pyright: ignore[reportPrivateUsage]
        target._construct.__code__,  # pyright: ignore[reportPrivateUsage]
    }
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return True
        tb = tb.tb_next
    return False


def user_code(user_file: Path) -> tuple[Callable[[str], bool], Callable[[str], bool]]:
    """Where an error is best shown, for `Graph.error_location`: the user's file, then
    another file of the project (its folder)."""
    user = os.path.normcase(str(user_file.resolve()))
    roots = [os.path.normcase(str(user_file.resolve().parent)) + os.sep]
    return (
        lambda f: os.path.normcase(os.path.abspath(f)) == user,
        lambda f: _is_project_file(f, roots),
    )


def describe_input(value: Any) -> str:
    import torch

    def one(v: Any) -> str:
        if isinstance(v, torch.Tensor):
            return f"tensor {list(v.shape)} {str(v.dtype).replace('torch.', '')}"
        return type(v).__name__

    if isinstance(value, dict):
        items = cast(dict[Any, Any], value).items()
        return "{" + ", ".join(f"{k}: {one(v)}" for k, v in items) + "}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(one(v) for v in cast(list[Any], value)) + ")"
    return one(value)


# -- one trace -------------------------------------------------------------------------------


def trace(req: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Build (or reuse the last build), pick the input, trace, write the file: the TraceResult,
    or raise Failure."""
    started = time.monotonic()
    path = Path(req["file"]).resolve()
    name = req["target"]
    device = req.get("device") or "cpu"
    if device not in ("cpu", "meta"):
        raise Failure("target-error", f"unknown device {device!r}: use cpu or meta")

    global _last
    text = req.get("text")
    digest = (
        hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        if text is not None
        else None
    )
    key = (str(path), digest, name, req.get("ctorArgs"), device)
    roots = project_roots(path, req.get("roots") or ())
    if _last is not None and _last.key == key and _unchanged(_last.files):
        built = _last.built
    else:
        _last = None  # free the old model before building the next
        progress("Importing")
        built = _build(path, name, device, text, req.get("ctorArgs"), roots)
        _last = _LastBuild(key, built, project_files(roots))
    return _trace_built(req, built, started, progress)


def _build(
    path: Path,
    name: str,
    device: str,
    text: Optional[str],
    ctor_args: Optional[str],
    roots: list[str],
) -> Any:
    from . import target as tg

    drop_stale_caches(forget_project_modules(path, roots))
    old_argv, old_cwd = sys.argv, os.getcwd()
    try:
        return tg.build(f"{path}:{name}", device, source=text, ctor_args=ctor_args)
    except tg.NeedsConstructorArgs as exc:
        raise Failure("target-error", str(exc), needsCtorArgs=True) from exc
    except tg.TargetError as exc:
        raise Failure("target-error", str(exc), _user_traceback(exc)) from exc
    except SyntaxError as exc:
        where = f"{Path(exc.filename or path).name}:{exc.lineno}"
        details = "".join(traceback.format_exception_only(type(exc), exc))
        raise Failure("import-error", f"syntax error in {where}: {exc.msg}", details) from exc
    except BaseException as exc:  # noqa: BLE001 - user code: anything, sys.exit included
        if isinstance(exc, SystemExit):
            what = f"called sys.exit({exc.code!r})"
        else:
            what = f"raised {_one_line(exc)}"
        details = _user_traceback(exc) or "".join(traceback.format_exception_only(type(exc), exc))
        if _in_construction(exc.__traceback__):
            raise Failure("target-error", f"building {name} {what}", details) from exc
        raise Failure("import-error", f"importing {path.name} {what}", details) from exc
    finally:
        sys.argv = old_argv
        try:
            os.chdir(old_cwd)
        except OSError:
            pass


def _trace_built(
    req: dict[str, Any], built: Any, started: float, progress: Callable[[str], None]
) -> dict[str, Any]:
    from . import target as tg
    from .inputs import NoInputError, example_input
    from .tracer import trace_call  # pyright: ignore[reportUnknownVariableType]

    budget = req.get("timeout")
    path = Path(req["file"]).resolve()
    name = req["target"]
    device = req.get("device") or "cpu"
    out = Path(req["out"])

    progress("Building input")
    expr = req.get("input")
    value: Any = None
    described = ""
    if expr:
        try:
            value = tg.eval_input(expr, built.module, device)
        except tg.TargetError as exc:
            cause = exc.__cause__ or exc
            raise Failure("needs-input", f"the input {expr} failed: {_one_line(cause)}") from exc
        described = expr
    elif built.example is not None:
        value, described = built.example, f"from {name}()"
    elif getattr(built.model, "example_input_array", None) is not None:
        value, described = built.model.example_input_array, "example_input_array"
    else:
        call = req.get("inputCall")
        if call:
            try:
                value = tg.eval_input(call, built.module, device)
                described = call
            except tg.TargetError as exc:
                print(
                    f"torchscope: the input {call} found in the file failed: {exc}", file=sys.stderr
                )
        if value is None:
            try:
                value = example_input(built.model, device)
            except NoInputError as exc:
                raise Failure(
                    "needs-input",
                    f"cannot tell what input {type(built.model).__name__} takes: give an input "
                    "expression, e.g. torch.randn(1, 3, 224, 224)",
                ) from exc
            described = f"inferred: {describe_input(value)}"

    progress("Tracing")
    remaining = None
    if budget:
        remaining = max(0.05, float(budget) - (time.monotonic() - started))
    call = tg.as_call(value)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    args, kwargs = cast("tuple[tuple[Any, ...], dict[str, Any]]", call)
    try:
        graph = trace_call(built.model, args, kwargs, time_budget=remaining, raise_errors=False)
    except (SystemExit, KeyboardInterrupt) as exc:  # the tracer keeps only Exceptions
        what = f"sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else type(exc).__name__
        raise Failure(
            "runner-crashed", f"the model's forward called {what}", _user_traceback(exc)
        ) from exc
    if graph.error is not None and graph.error.type == "TraceTimeout":
        raise Failure("timeout", f"the trace ran past {budget:g} s and was stopped")

    out.parent.mkdir(parents=True, exist_ok=True)
    data = graph.to_msgpack()
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, out)
    return {
        "path": str(out),
        "size": len(data),
        "summary": graph.result_summary(described, *user_code(path)),
    }


# Libraries slow to import that a model file may use: imported ahead when the server sees an
# open file import them, so the first trace does not pay for it. Only these, never user code.
PRELOADABLE = {
    "transformers",
    "timm",
    "torchvision",
    "torchaudio",
    "diffusers",
    "lightning",
    "pytorch_lightning",
    "einops",
    "accelerate",
}


def preload(modules: list[str]) -> list[str]:
    loaded: list[str] = []
    for name in modules:
        if name not in PRELOADABLE:
            continue
        try:
            importlib.import_module(name)
            loaded.append(name)
        except BaseException as exc:  # noqa: BLE001 - not installed or broken: the trace will say
            print(f"torchscope: preloading {name} failed: {_one_line(exc)}", file=sys.stderr)
    return loaded


# -- the loop --------------------------------------------------------------------------------


class Runner:
    def __init__(self, replies: TextIO) -> None:
        self.replies = replies
        self.torch_version: Optional[str] = None
        self.torch_error: Optional[str] = None

    def send(self, message: Reply) -> None:
        self.replies.write(json.dumps(message) + "\n")
        self.replies.flush()

    def import_torch(self) -> None:
        try:
            import torch

            self.torch_version = str(torch.__version__)
            for name in ("inputs", "target", "tracer"):  # warm: the first trace is faster
                importlib.import_module(f"{__package__}.{name}")
        except Exception as exc:  # ImportError, or a broken install
            self.torch_error = _one_line(exc)

    def no_torch(self, rid: Any) -> Reply:
        return Failure(
            "no-torch",
            f"torch is not installed in this Python ({sys.executable}); install it or pick an "
            "interpreter that has it",
            sys.executable,
            error=self.torch_error,
        ).to_reply(rid)

    def handle(self, req: dict[str, Any]) -> Reply:
        rid = req.get("id")
        op = req.get("op")
        if self.torch_version is None:
            return self.no_torch(rid)
        if op == "ping":
            return {"id": rid, "ok": True, "torch": self.torch_version, "pid": os.getpid()}
        if op == "preload":
            return {"id": rid, "ok": True, "loaded": preload(req.get("modules") or [])}
        if op != "trace":
            return Failure("internal", f"unknown op {op!r}").to_reply(rid)
        try:
            result = trace(req, lambda stage: self.send({"id": rid, "progress": stage}))
        except Failure as exc:
            return exc.to_reply(rid)
        except BaseException as exc:  # noqa: BLE001 - a bug of ours or a strange user object
            return Failure(
                "internal", f"torchscope failed: {_one_line(exc)}", traceback.format_exc()
            ).to_reply(rid)
        return {"id": rid, "ok": True, "result": result}

    def serve(self, requests: TextIO) -> None:
        for line in requests:
            line = line.strip()
            if not line:
                continue
            try:
                req = json.loads(line)
            except ValueError:
                self.send(
                    {"id": None, "ok": False, "kind": "internal", "message": "bad request line"}
                )
                continue
            self.send(self.handle(req))


def _die_with_parent() -> None:
    """Exit when the server dies, so a runner stuck in user code is no orphan: on Linux the
    kernel sends SIGKILL (PR_SET_PDEATHSIG); on other POSIX systems a daemon thread watches for
    the runner being re-parented. (The runner is never a debuggee: a thread is harmless here.)"""
    expected = os.environ.get("TORCHSCOPE_SERVER_PID")
    if not expected or os.name != "posix":
        return
    if os.getppid() != int(expected):
        os._exit(0)  # the server is already gone
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
            if os.getppid() != int(expected):
                os._exit(0)  # the server died before prctl took effect
            return
        except Exception:
            pass
    import threading

    def watch() -> None:
        while os.getppid() == int(expected):
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="torchscope-parent-watch", daemon=True).start()


def main() -> None:
    _die_with_parent()
    # private copies of the protocol streams; user code sees /dev/null and stderr
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115
    sys.stdout = sys.stderr
    runner = Runner(replies)
    runner.import_torch()
    runner.serve(requests)


if __name__ == "__main__":
    main()
