"""The torchscope language server (pygls): code lenses, target at a position, and traces run
in a warm runner process. The protocol is docs/protocol.md. Never imports torch."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import sys
import tempfile
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..failure import Failure
from ..runner import PRELOADABLE
from . import find_targets as targets
from .runner_client import RunnerClient

TARGET_AT = "torchscope/targetAt"
TRACE = "torchscope/trace"
SHUTDOWN_RUNNER = "torchscope/shutdownRunner"
VISUALIZE_COMMAND = "torchscope.visualize"
ERROR_CODE = -32001
KEEP_GRAPH_FILES = 20
TIMEOUT_GRACE = 1.0  # the runner stops itself at the budget; the server kills it a bit later

_LEVELS = {"error": 0, "warning": 1, "info": 2, "debug": 3}
_MESSAGE_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
    "debug": types.MessageType.Log,
}


class TraceError(JsonRpcException):
    """An error response of docs/protocol.md: code -32001, data {kind, details?}."""

    CODE = ERROR_CODE


def _error(kind: str, message: str, details: Optional[str] = None, **extra: Any) -> TraceError:
    data: dict[str, Any] = {"kind": kind}
    if details is not None:
        data["details"] = details
    data.update(extra)
    return TraceError(message=message, code=ERROR_CODE, data=data)


@dataclass
class Settings:
    storage_dir: Path
    trace_timeout: float = 60.0
    log_level: str = "info"

    @staticmethod
    def from_options(options: Any) -> Settings:
        o: dict[str, Any] = cast(dict[str, Any], options) if isinstance(options, dict) else {}
        storage = o.get("storageDir") or os.path.join(
            tempfile.gettempdir(), f"torchscope-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
        )
        try:
            timeout = float(o.get("traceTimeoutSeconds", 60))
        except (TypeError, ValueError):
            timeout = 60.0
        level = str(o.get("logLevel", "info"))
        return Settings(
            Path(storage), timeout if timeout > 0 else 60.0, level if level in _LEVELS else "info"
        )


def plain(value: Any) -> Any:
    """pygls hands custom-request params over as namedtuples: back to dicts and lists."""
    if hasattr(value, "_asdict"):
        return {str(k): plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in cast(dict[Any, Any], value).items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in cast(list[Any], value)]
    return value


def params_dict(params: Any) -> dict[str, Any]:
    value = plain(params)
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


class TorchscopeServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("torchscope", __version__)  # pyright: ignore[reportUnknownMemberType]
        self.settings = Settings.from_options(None)
        self.runner = RunnerClient(sys.executable, log=self.log)
        self.project = targets.Project()
        self._files = itertools.count(1)

    def log(self, level: str, message: str) -> None:
        if _LEVELS.get(level, 2) > _LEVELS[self.settings.log_level]:
            return
        try:
            self.window_log_message(
                types.LogMessageParams(type=_MESSAGE_TYPES[level], message=message)
            )
        except Exception:  # no client yet, or the pipe is gone: nothing to tell
            pass

    # -- documents ------------------------------------------------------------------------
    def source(self, uri: str, text: Optional[str] = None) -> tuple[Optional[Path], Optional[str]]:
        """The file of `uri` (None for an unsaved `untitled:` document) and its text: `text` if
        given, else the open document's, else None (read from disk)."""
        path = to_fs_path(uri)
        if text is None:
            doc = self.workspace.text_documents.get(uri)
            if doc is not None:
                text = doc.source
        return (Path(path) if path else None), text

    def file_info(self, uri: str, text: Optional[str] = None) -> Optional[targets.FileInfo]:
        path, text = self.source(uri, text)
        if path is None:  # an untitled document: analysed as if in the first workspace folder
            if text is None:
                return None
            path = (self.project.roots[0] if self.project.roots else Path.cwd()) / "untitled.py"
        return self.project.load(path, text)

    def graph_path(self, target: str) -> Path:
        folder = self.settings.storage_dir
        folder.mkdir(parents=True, exist_ok=True)
        old = sorted(folder.glob("*.msgpack"), key=lambda p: p.stat().st_mtime)
        for stale in old[: max(0, len(old) - KEEP_GRAPH_FILES + 1)]:
            try:
                stale.unlink()
            except OSError:
                pass
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", target)[:60]
        return (
            folder / f"{safe}-{os.getpid()}-{int(time.time() * 1000)}-{next(self._files)}.msgpack"
        )


server = TorchscopeServer()


@server.feature(types.INITIALIZE)
def initialize(ls: TorchscopeServer, params: types.InitializeParams) -> None:
    ls.settings = Settings.from_options(params.initialization_options)
    roots = [to_fs_path(f.uri) for f in params.workspace_folders or []]
    if params.root_uri:
        roots.append(to_fs_path(params.root_uri))
    ls.project = targets.Project(tuple(Path(r) for r in roots if r))
    if roots and roots[0]:
        ls.runner.cwd = roots[0]


@server.feature(types.INITIALIZED)
def initialized(ls: TorchscopeServer, params: types.InitializedParams) -> None:
    ls.log(
        "info",
        f"torchscope {__version__} server on {sys.executable}; graphs in {ls.settings.storage_dir}",
    )
    ls.runner.prestart()


@server.feature(types.SHUTDOWN)
async def shutdown(ls: TorchscopeServer, params: Any) -> None:
    await ls.runner.shutdown()


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: TorchscopeServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    info = ls.file_info(uri)
    if info is None:
        return []
    heavy = targets.library_imports(info) & PRELOADABLE
    if heavy:
        ls.runner.preload_soon(heavy)  # the first trace of this file will not wait for them
    lenses: list[types.CodeLens] = []
    for cls in targets.module_classes(ls.project, info):
        pos = types.Position(line=cls.line, character=0)
        lenses.append(
            types.CodeLens(
                range=types.Range(start=pos, end=pos),
                command=types.Command(
                    title="Visualize forward pass",
                    command=VISUALIZE_COMMAND,
                    arguments=[{"uri": uri, "target": cls.name}],
                ),
            )
        )
    return lenses


@server.feature(TARGET_AT)
def target_at(ls: TorchscopeServer, params: Any) -> Optional[dict[str, Any]]:
    p = params_dict(params)
    info = ls.file_info(str(p.get("uri", "")), p.get("text"))
    if info is None:
        return None
    pos: dict[str, Any] = p.get("position") or {}
    found = targets.target_at(
        ls.project, info, int(pos.get("line", 0)), int(pos.get("character", 0))
    )
    return found.to_wire() if found is not None else None


@server.feature(TRACE)
async def trace(ls: TorchscopeServer, params: Any) -> dict[str, Any]:
    p = params_dict(params)
    uri, target = str(p.get("uri") or ""), str(p.get("target") or "")
    if not uri or not target:
        raise _error("target-error", "a trace needs a document uri and a target name")
    path, text = ls.source(uri, p.get("text"))
    if path is None:
        raise _error("target-error", "save the file first: an untitled document cannot be imported")
    token = p.get("workDoneToken")
    progress = _Progress(ls, token, f"Visualize {target}")
    request: dict[str, Any] = {
        "op": "trace",
        "file": str(path),
        "target": target,
        "device": p.get("device") or "cpu",
        "out": str(_graph_path(ls, target)),
        "timeout": ls.settings.trace_timeout,
    }
    for key in ("text", "input", "ctorArgs"):
        value = text if key == "text" else p.get(key)
        if value is not None:
            request[key] = value
    if not p.get("input"):
        info = ls.project.load(path, text)
        call = targets.input_call(ls.project, info, target) if info is not None else None
        if call:
            request["inputCall"] = call
    ls.log(
        "info",
        f"trace {path.name}:{target}" + (f" with input {p['input']}" if p.get("input") else ""),
    )
    started = time.perf_counter()
    progress.begin("")
    try:
        result = await ls.runner.request(
            request,
            timeout=ls.settings.trace_timeout,
            progress=progress.report,
            grace=TIMEOUT_GRACE,
        )
    except Failure as exc:
        ls.log(
            "warning" if exc.kind != "internal" else "error",
            f"trace {target}: {exc.kind}: {exc.message}",
        )
        if exc.details:
            ls.log("info", exc.details)
        raise _error(exc.kind, exc.message, exc.details, **exc.extra) from None
    finally:
        progress.end()
    summary = result.get("summary", {})
    ls.log(
        "info",
        f"traced {target} in {(time.perf_counter() - started) * 1000:.0f} ms: "
        f"{summary.get('nodes')} nodes, {result.get('size')} bytes -> {result.get('path')}",
    )
    return result


@server.feature(SHUTDOWN_RUNNER)
async def shutdown_runner(ls: TorchscopeServer, params: Any) -> None:
    await ls.runner.shutdown()


def _graph_path(ls: TorchscopeServer, target: str) -> Path:
    try:
        return ls.graph_path(target)
    except OSError as exc:
        folder = ls.settings.storage_dir
        raise _error("internal", f"cannot write graph files to {folder}: {exc}") from None


class _Progress:
    """Work-done progress on a client-supplied token (none given: silent)."""

    def __init__(self, ls: TorchscopeServer, token: Any, title: str) -> None:
        self.ls = ls
        self.token = token
        self.title = title
        self.done = False

    def begin(self, message: str) -> None:
        if self.token is None:
            return
        self.ls.work_done_progress.begin(
            self.token,
            types.WorkDoneProgressBegin(
                title=self.title, message=message or None, cancellable=True
            ),
        )
        # the client may cancel through the progress too (window/workDoneProgress/cancel)
        task = asyncio.current_task()
        progress: Any = self.ls.work_done_progress
        tokens = cast("dict[Any, Future[Any]]", progress.tokens)
        future = tokens.get(self.token)
        if task is not None and future is not None:
            future.add_done_callback(lambda f: f.cancelled() and not self.done and task.cancel())

    def report(self, message: str) -> None:
        if self.token is None or self.done:
            return
        self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(message=message))

    def end(self) -> None:
        if self.token is None or self.done:
            return
        self.done = True
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd())
        progress: Any = self.ls.work_done_progress
        cast("dict[Any, Any]", progress.tokens).pop(self.token, None)


class _QuietRequestErrors(logging.Filter):
    """pygls logs every error response with a stack; ours are expected answers."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, TraceError)


def configure_logging() -> None:
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietRequestErrors())


def main() -> None:
    configure_logging()
    # the LSP stream gets a private copy of stdout; anything printed goes to stderr
    stdin = os.fdopen(os.dup(0), "rb")
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        server.start_io(stdin, stdout)
    finally:
        server.runner.kill_now()


if __name__ == "__main__":
    main()
