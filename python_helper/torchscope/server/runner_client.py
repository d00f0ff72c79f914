"""The server's side of the runner: one warm `python -m torchscope.runner` process.

Everything here is asyncio (subprocess pipes read by tasks), so the event loop never blocks.
A cancelled, timed-out or crashed request kills the runner; the next request starts a new one.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib.util
import itertools
import json
import os
import signal
import site
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import torchscope

from ..entry_path import RUNNER_LIBS
from ..failure import IMPORTING, TRACING, WRITING, Failure

Log = Callable[[str, str], None]  # (level, message): "error" | "warning" | "info" | "debug"
Progress = Callable[[str], None]

STDERR_TAIL_LINES = 60
STDERR_LINE_CHARS = 2000  # a longer line is cut (its end dropped) in the log and the tail
START_TIMEOUT = 120.0  # importing torch on a cold disk can be slow
STDOUT_LIMIT = 64 * 1024 * 1024  # a reply line (a trace's summary) can be long


def runner_env() -> dict[str, str]:
    """The server's environment, with torchscope's folder on PYTHONPATH (the extension sets it,
    but a server started some other way must still give its runner the same package).

    The extension puts its bundled libraries (pygls, attrs, typing_extensions, msgpack …)
    first on the server's PYTHONPATH. The runner runs the user's code, which must import the
    user's own versions of those: the folder leaves its PYTHONPATH (so programs the user's
    code starts don't see it either) and goes to RUNNER_LIBS, which the runner puts last on
    its sys.path (msgpack for the graph file, when the user's environment has none)."""
    env = dict(os.environ)
    here = str(Path(torchscope.__file__).resolve().parent.parent)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    workspace = _workspace_env(env.pop(RUNNER_ENV, None))
    parts = [p for p in workspace.pop("PYTHONPATH", "").split(os.pathsep) if p] + parts
    env.update(workspace)
    libs = _bundled_libs(parts)
    if libs is not None:
        parts = [p for p in parts if p != libs]
        env[RUNNER_LIBS] = libs
    if here not in parts:
        parts.insert(0, here)
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONIOENCODING"] = "utf-8"
    env["TORCHSCOPE_SERVER_PID"] = str(os.getpid())
    return env


def runner_import_folders() -> list[str]:
    """Where the runner finds the user's modules besides the script's folder: its PYTHONPATH
    (the workspace's `.env` first, its relative entries made absolute by the extension)
    without torchscope's own folder, then the folders of editable installs of the
    interpreter's site-packages (the runner runs on the server's interpreter). For the static
    search of model classes (find_targets); nothing is imported or run."""
    here = str(Path(torchscope.__file__).resolve().parent.parent)
    entries = [p for p in runner_env()["PYTHONPATH"].split(os.pathsep) if p and p != here]
    from .find_targets import editable_folders  # (not before the runner's early start)

    entries.extend(str(f) for f in editable_folders(site_folders()))
    # (torchscope's own folder is no user's: an editable install of torchscope lists it too)
    return [e for e in dict.fromkeys(entries) if e != here]


def site_folders() -> list[Path]:
    """The interpreter's site-packages folders (the user's too, when Python reads it): where
    the libraries the user's code imports are installed (the runner runs on this
    interpreter)."""
    try:
        sites = list(site.getsitepackages())
    except AttributeError:  # (an old virtualenv's site module)
        sites = []
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if isinstance(user, str):
        sites.append(user)
    return [Path(s) for s in sites]


# The workspace's environment file (`.env`), as the extension read it: a JSON object of
# variables for the runner, which imports the user's code, and not for the server itself
# (a PYTHONHOME or PYTHONPATH meant for the project must not stop the language server).
RUNNER_ENV = "TORCHSCOPE_RUNNER_ENV"


def _workspace_env(text: Optional[str]) -> dict[str, str]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str)}


def _bundled_libs(pythonpath: list[str]) -> Optional[str]:
    """The PYTHONPATH entry the server's pygls comes from (the extension's bundled libraries),
    found without importing it (this runs before pygls is imported); None when pygls comes
    from the environment itself (a development install)."""
    spec = importlib.util.find_spec("pygls")
    origin = spec.origin if spec is not None else None
    if not origin:
        return None
    folder = Path(origin).parent.parent.resolve()
    return next((p for p in pythonpath if Path(p).resolve() == folder), None)


# How long past its budget a runner is waited for once it has said it traces: it stops the
# forward itself (the tracer's check at torch calls, its timer for pure Python) and makes the
# partial graph, seconds for a big one; only a call stuck in C code keeps it past this. And
# once it writes the graph (no user code runs any more): as long as that takes, to this.
TRACE_GRACE = 10.0
WRITE_GRACE = 120.0


def _grace(stage: str, grace: float) -> float:
    """How long past the budget a runner in `stage` (its last progress message) is waited for."""
    if stage == WRITING:
        return max(grace, WRITE_GRACE)
    if stage.startswith(TRACING):
        return max(grace, TRACE_GRACE)
    return grace


async def _reply_in_time(
    future: asyncio.Future[dict[str, Any]], timeout: Optional[float], grace: Callable[[], float]
) -> dict[str, Any]:
    """`future`'s result, or asyncio.TimeoutError once `timeout` + `grace()` seconds have
    passed since the call; `grace()` is asked again when that moment comes (the runner's
    stage may have moved on meanwhile)."""
    if timeout is None:
        return await future
    loop = asyncio.get_running_loop()
    start = loop.time()
    while True:
        left = start + timeout + grace() - loop.time()
        if left <= 0:
            raise asyncio.TimeoutError
        try:
            return await asyncio.wait_for(asyncio.shield(future), left)
        except asyncio.TimeoutError:
            continue  # (asked again: a later stage may wait longer)


def _runner_command(python: str) -> list[str]:
    return [python, "-m", "torchscope.runner"]


NEW_SESSION = os.name == "posix"  # the runner in its own process group: killpg takes its children


# -- the runner started with the server ---------------------------------------------------------
# `python -m torchscope.server` starts its runner first thing, before pygls and the server's own
# modules are imported: torch's import (seconds) then overlaps the server's start instead of
# following it, and a click in a window just opened waits for one, not both. The first
# `RunnerClient.start` adopts it.

_early: Optional[tuple[subprocess.Popen[bytes], str, str]] = None  # (process, python, cwd)


def start_early(python: str = sys.executable) -> None:
    """Start the runner now (synchronously, standard library only); `RunnerClient` adopts it."""
    global _early
    try:
        proc = subprocess.Popen(
            _runner_command(python),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=runner_env(),
            start_new_session=NEW_SESSION,
        )
    except OSError:
        return  # the ordinary start will say what is wrong
    _early = (proc, python, os.getcwd())


def _take_early(python: str, cwd: Optional[str]) -> Optional[subprocess.Popen[bytes]]:
    """The runner started with the server, if it is still running and is what `python` in
    `cwd` would start; else None (a mismatched one is stopped)."""
    global _early
    early, _early = _early, None
    if early is None:
        return None
    proc, early_python, early_cwd = early
    same_cwd = cwd is None or os.path.realpath(cwd) == os.path.realpath(early_cwd)
    if proc.poll() is None and early_python == python and same_cwd:
        return proc
    _kill_popen(proc)
    return None


def stop_early() -> None:
    """Stop a runner started with the server that nothing adopted (the server is exiting)."""
    global _early
    early, _early = _early, None
    if early is not None:
        _kill_popen(early[0])


def _kill_group(proc: Any) -> None:
    """SIGKILL the runner with its process group (anything the user's code started); the
    process alone where there are no groups or the group is gone."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
            return
    except (ProcessLookupError, PermissionError):
        pass
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


def _kill_popen(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(OSError):
        _kill_group(proc)
    with contextlib.suppress(Exception):
        proc.wait(5)


class _AdoptedProcess:
    """A runner started before the event loop ran (a `subprocess.Popen`), with asyncio
    streams on its pipes: what `_Process` uses of an `asyncio.subprocess.Process`."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        pipes: list[asyncio.BaseTransport],
    ) -> None:
        self.popen = popen
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.pipes = pipes  # the transports on its pipes: closed after a kill

    @classmethod
    async def adopt(cls, popen: subprocess.Popen[bytes], limit: int) -> _AdoptedProcess:
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        loop = asyncio.get_running_loop()
        pipes: list[asyncio.BaseTransport] = []

        async def reader(pipe: Any, limit: int) -> asyncio.StreamReader:
            stream = asyncio.StreamReader(limit=limit)
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(stream), pipe
            )
            pipes.append(transport)
            return stream

        stdout = await reader(popen.stdout, limit)
        stderr = await reader(popen.stderr, 2**16)
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin,  # pyright: ignore[reportAttributeAccessIssue]
            popen.stdin,
        )
        pipes.append(transport)
        stdin = asyncio.StreamWriter(transport, protocol, None, loop)  # pyright: ignore[reportArgumentType]
        return cls(popen, stdin, stdout, stderr, pipes)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> Optional[int]:
        return self.popen.poll()

    async def wait(self) -> int:
        return await asyncio.get_running_loop().run_in_executor(None, self.popen.wait)

    def kill(self) -> None:
        self.popen.kill()

    def close_pipes(self) -> None:
        for pipe in self.pipes:
            pipe.close()


class LineSplitter:
    """Bytes in, text lines out, each cut to `limit` characters; a line's rest past the limit
    is dropped as it comes, so no line is held whole."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.partial = b""
        self.cut = False  # the current line was cut: drop bytes until its end

    def feed(self, chunk: bytes) -> list[str]:
        *whole, rest = chunk.split(b"\n")
        out: list[str] = []
        for raw in whole:
            if not self.cut:
                out.append(self._text(self.partial + raw))
            self.partial, self.cut = b"", False
        if not self.cut:
            self.partial += rest
            if len(self.partial) > self.limit * 4:  # (utf-8: at most 4 bytes a character)
                out.append(self._text(self.partial))
                self.partial, self.cut = b"", True
        return out

    def end(self) -> list[str]:
        """The last line, if the stream ended without a newline."""
        rest, self.partial = self.partial, b""
        return [self._text(rest)] if rest and not self.cut else []

    def _text(self, raw: bytes) -> str:
        line = raw.decode("utf-8", errors="replace")
        return line if len(line) <= self.limit else line[: self.limit] + " …(cut)"


_QUIET = 0.2  # seconds without output after which a dead runner's stderr is taken as read


class _Process:
    """One runner process and the tasks reading its pipes."""

    def __init__(self, proc: asyncio.subprocess.Process | _AdoptedProcess, log: Log) -> None:
        self.proc = proc
        self.log = log
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.progress: dict[int, Progress] = {}
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.stderr_read_at = 0.0  # the loop's time of the last chunk read from stderr
        self.stderr_task = asyncio.ensure_future(self._read_stderr())
        self.stdout_task = asyncio.ensure_future(self._read_stdout())
        self.torch: Optional[str] = None
        # why the server stops this runner on purpose (shutdown): what a request it still owes
        # is told, rather than "killed by SIGKILL (most likely out of memory)"
        self.stopped_why: Optional[str] = None
        self.imported: set[str] = set()  # files this runner traced (imported) once already
        self.preloaded: set[str] = set()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None and not self.stdout_task.done()

    async def _read_stderr(self) -> None:
        """What the runner and the user's code print (its stdout comes here too), read in
        chunks rather than lines: a line longer than a reader's buffer (a tensor printed whole)
        must not stop the reading, or the runner blocks on a full pipe."""
        assert self.proc.stderr is not None
        lines = LineSplitter(STDERR_LINE_CHARS)
        while True:
            chunk = await self.proc.stderr.read(2**16)
            self.stderr_read_at = asyncio.get_running_loop().time()
            for line in lines.feed(chunk) if chunk else lines.end():
                self.stderr_tail.append(line)
                self.log("debug", f"runner: {line}")
            if not chunk:
                return

    async def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        try:
            while True:
                try:
                    raw = await self.proc.stdout.readline()
                except ValueError:  # a line over the limit: not ours
                    continue
                if not raw:
                    break
                try:
                    msg = json.loads(raw)
                except ValueError:
                    self.log("warning", f"runner wrote a line that is not JSON: {raw[:200]!r}")
                    continue
                rid = msg.get("id")
                if "progress" in msg:
                    callback = self.progress.get(rid)
                    if callback is not None:
                        callback(str(msg["progress"]))
                    continue
                future = self.pending.pop(rid, None)
                if future is not None and not future.done():
                    future.set_result(msg)
        finally:
            await self._fail_pending()

    async def _fail_pending(self) -> None:
        """The runner closed its stdout: it died. Fail what it still owed, with its stderr."""
        if not self.pending:
            return
        await self._exited(5)
        await self._stderr_read(2)
        code = self.proc.returncode
        tail = "\n".join(self.stderr_tail)
        if self.stopped_why is not None:
            failure = Failure("runner-stopped", f"stopped before it ended: {self.stopped_why}")
        else:
            failure = Failure("runner-crashed", f"the Python runner {describe_exit(code)}", tail)
        for future in self.pending.values():
            if not future.done():
                future.set_exception(failure)
        self.pending.clear()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode("utf-8"))

    async def kill(self) -> None:
        if self.proc.returncode is None:
            _kill_group(self.proc)
        await self._exited(5)
        await self._stderr_read(2)
        for task in (self.stdout_task, self.stderr_task):
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(task, 0.5)
        # a process the user's code started outside the runner's group may still hold the
        # pipes: let them go (asyncio closes its transport's pipes and readers with it)
        if isinstance(self.proc, _AdoptedProcess):
            self.proc.close_pipes()
        else:
            transport = getattr(self.proc, "_transport", None)
            if transport is not None:
                transport.close()

    async def _exited(self, limit: float) -> None:
        """Until the runner has exited, `limit` seconds at most. Its exit, not the end of
        its pipes, which asyncio's `Process.wait` waits for too (Python 3.11): a process the
        user's code started in a session of its own, which the kill does not reach, may hold
        them open for as long as it runs."""
        loop = asyncio.get_running_loop()
        end = loop.time() + limit
        while self.proc.returncode is None and loop.time() < end:
            await asyncio.sleep(0.02)

    async def _stderr_read(self, limit: float) -> None:
        """Until what the runner wrote to stderr before it ended is read (its last words: a
        traceback, a fatal error), `limit` seconds at most: the end of the pipe, or a pipe
        quiet for a moment (a process of the user's may hold it open)."""
        loop = asyncio.get_running_loop()
        begun = loop.time()
        while not self.stderr_task.done():
            now = loop.time()
            if now - begun >= limit or now - max(self.stderr_read_at, begun) >= _QUIET:
                return
            await asyncio.sleep(0.02)


def _fresh_may_help(process: _Process, message: dict[str, Any], reply: dict[str, Any]) -> bool:
    """A trace whose import failed in a runner that had imported that file before."""
    return (
        not reply.get("ok")
        and reply.get("kind") == "import-error"
        and message.get("op") == "trace"
        and str(message.get("file")) in process.imported
    )


def describe_exit(code: Optional[int]) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if code == -signal.SIGKILL:  # nobody but the system's out-of-memory killer, mostly
            return f"was killed by {name} (most likely out of memory)"
        return f"was killed by {name}"
    return f"exited with code {code}"


class RunnerClient:
    """Keeps one runner warm and sends it one request at a time."""

    def __init__(
        self, python: str = sys.executable, log: Optional[Log] = None, cwd: Optional[str] = None
    ) -> None:
        self.python = python
        self.log: Log = log or (lambda level, message: None)
        self.cwd = cwd
        self._process: Optional[_Process] = None
        self._starting: Optional[asyncio.Future[_Process]] = None
        self._lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._preloading: set[str] = set()
        self._no_torch = False  # no preloading in a Python without torch (until shutdown)

    @property
    def pid(self) -> Optional[int]:
        p = self._process
        return p.pid if p is not None and p.alive else None

    @property
    def warm(self) -> bool:
        return self._process is not None and self._process.alive and self._process.torch is not None

    def prestart(self) -> None:
        """Start a runner in the background (torch is imported before the first trace), unless
        one is warm or starting, or this Python has no torch."""
        if (
            self._no_torch
            or self.warm
            or (self._starting is not None and not self._starting.done())
        ):
            return
        task = asyncio.ensure_future(self.start())

        def started(t: asyncio.Future[_Process]) -> None:
            exc = None if t.cancelled() else t.exception()  # other errors show up at a trace
            if isinstance(exc, Failure) and exc.kind == "no-torch":
                self._no_torch = True

        task.add_done_callback(started)

    async def start(self) -> _Process:
        """The running runner, starting one (and waiting for its `ping`) if needed."""
        if self._process is not None and self._process.alive:
            return self._process
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(self._spawn())
        return await asyncio.shield(self._starting)

    async def _spawn(self) -> _Process:
        early = _take_early(self.python, self.cwd)
        proc: asyncio.subprocess.Process | _AdoptedProcess
        if early is not None:
            proc = await _AdoptedProcess.adopt(early, STDOUT_LIMIT)
            how = ", started with the server"
        else:
            proc = await asyncio.create_subprocess_exec(
                *_runner_command(self.python),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=runner_env(),
                cwd=self.cwd,
                limit=STDOUT_LIMIT,
                start_new_session=NEW_SESSION,
            )
            how = ""
        process = _Process(proc, self.log)
        self.log("info", f"runner started: {self.python} (pid {proc.pid}{how})")
        rid = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        process.pending[rid] = future
        process.send({"id": rid, "op": "ping"})
        try:
            reply = await asyncio.wait_for(future, START_TIMEOUT)
        except BaseException:
            await process.kill()
            raise
        if not reply.get("ok"):
            await process.kill()
            raise Failure.from_runner_reply(reply)
        process.torch = reply.get("torch")
        self.log("info", f"runner ready: torch {process.torch} (pid {proc.pid})")
        self._process = process
        return process

    async def request(
        self,
        message: dict[str, Any],
        timeout: Optional[float] = None,
        progress: Optional[Progress] = None,
        grace: float = 0.0,
    ) -> dict[str, Any]:
        """Send one request; the reply's `result`, or Failure. Past `timeout` (+ `grace`,
        for the runner to stop by itself) seconds the runner is killed (Failure "timeout");
        a cancelled request kills it too. Starting the runner does not count. Once the runner
        says it traces, it stops the forward itself at the budget, and makes the partial
        graph: it is killed only TRACE_GRACE past it (stuck in C code); once it writes the
        graph (the user's code done), WRITE_GRACE past it."""
        async with self._lock:
            if progress is not None and not self.warm:
                progress("Starting Python")
            process = await self.start()
            reply = await self._exchange(process, message, timeout, progress, grace)
            if _fresh_may_help(process, message, reply):
                # a registry that takes one registration per process (detectron2's, mmengine's)
                # or the like: the file imported fine here before, and would in a fresh python
                self.log(
                    "info",
                    f"importing {message['file']} again failed in the warm runner "
                    f"({reply.get('message')}): once more in a fresh runner",
                )
                await self._kill(process)
                if progress is not None:
                    progress("Starting Python")
                process = await self.start()
                reply = await self._exchange(process, message, timeout, progress, grace)
            if reply.get("ok"):
                if message.get("op") == "trace":
                    process.imported.add(str(message.get("file")))
                return reply.get("result", reply)
            raise Failure.from_runner_reply(reply)

    async def _exchange(
        self,
        process: _Process,
        message: dict[str, Any],
        timeout: Optional[float],
        progress: Optional[Progress],
        grace: float,
    ) -> dict[str, Any]:
        """One request to `process` and its reply, ok or not (timeout, cancel: killed)."""
        rid = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        process.pending[rid] = future
        stage = [""]  # the runner's last progress message: where a timeout stopped it

        def seen(text: str) -> None:
            stage[0] = text
            if progress is not None:
                progress(text)

        process.progress[rid] = seen
        try:
            process.send({**message, "id": rid})
            reply = await _reply_in_time(future, timeout, lambda: _grace(stage[0], grace))
        except asyncio.TimeoutError:
            self.log("warning", f"request {rid} ran past {timeout:g} s: killing the runner")
            _abandon(process, rid)
            await self._kill(process)
            if stage[0] == IMPORTING:  # a big model builds in no time on the meta device
                what = f"importing and building {message.get('target', 'the model')}"
                raise Failure(
                    "timeout", f"{what} ran past {timeout:g} s and was stopped", stage="build"
                ) from None
            raise Failure(
                "timeout", f"the trace ran past {timeout:g} s and was stopped", stage="trace"
            ) from None
        except asyncio.CancelledError:
            self.log("info", f"request {rid} cancelled: killing the runner (pid {process.pid})")
            _abandon(process, rid)
            await self._kill(process)
            raise
        except (ConnectionError, BrokenPipeError) as exc:
            await self._kill(process)
            raise Failure(
                "runner-crashed",
                f"the Python runner is gone ({exc})",
                "\n".join(process.stderr_tail),
            ) from exc
        finally:
            process.pending.pop(rid, None)
            process.progress.pop(rid, None)
        return reply

    def preload_soon(self, modules: set[str]) -> None:
        """Have the runner import these libraries in the background (once per runner)."""
        if self._no_torch:
            return
        process = self._process
        done = process.preloaded if process is not None else set[str]()
        wanted = sorted(set(modules) - done - self._preloading)
        if not wanted:
            return
        self._preloading.update(wanted)

        async def run() -> None:
            try:
                result = await self.request(
                    {"op": "preload", "modules": wanted}, timeout=START_TIMEOUT
                )
                if self._process is not None:
                    self._process.preloaded.update(wanted)  # tried: loaded or not installed
                self.log(
                    "debug", f"runner preloaded {', '.join(result.get('loaded', [])) or 'nothing'}"
                )
            except (Failure, OSError) as exc:
                self._no_torch = isinstance(exc, Failure) and exc.kind == "no-torch"
                self.log("debug", f"preloading {wanted} failed: {exc}")
            finally:
                self._preloading.difference_update(wanted)

        task = asyncio.ensure_future(run())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _kill(self, process: _Process) -> None:
        if self._process is process:
            self._process = None
        await process.kill()
        self.log("info", f"runner stopped (pid {process.pid})")

    async def shutdown(self, why: str = "the runner was shut down") -> None:
        """Kill the warm runner (a starting one too); the next request starts a new one. A
        request it still owes fails as `runner-stopped`, saying `why`."""
        self._no_torch = False
        starting = self._starting
        if starting is not None and not starting.done():
            starting.cancel()
            with contextlib.suppress(BaseException):
                await starting
        process = self._process
        if process is not None:
            process.stopped_why = why
            await self._kill(process)

    def kill_now(self) -> None:
        """Synchronous last resort at exit."""
        process = self._process
        if process is not None and process.proc.returncode is None:
            with contextlib.suppress(Exception):
                _kill_group(process.proc)


def _abandon(process: _Process, rid: int) -> None:
    """A request the server gives up on before killing the runner (cancelled, past its time):
    its reply is no longer awaited, so the runner's death must not fail it ("killed by
    SIGKILL", which asyncio then logs as an error nobody read)."""
    future = process.pending.pop(rid, None)
    if future is not None:
        future.cancel()
