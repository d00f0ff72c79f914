"""The language server the .vsix ships starts in every Python the extension supports (3.10 and
newer): it runs in the user's own interpreter, on the pure-Python libraries bundled in the
.vsix, and those must be complete for each version (cattrs needs `exceptiongroup` before 3.11,
which pip, installing them from 3.11, leaves out). An interpreter older than 3.10 gets a message
saying so, not a traceback. Files at the workspace root named like the standard library
(`logging.py`) are not imported in its place. The server's static side (finding the model at the cursor) needs no
torch, so the interpreters here have none."""

from __future__ import annotations

import glob
import json
import os
import select
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any, Optional

import pytest

# the interpreters of this machine kind (pyenv); the tests' own Python is 3.11
PYTHONS = {
    version: sorted(glob.glob(f"/root/.pyenv/versions/{version}.*/bin/python{version}"))
    for version in ("3.9", "3.10", "3.12", "3.13")
}

MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""


@pytest.fixture(scope="module")
def bundled(vsix: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vsix")
    with zipfile.ZipFile(vsix) as z:
        for name in z.namelist():
            if name.startswith("extension/bundled/"):
                z.extract(name, root)
    return root / "extension" / "bundled"


def python(version: str) -> str:
    found = PYTHONS[version]
    assert found, f"no Python {version} on this machine (expected under /root/.pyenv/versions)"
    return found[-1]


class Server:
    """`python -m torchscope.server` as the extension starts it, spoken to over stdio."""

    def __init__(self, python: str, bundled: Path, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PYTHONPATH"] = os.pathsep.join([str(bundled / "libs"), str(bundled / "tool")])
        self.proc = subprocess.Popen(
            [python, "-m", "torchscope.server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.buffer = b""
        self.ids = 0

    def send(self, method: str, params: Any, notify: bool = False) -> Optional[int]:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self.ids += 1
            msg["id"] = self.ids
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return None if notify else self.ids

    def request(self, method: str, params: Any, wait: float = 60) -> Any:
        rid = self.send(method, params)
        deadline = time.monotonic() + wait
        while True:
            msg = self._message(deadline)
            if msg.get("id") == rid and "method" not in msg:
                assert "error" not in msg, msg["error"]
                return msg["result"]

    def _message(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                length = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    return json.loads(rest[:length])
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise TimeoutError(f"no answer from the server; stderr: {self.close()}")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(f"the server exited; stderr: {self.close()}")
            self.buffer += chunk

    def close(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_the_bundled_server_starts_and_finds_a_model(
    version: str, bundled: Path, tmp_path: Path
) -> None:
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    for name in ("typing", "logging", "json"):  # (the server starts in this folder)
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the workspace {name}.py')\n")
    server = Server(python(version), bundled, tmp_path)
    try:
        server.request(
            "initialize",
            {
                "processId": None,
                "rootUri": tmp_path.as_uri(),
                "capabilities": {},
                "initializationOptions": {"storageDir": str(tmp_path / ".storage")},
            },
        )
        server.send("initialized", {}, notify=True)
        found = server.request(
            "torchscope/targetAt",
            {"uri": model.as_uri(), "position": {"line": 10, "character": 8}},
        )
        assert found == {"target": "Net", "kind": "class", "line": 4}
        server.request("shutdown", None)
        server.send("exit", None, notify=True)
        server.proc.wait(20)
    finally:
        server.close()


def test_a_python_too_old_is_told_so(bundled: Path, tmp_path: Path) -> None:
    old = python("3.9")
    server = Server(old, bundled, tmp_path)
    code = server.proc.wait(30)
    err = server.close()
    assert code != 0
    assert "torchscope needs Python 3.10 or newer" in err and old in err, err
    assert "Traceback" not in err, err
