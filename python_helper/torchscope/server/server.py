"""The torchscope language server (pygls): code lenses, target at a position, traces run in a
warm runner process, and inlay hints and hovers from the last trace. The protocol is
docs/protocol.md. Never imports torch."""

from __future__ import annotations

import ast
import asyncio
import itertools
import logging
import os
import sys
import tempfile
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, cast
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path
from pygls.workspace.text_document import TextDocument

from .. import __version__
from ..failure import Failure
from ..file_texts import check_texts
from ..runner import PRELOADABLE
from ..usercode import source_lines, split_lines
from . import calls_in_file, graph_files, hints
from . import find_targets as targets
from .compare_request import CompareError, compare_files
from .runner_client import RunnerClient, runner_import_folders, site_folders, stop_early
from .traces import Change, Mark, Trace, TraceStore, file_key, read_source

# pygls reads a document's lines with str.splitlines, which also breaks at a form feed (a ^L
# page break, which PEP 8 allows) and other characters the editor does not: every edit
# below one would be applied a line off. Its lines as the LSP counts them instead.
TextDocument.lines = property(lambda doc: tuple(source_lines(doc.source)))  # type: ignore[assignment]


TARGET_AT = "torchscope/targetAt"
TARGETS = "torchscope/targets"
TRACE = "torchscope/trace"
SHUTDOWN_RUNNER = "torchscope/shutdownRunner"
GRAPH_SHOWN = "torchscope/graphShown"
COMPARE = "torchscope/compare"
LINES = "torchscope/lines"
SHOWN_KEY = "torchscope/graphShown"  # the key of graphs shown without one
VISUALIZE_COMMAND = "torchscope.visualize"
NOTEBOOK_CELL_SCHEME = "vscode-notebook-cell"  # a cell of a notebook open in VS Code
ERROR_CODE = -32001
TIMEOUT_GRACE = 1.0  # the runner stops itself at the budget; the server kills it a bit later

_LEVELS = {"error": 0, "warning": 1, "info": 2, "debug": 3}
_MESSAGE_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
    "debug": types.MessageType.Debug,  # (Log reaches the client's log unstamped: as info)
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
    inlay_hints: bool = True

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
            Path(storage),
            timeout if timeout > 0 else 60.0,
            level if level in _LEVELS else "info",
            o.get("inlayHints", True) is not False,
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
    """A request's params as a dict; `bad-request` when a string field has another type
    (the extension always sends strings: another client's mistake, said as such)."""
    value = plain(params)
    p = cast(dict[str, Any], value) if isinstance(value, dict) else {}
    for key in _STRING_FIELDS.intersection(p):
        if p[key] is not None and not isinstance(p[key], str):
            raise _error("bad-request", f"{key} must be a string, got {type(p[key]).__name__}")
    return p


# the string fields of docs/protocol.md's requests (null: as if absent)
_STRING_FIELDS = frozenset(
    ("uri", "text", "target", "input", "ctorArgs", "device", "path", "file", "key")
    + ("a", "b", "out", "aSource", "bSource")  # (torchscope/compare's)
)


class _Protocol(LanguageServerProtocol):
    def _send_data(self, data: Any) -> None:
        # Once `exit` came nothing is sent: pygls closes the pipe, and the work cancelled with
        # it would log, answer, and have each failed send reported to the client as an error
        # (a send that fails too, and is reported again: megabytes of tracebacks on stderr).
        if not cast("TorchscopeServer", self._server).exiting:
            super()._send_data(data)


class TorchscopeServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("torchscope", __version__, protocol_cls=_Protocol)  # pyright: ignore[reportUnknownMemberType]
        self.settings = Settings.from_options(None)
        self.runner = RunnerClient(sys.executable, log=self.log)
        self.project = targets.Project()
        self.traces = TraceStore()
        self._files = itertools.count(1)
        self.exiting = False  # `exit` came: nothing more is sent (_Protocol)

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
    def document(self, uri: str) -> Optional[TextDocument]:
        """The document open in the editor at `uri`, or None. pygls keys its open documents by
        the decoded uri (`unquote`), and the editor sends them percent-encoded (`%20` for a
        space, `%C3%A8` for è): every lookup of an open document by uri goes through here."""
        return self.workspace.text_documents.get(unquote(uri))

    def source(self, uri: str, text: Optional[str] = None) -> tuple[Optional[Path], Optional[str]]:
        """The file of `uri` (None for an unsaved `untitled:` document) and its text: `text` if
        given, else the open document's, else None (read from disk)."""
        path = to_fs_path(uri)
        if text is None:
            doc = self.document(uri)
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

    def open_texts(self) -> dict[str, str]:
        """The open files' texts by file_key (what a trace starting now sees)."""
        out: dict[str, str] = {}
        for doc in self.workspace.text_documents.values():
            path = to_fs_path(doc.uri)  # (as sent: the keys are decoded already)
            if path:
                out[file_key(path)] = doc.source
        return out

    def load_hints(self, key: str, graph: str, mark: Optional[Mark]) -> Any:
        """Index a graph for hints and hovers (off the event loop), then ask the editor to
        fetch the hints again."""
        started = time.perf_counter()

        def loaded(trace: Trace) -> None:
            lines = sum(len(t.lines) for t in trace.files.values())
            self.log(
                "debug",
                f"hints: {lines} lines in {len(trace.files)} files from {Path(graph).name} "
                f"in {(time.perf_counter() - started) * 1000:.0f} ms "
                f"({trace.cpu_ms:.0f} ms CPU reading and indexing)",
            )
            self.refresh_hints()

        return self.traces.load(
            key, graph, mark, self.open_texts, loaded, lambda m: self.log("warning", m)
        )

    def refresh_hints(self, turned_off: bool = False) -> None:
        """Ask the editor to fetch inlay hints again (new shapes; or, `turned_off`, none)."""
        caps = self.client_capabilities.workspace
        hint_caps = caps.inlay_hint if caps is not None else None
        if not (self.settings.inlay_hints or turned_off) or not (
            hint_caps and hint_caps.refresh_support
        ):
            return
        future: Any = self.workspace_inlay_hint_refresh(None)
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # answered or not

    def may_trace(self, uri: str, path: Path) -> bool:
        """Only files of the workspace folders, or open in the editor, are run for a trace: a
        client can't make the server import any file on the machine."""
        if self.document(uri) is not None:
            return True
        resolved = path.resolve()
        return any(resolved.is_relative_to(root) for root in self.project.roots)

    def graph_path(self, target: str) -> Path:
        folder = self.settings.storage_dir
        folder.mkdir(parents=True, exist_ok=True)
        graph_files.prune(folder, os.getpid())
        return graph_files.new_graph_path(folder, target, os.getpid(), next(self._files))


server = TorchscopeServer()


@server.feature(types.INITIALIZE)
def initialize(ls: TorchscopeServer, params: types.InitializeParams) -> None:
    ls.settings = Settings.from_options(params.initialization_options)
    roots = [to_fs_path(f.uri) for f in params.workspace_folders or []]
    if params.root_uri:
        roots.append(to_fs_path(params.root_uri))
    ls.project = targets.Project(
        tuple(Path(r) for r in roots if r),
        python_path=runner_import_folders(),
        library_roots=site_folders(),
    )
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
    await ls.runner.shutdown("the language server is shutting down")


@server.feature(types.EXIT)
def exit_(ls: TorchscopeServer, params: Any) -> None:
    """Before pygls closes the pipe and leaves (with `shutdown` first or not)."""
    ls.exiting = True


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: TorchscopeServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    info = ls.file_info(uri)
    if info is None:
        return []
    models = targets.module_classes(ls.project, info)
    if models:
        ls.runner.prestart()  # a file with a model is open: have torch imported before a click
    heavy = targets.library_imports(info) & PRELOADABLE
    if heavy:
        ls.runner.preload_soon(heavy)  # the first trace of this file will not wait for them
    lenses: list[types.CodeLens] = []
    for cls in models:
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
    pos: Any = p.get("position") or {}
    line = pos.get("line", 0) if isinstance(pos, dict) else None
    character = pos.get("character", 0) if isinstance(pos, dict) else None
    if not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (line, character)
    ):
        raise _error("bad-request", f"position must be {{line, character}} as numbers, got {pos!r}")
    found = targets.target_at(ls.project, info, line, character)  # pyright: ignore[reportArgumentType]
    return found.to_wire() if found is not None else None


@server.feature(TARGETS)
def targets_of_file(ls: TorchscopeServer, params: Any) -> list[dict[str, Any]]:
    """Every model of a file (classes, instances, factories): the editor's pick list when the
    cursor is on none of them."""
    p = params_dict(params)
    uri = str(p.get("uri", ""))
    info = ls.file_info(uri, p.get("text"))
    if info is None:
        path, text = ls.source(uri, p.get("text"))
        if text is None and path is not None:
            text = read_source(path)  # (not open in the editor: the file as saved, if readable)
        if text is not None:
            _raise_syntax_error(path.name if path else "the file", text)
        return []
    return [t.to_wire() for t in targets.targets_in(ls.project, info)]


def _raise_syntax_error(name: str, text: str) -> None:
    """A file that does not parse lists no models: say where it fails to parse (else the
    editor would say the file defines none)."""
    try:
        ast.parse(text)
    except SyntaxError as exc:
        line = exc.lineno or 1
        msg = f"{name} does not parse: line {line}: {exc.msg}"
        raise _error("syntax-error", msg, line=line) from None
    except ValueError as exc:  # (a NUL byte)
        raise _error("syntax-error", f"{name} does not parse: {exc}", line=1) from None


@server.feature(TRACE)
async def trace(ls: TorchscopeServer, params: Any) -> dict[str, Any]:
    p = params_dict(params)
    uri, target = str(p.get("uri") or ""), str(p.get("target") or "")
    if not uri or not target:
        raise _error("target-error", "a trace needs a document uri and a target name")
    path, text = ls.source(uri, p.get("text"))
    if path is None and uri.startswith(f"{NOTEBOOK_CELL_SCHEME}:"):
        raise _error(
            "target-error",
            "a notebook cell is not a file to import: in the notebook, run "
            "torchscope.show(model, x) in a cell to draw the model's forward pass there",
        )
    if path is None:
        raise _error("target-error", "save the file first: an untitled document cannot be imported")
    if not ls.may_trace(uri, path):
        raise _error(
            "target-error",
            f"{path} is outside the workspace folders and not open in the editor: "
            "open it to trace it",
        )
    if p.get("train") is not None and not isinstance(p.get("train"), bool):
        raise _error("bad-request", f"train must be true or false, got {p.get('train')!r}")
    try:
        check_texts(p.get("texts"))
    except ValueError as exc:
        raise _error("bad-request", str(exc)) from None
    token = p.get("workDoneToken")
    if token is not None and (isinstance(token, bool) or not isinstance(token, (int, str))):
        raise _error(
            "bad-request",
            f"workDoneToken must be a string or an integer, not {type(token).__name__}",
        )
    progress = _Progress(ls, token, f"Visualize {target}")
    request: dict[str, Any] = {
        "op": "trace",
        "file": str(path),
        "target": target,
        "device": p.get("device") or "cpu",
        "out": str(_graph_path(ls, target)),
        "timeout": ls.settings.trace_timeout,
    }
    folder = targets.workspace_folder(ls.project.roots, path)
    if folder is not None:  # (relative paths in the file are read from there)
        request["cwd"] = str(folder)
    for key in ("text", "input", "ctorArgs", "runTopLevel", "train"):
        value = text if key == "text" else p.get(key)
        if value is not None:
            request[key] = value
    if p.get("texts"):  # other files as another version has them (HEAD's)
        request["texts"] = p["texts"]
    if not p.get("input"):
        info = ls.project.load(path, text)
        call = calls_in_file.found_input(ls.project, info, target) if info is not None else None
        if call:
            request["inputCall"] = call.text
            if call.factory:  # (said as where it comes from: `as build() returns it`)
                request["inputCallFrom"] = call.factory
    # the extension logs one line per trace (what was traced, how long, from which input);
    # the server's own lines about it are for debugging
    ls.log(
        "debug",
        f"trace {path.name}:{target}" + (f" with input {p['input']}" if p.get("input") else ""),
    )
    started = time.perf_counter()
    # hints fit the texts traced (this file's as sent, the others' as saved: the runner
    # imports them from disk), mapped onto the open documents, replaying edits made meanwhile
    traced = (file_key(path), text) if text is not None else None
    mark = ls.traces.begin(ls.open_texts(), traced, hints=p.get("hints") is not False)
    try:  # (from here on, whatever raises ends the trace's mark: it keeps every edit's text)
        progress.begin("")
        result = await ls.runner.request(
            request,
            timeout=ls.settings.trace_timeout,
            progress=progress.report,
            grace=TIMEOUT_GRACE,
        )
    except Failure as exc:
        ls.traces.end(mark)
        # the extension says what went wrong (the traceback once, in its own line)
        ls.log(
            "debug" if exc.kind != "internal" else "error",
            f"trace {target}: {exc.kind}: {exc.message}",
        )
        if exc.details:
            ls.log("debug", exc.details)
        raise _error(exc.kind, exc.message, exc.details, **exc.extra) from None
    except BaseException:  # cancelled
        ls.traces.end(mark)
        raise
    finally:
        progress.end()
    summary = result.get("summary", {})
    ls.log(
        "debug",
        f"traced {target} in {(time.perf_counter() - started) * 1000:.0f} ms: "
        f"{summary.get('nodes')} nodes, {result.get('size')} bytes -> {result.get('path')}",
    )
    if p.get("hints") is False:  # another text than the file's (HEAD's): its lines are not these
        ls.traces.end(mark)
    else:
        # (one trace per model of the file: two models in two panels both have hints)
        ls.load_hints(f"{uri}#{target}", str(result.get("path")), mark)
    return result


@server.feature(GRAPH_SHOWN)
async def graph_shown(ls: TorchscopeServer, params: Any) -> dict[str, Any]:
    """A graph traced elsewhere (a paused debugger) is shown: its lines get hints too."""
    p = params_dict(params)
    graph = str(p.get("path") or "")
    trace = ls.traces.find_graph(graph)
    if trace is not None:  # a graph this server traced and indexed already
        ls.traces.touch(trace)
        ls.refresh_hints()
    else:
        trace = await ls.load_hints(str(p.get("key") or SHOWN_KEY), graph, None)
    if trace is None:
        raise _error("bad-graph", f"cannot read the graph {graph}")
    return {"files": len(trace.files), "lines": sum(len(t.lines) for t in trace.files.values())}


@server.feature(LINES)
async def lines(ls: TorchscopeServer, params: Any) -> dict[str, Any]:
    """Where the lines of a graph's file that made something are now: `[[traced, now], …]`
    (0-based), as the hints follow the edits since the trace (an older trace of the file
    too, which gives no hints now); null for a graph or a file this server has not indexed.
    A line edited since is left out."""
    p = params_dict(params)
    await ls.traces.settled()
    trace = ls.traces.lines_of(str(p.get("path") or ""))
    table = trace.files.get(file_key(str(p.get("file") or ""))) if trace is not None else None
    if table is None:
        return {"lines": None}
    return {"lines": [[info.line, now] for now, info in table.lines.items()]}


@server.feature(COMPARE)
async def compare(ls: TorchscopeServer, params: Any) -> dict[str, Any]:
    """Two graph files (a: before, b: after) → the compare view's graph file."""
    p = params_dict(params)
    a, b = str(p.get("a") or ""), str(p.get("b") or "")
    if not a or not b:
        raise _error("bad-graph", "a comparison needs two graph files, a and b")
    out = Path(str(p["out"])) if p.get("out") else _graph_path(ls, "compare")
    tolerance = p.get("statsTolerance")
    started = time.perf_counter()
    try:
        result = await asyncio.to_thread(
            compare_files,
            a,
            b,
            out,
            str(p.get("aSource") or ""),
            str(p.get("bSource") or ""),
            float(tolerance) if isinstance(tolerance, (int, float)) else None,
        )
    except CompareError as exc:
        raise _error("bad-graph", str(exc)) from None
    except OSError as exc:
        raise _error("internal", f"cannot write the comparison to {out}: {exc}") from None
    s = result["summary"]
    ls.log(
        "info",
        f"compared {Path(a).name} with {Path(b).name} in "
        f"{(time.perf_counter() - started) * 1000:.0f} ms: {s['added']} added, "
        f"{s['removed']} removed, {s['changed']} changed, {s['same']} same -> {out}",
    )
    return result


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
async def inlay_hint(ls: TorchscopeServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    await ls.traces.settled()
    path = to_fs_path(params.text_document.uri)
    found = ls.traces.hinted(path) if path and ls.settings.inlay_hints else None
    if not found:
        return []
    doc = ls.workspace.get_text_document(params.text_document.uri)
    lines = split_lines(doc.source)
    infos = {line: info for line, (_, info) in found.items()}
    return hints.inlay_hints(infos, lines, params.range.start.line, params.range.end.line)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(
    ls: TorchscopeServer, params: types.DidChangeConfigurationParams
) -> None:
    """torchscope.inlayHints changed in the editor ({"torchscope": {"inlayHints": …}}): the
    hints appear or go at once, the runner stays warm (no restart)."""
    settings = plain(params.settings) if params is not None else None
    ours = settings.get("torchscope") if isinstance(settings, dict) else None
    if not isinstance(ours, dict) or "inlayHints" not in ours:
        return
    on = ours["inlayHints"] is not False
    if on != ls.settings.inlay_hints:
        ls.settings.inlay_hints = on
        ls.refresh_hints(turned_off=not on)


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: TorchscopeServer, params: types.HoverParams) -> Optional[types.Hover]:
    await ls.traces.settled()
    path = to_fs_path(params.text_document.uri)
    line = params.position.line
    found = ls.traces.hinted(path).get(line) if path else None
    if found is None:
        return None
    trace, info = found
    doc = ls.workspace.get_text_document(params.text_document.uri)
    lines = split_lines(doc.source)
    text = lines[line] if line < len(lines) else ""
    return hints.hover(info, trace.graph, trace.device, line, text, params.position.character)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TorchscopeServer, params: types.DidOpenTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri)
    if path:
        ls.traces.did_open(path, params.text_document.text)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: TorchscopeServer, params: types.DidChangeTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri)
    if not path:
        return
    changes: list[Change] = []
    for c in params.content_changes:
        if isinstance(c, types.TextDocumentContentChangePartial):
            changes.append((c.range.start.line, c.range.end.line, c.text))
        else:
            changes.append((None, None, c.text))
    doc = ls.workspace.get_text_document(params.text_document.uri)
    ls.traces.did_change(path, changes, doc.source)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TorchscopeServer, params: types.DidCloseTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri)
    if path:
        ls.traces.did_close(path)


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
        stop_early()


if __name__ == "__main__":
    main()
