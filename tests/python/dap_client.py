"""A minimal Debug Adapter Protocol client for the tests: the real debugpy adapter
(`python -m debugpy.adapter`) over its stdio, Content-Length framing.

`DapSession.launch(program, breakpoints)` runs initialize → launch → setBreakpoints →
configurationDone; then `wait_stopped`, `evaluate`, `cont`, `wait_end`. `close()` ends
the adapter and the debuggee it started (by their process ids).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

DEBUG_PY = str(Path(__file__).resolve().parents[2] / "python_helper" / "torchscope" / "debug.py")


class DapError(Exception):
    pass


def marker_lines(path: str | Path, marker: str) -> list[int]:
    """1-based lines of `path` carrying the comment `# BREAK: <marker>`."""
    lines = Path(path).read_text().splitlines()
    found = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# BREAK: {marker}")]
    if not found:
        raise ValueError(f"no '# BREAK: {marker}' in {path}")
    return found


class DapSession:
    def __init__(self, python: str = sys.executable, log_dir: Optional[str] = None) -> None:
        self.python = python
        stderr = (
            open(os.path.join(log_dir, "adapter.stderr"), "wb") if log_dir else subprocess.DEVNULL
        )
        self.proc = subprocess.Popen(
            [python, "-m", "debugpy.adapter"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # its own process group: teardown can end all of it
        )
        self._seq = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self.responses: dict[int, dict[str, Any]] = {}
        self.events: list[tuple[float, dict[str, Any]]] = []  # (arrival time, event)
        self.requests_in: list[dict[str, Any]] = []  # reverse requests (runInTerminal …)
        self.closed = False
        self.debuggee_pid: Optional[int] = None
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- wire -------------------------------------------------------------------------------
    def _read_loop(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        raise EOFError
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.decode("ascii").partition(":")
                    if name.lower() == "content-length":
                        length = int(value.strip())
                if length is None:
                    continue
                body = out.read(length)
                if len(body) < length:
                    raise EOFError
                msg = json.loads(body)
                with self._cond:
                    if msg.get("type") == "response":
                        self.responses[msg["request_seq"]] = msg
                    elif msg.get("type") == "event":
                        if msg["event"] == "process":
                            self.debuggee_pid = msg.get("body", {}).get("systemProcessId")
                        self.events.append((time.monotonic(), msg))
                    elif msg.get("type") == "request":
                        self.requests_in.append(msg)
                    self._cond.notify_all()
        except (EOFError, ValueError, OSError):
            pass
        finally:
            with self._cond:
                self.closed = True
                self._cond.notify_all()

    def send(self, command: str, arguments: Optional[dict[str, Any]] = None) -> int:
        with self._lock:
            self._seq += 1
            seq = self._seq
            msg = {"seq": seq, "type": "request", "command": command}
            if arguments is not None:
                msg["arguments"] = arguments
            data = json.dumps(msg).encode("utf-8")
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
            self.proc.stdin.flush()
        return seq

    def response(self, seq: int, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while seq not in self.responses:
                left = deadline - time.monotonic()
                if self.closed:
                    raise DapError(f"adapter closed before answering request {seq}")
                if left <= 0:
                    raise DapError(f"no response to request {seq} in {timeout} s")
                self._cond.wait(left)
            msg = self.responses.pop(seq)
        if not msg.get("success"):
            raise DapError(f"{msg.get('command')} failed: {msg.get('message')} {msg.get('body')}")
        return msg.get("body") or {}

    def request(
        self, command: str, arguments: Optional[dict[str, Any]] = None, timeout: float = 30
    ) -> dict[str, Any]:
        return self.response(self.send(command, arguments), timeout)

    def wait_event(
        self,
        name: str,
        since: int = 0,
        timeout: float = 30,
        where: Optional[Callable[[dict[str, Any]], bool]] = None,
    ) -> tuple[int, dict[str, Any]]:
        """The first event `name` at index ≥ since in self.events: (index, event)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for i in range(since, len(self.events)):
                    ev = self.events[i][1]
                    if ev["event"] == name and (where is None or where(ev)):
                        return i, ev
                left = deadline - time.monotonic()
                if self.closed:
                    raise DapError(f"adapter closed while waiting for {name}")
                if left <= 0:
                    raise DapError(f"no {name} event in {timeout} s; events: {self.event_names()}")
                self._cond.wait(left)

    def event_names(self, since: int = 0) -> list[str]:
        with self._cond:
            return [e["event"] for _, e in self.events[since:]]

    # -- a debug session ----------------------------------------------------------------------
    def launch(
        self,
        program: str,
        breakpoints: dict[str, list[dict[str, Any]]],
        cwd: Optional[str] = None,
        env: Optional[dict[str, str]] = None,
    ) -> None:
        self.request(
            "initialize",
            {
                "clientID": "torchscope-tests",
                "adapterID": "debugpy",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "pathFormat": "path",
                "supportsVariableType": True,
                "supportsRunInTerminalRequest": False,
            },
        )
        args: dict[str, Any] = {
            "name": "torchscope test",
            "type": "debugpy",
            "request": "launch",
            "program": program,
            "python": [self.python],
            "console": "internalConsole",
            "justMyCode": True,
            "cwd": cwd or os.path.dirname(program),
        }
        if env:
            args["env"] = env
        launch_seq = self.send("launch", args)
        self.wait_event("initialized", timeout=60)
        for file, bps in breakpoints.items():
            body = self.request("setBreakpoints", {"source": {"path": file}, "breakpoints": bps})
            assert len(body.get("breakpoints", [])) == len(bps), body
        self.request("setExceptionBreakpoints", {"filters": []})
        self.request("configurationDone")
        self.response(launch_seq, timeout=60)

    def wait_stopped(
        self, since: int = 0, timeout: float = 60
    ) -> tuple[int, int, list[dict[str, Any]]]:
        """(event index, thread id, stack frames) of the next `stopped` event."""
        i, ev = self.wait_event("stopped", since, timeout)
        thread = ev["body"]["threadId"]
        frames = self.request("stackTrace", {"threadId": thread, "levels": 20})["stackFrames"]
        return i, thread, frames

    def evaluate(
        self, expression: str, frame_id: int, context: str = "clipboard", timeout: float = 60
    ) -> str:
        body = self.request(
            "evaluate",
            {
                "expression": expression,
                "frameId": frame_id,
                "context": context,
                "format": {"rawString": True},
            },
            timeout,
        )
        return body["result"]

    def cont(self, thread: int) -> int:
        """Continue; returns the event index to wait from."""
        with self._cond:
            since = len(self.events)
        self.request("continue", {"threadId": thread})
        return since

    def wait_end(self, since: int = 0, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        for name in ("exited", "terminated"):
            try:
                self.wait_event(name, since, max(0.1, deadline - time.monotonic()))
                return
            except DapError:
                continue
        raise DapError(f"the debuggee did not end; events: {self.event_names(since)}")

    def output(self, category: str = "stdout") -> str:
        with self._cond:
            return "".join(
                e["body"].get("output", "")
                for _, e in self.events
                if e["event"] == "output" and e["body"].get("category") == category
            )

    def close(self) -> None:
        """Disconnect (terminating the debuggee), then make sure both processes are gone."""
        if self.proc.poll() is None and not self.closed:
            try:
                self.response(self.send("disconnect", {"terminateDebuggee": True}), timeout=5)
            except Exception:
                pass
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()  # the adapter ends when its client goes away
        except Exception:
            pass
        pid = self.debuggee_pid
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the adapter and the launcher it started
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdout,):
            try:
                if stream is not None:
                    stream.close()
            except Exception:
                pass


def request_expression(request: dict[str, Any], debug_py: str = DEBUG_PY) -> str:
    """The evaluate expression for one request, as docs/debugging.md gives it to the extension."""
    loader = (
        "(lambda p, s=__import__('sys'), u=__import__('importlib.util').util: "
        "s.modules['_torchscope_debug'] "
        "if getattr(s.modules.get('_torchscope_debug'), '__file__', None) == p "
        "else (lambda sp: (lambda m: (s.modules.__setitem__('_torchscope_debug', m), "
        "sp.loader.exec_module(m), m)[2])(u.module_from_spec(sp)))"
        "(u.spec_from_file_location('_torchscope_debug', p)))"
    )
    return f"{loader}({json.dumps(debug_py)}).handle({json.dumps(json.dumps(request))})"


class _SocketStreams:
    """The parts of a Popen the session reads and writes through, over a TCP connection."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.stdout = sock.makefile("rb")
        self.stdin = sock.makefile("wb")


class AttachedSession(DapSession):
    """A session with a debuggee that called `debugpy.listen(port)` (as each rank of a torchrun
    program can): DAP straight over TCP to the adapter that `listen` started. `close`
    disconnects without ending the debuggee; the test ends the program itself."""

    def __init__(self, host: str, port: int, timeout: float = 60) -> None:
        import socket

        deadline = time.monotonic() + timeout
        while True:
            try:
                sock = socket.create_connection((host, port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        sock.settimeout(None)
        self.proc = _SocketStreams(sock)  # type: ignore[assignment]
        self._seq = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self.responses = {}
        self.events = []
        self.requests_in = []
        self.closed = False
        self.debuggee_pid = None
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def attach(self, breakpoints: dict[str, list[dict[str, Any]]]) -> None:
        """initialize → attach → setBreakpoints → configurationDone, as VS Code attaches."""
        self.request(
            "initialize",
            {
                "clientID": "torchscope-tests",
                "adapterID": "debugpy",
                "linesStartAt1": True,
                "columnsStartAt1": True,
                "pathFormat": "path",
            },
        )
        attach_seq = self.send(
            "attach", {"name": "torchscope test", "type": "debugpy", "justMyCode": True}
        )
        self.wait_event("initialized", timeout=60)
        for file, bps in breakpoints.items():
            body = self.request("setBreakpoints", {"source": {"path": file}, "breakpoints": bps})
            assert len(body.get("breakpoints", [])) == len(bps), body
        self.request("setExceptionBreakpoints", {"filters": []})
        self.request("configurationDone")
        self.response(attach_seq, timeout=60)

    def close(self) -> None:
        if not self.closed:
            try:
                self.response(self.send("disconnect", {"terminateDebuggee": False}), timeout=5)
            except Exception:
                pass
        streams: Any = self.proc
        for f in (streams.stdin, streams.stdout, streams.sock):
            try:
                f.close()
            except Exception:
                pass
