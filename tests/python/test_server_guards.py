"""The language server's guards (issue 15, item 8): no orphaned processes when the server is
killed, a clear error for a malformed position, and no trace of a file outside the workspace
that the editor doesn't have open. The real server and runner, through pygls's client."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from lsprotocol import types
from test_server_lsp import Session, alive, server_env, uri

SPAWNS = """
    import subprocess
    import sys
    import torch
    from torch import nn

    class Spawns(nn.Module):
        def forward(self, x):
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            with open(PIDFILE, "w") as f:
                f.write(str(child.pid))
            while True:  # the runner stays busy in user code
                pass
"""

NET = """
    import torch
    from torch import nn

    class Net(nn.Linear):
        def __init__(self):
            super().__init__(2, 2)
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "spawns.py").write_text(
        textwrap.dedent(SPAWNS).replace("PIDFILE", repr(str(tmp_path / "child.pid")))
    )
    (root / "net.py").write_text(textwrap.dedent(NET))
    return root


def test_a_killed_server_takes_the_users_child_processes_too(workspace, tmp_path):
    lsp = Session(sys.executable, server_env(), workspace, 60.0)
    try:
        params = {
            "uri": uri(workspace / "spawns.py"),
            "target": "Spawns",
            "input": "torch.zeros(2)",
        }
        lsp.client.protocol.send_request("torchscope/trace", params)
        pidfile = tmp_path / "child.pid"
        lsp.wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "", 120)
        child = int(pidfile.read_text())
        runner = lsp.runner_pid()
        assert runner is not None and alive(runner) and alive(child)
        os.kill(lsp.server_pid, signal.SIGKILL)
        lsp.killed = True
        deadline = time.monotonic() + 15
        while (alive(child) or alive(runner)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(runner), "the runner outlived the server"
        assert not alive(child), "the user's child process was orphaned"
    finally:
        lsp.close()


@pytest.fixture
def lsp(workspace):
    session = Session(sys.executable, server_env(), workspace, 60.0)
    yield session
    session.close()


@pytest.mark.parametrize(
    "position",
    [{"line": "x", "character": 0}, {"line": 1.5}, "nowhere", {"line": -1, "character": 0}],
)
def test_a_malformed_position_is_a_clear_error(lsp, workspace, position):
    e = lsp.error("torchscope/targetAt", {"uri": uri(workspace / "net.py"), "position": position})
    assert e.code == -32001 and e.data["kind"] == "bad-request"
    assert "position must be" in e.message and "Traceback" not in str(e.data)


def test_only_workspace_files_or_open_documents_are_traced(lsp, tmp_path):
    outside = tmp_path / "elsewhere" / "net.py"
    outside.parent.mkdir()
    outside.write_text(textwrap.dedent(NET))
    params = {"uri": uri(outside), "target": "Net", "input": "torch.ones(1, 2)"}
    e = lsp.error("torchscope/trace", params)
    assert e.data["kind"] == "target-error" and "outside the workspace" in e.message
    doc = types.TextDocumentItem(
        uri=uri(outside), language_id="python", version=1, text=outside.read_text()
    )
    lsp.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=doc))
    assert lsp.request("torchscope/trace", params)["summary"]["model"] == "Net"


@pytest.mark.parametrize(
    ("method", "field", "value"),
    [
        ("torchscope/targets", "text", 5),
        ("torchscope/targetAt", "text", ["x"]),
        ("torchscope/trace", "text", 5),
        ("torchscope/trace", "target", 5),
        ("torchscope/trace", "uri", 5),
        ("torchscope/trace", "input", 5),
        ("torchscope/trace", "ctorArgs", {"a": 1}),
        ("torchscope/trace", "device", 5),
        ("torchscope/lines", "path", 5),
        ("torchscope/compare", "a", 5),
    ],
)
def test_a_field_of_the_wrong_type_is_a_bad_request(lsp, workspace, method, field, value):
    """A string field given another type said "compile() arg 1 must be a string" (an
    internal error with torchscope's traceback), "ok.py has no name '5'", or traced an
    untitled document: the field and what it must be."""
    params: dict = {
        "uri": uri(workspace / "net.py"),
        "target": "Net",
        "input": "torch.ones(1, 2)",
        "position": {"line": 0, "character": 0},
        field: value,
    }
    e = lsp.error(method, params)
    assert e.code == -32001 and e.data["kind"] == "bad-request", (e.message, e.data)
    assert e.message == f"{field} must be a string, got {type(value).__name__}"


SHAPED = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 3)

        def forward(self, x):
            return self.fc(x).relu()
"""


def _open(lsp: Session, path: Path, text: str) -> None:
    doc = types.TextDocumentItem(uri=uri(path), language_id="python", version=1, text=text)
    lsp.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=doc))


def _hints(lsp: Session, path: Path) -> dict[int, str]:
    params = types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=99, character=0)
        ),
    )
    found = lsp.run(lsp.client.text_document_inlay_hint_async(params)) or []
    return {h.position.line: str(h.label) for h in found}


# the editor's uris percent-encode these (`%20`, `%C3%A8`, `%23`); pygls keys its open
# documents by the decoded uri: every lookup by uri must agree with it
@pytest.mark.parametrize(
    "where", ["elsewhere dir/model.py", "ailleurs/modèle.py", "c#/model.py", "a%20b/model.py"]
)
def test_an_open_file_outside_the_workspace_whose_uri_is_encoded(lsp, tmp_path, where):
    outside = tmp_path / "out" / where
    outside.parent.mkdir(parents=True)
    text = textwrap.dedent(SHAPED)
    outside.write_text(text)
    assert "%" in uri(outside)
    params = {"uri": uri(outside), "target": "Net", "input": "torch.ones(1, 2)"}
    e = lsp.error("torchscope/trace", params)  # (not open yet: refused)
    assert e.data["kind"] == "target-error" and "outside the workspace" in e.message
    # open with unsaved edits (the model renamed): traced from the editor's text, sent or not
    _open(lsp, outside, text.replace("class Net", "class Edited"))
    lenses = lsp.lenses(outside)
    assert [name for _, name in lenses] == ["Edited"]
    result = lsp.request("torchscope/trace", {**params, "target": "Edited"})
    assert result["summary"]["model"] == "Edited"
    sent = {**params, "target": "Edited", "text": text.replace("class Net", "class Edited")}
    assert lsp.request("torchscope/trace", sent)["summary"]["model"] == "Edited"
    line = text.splitlines().index("        return self.fc(x).relu()")
    deadline = time.monotonic() + 30  # (the graph is indexed off the event loop)
    while line not in _hints(lsp, outside) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _hints(lsp, outside) == {line: "1×3"}


def test_a_workspace_file_whose_uri_is_encoded(lsp, workspace):
    inside = workspace / "sub dir" / "réseau.py"
    inside.parent.mkdir()
    text = textwrap.dedent(SHAPED)
    inside.write_text(text)
    params = {"uri": uri(inside), "target": "Net", "input": "torch.ones(1, 2)"}
    assert lsp.request("torchscope/trace", params)["summary"]["model"] == "Net"  # (as saved)
    _open(lsp, inside, text.replace("class Net", "class Edited"))
    assert [name for _, name in lsp.lenses(inside)] == ["Edited"]
    result = lsp.request("torchscope/trace", {**params, "target": "Edited"})
    assert result["summary"]["model"] == "Edited"
