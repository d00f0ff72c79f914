"""The language server over stdio, through pygls's own LanguageClient, against the real server
process (`python -m torchscope.server`) and its real runner."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Optional

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from torchscope.graph import Graph, unpack

HELPER = Path(__file__).resolve().parents[2] / "python_helper"
TIMEOUT = 2.0  # traceTimeoutSeconds of the shared server: a warm trace of a tiny model is far below
SYSTEM_PYTHON = "/root/.pyenv/versions/3.11.7/bin/python3"


def plain(value: Any) -> Any:
    """pygls's client turns custom results into namedtuples: back to dicts."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class Session:
    """One server process and a client, driven from a private event loop."""

    def __init__(
        self,
        python: str,
        env: dict[str, str],
        workspace: Path,
        timeout: float,
        options: Optional[dict[str, Any]] = None,
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = LanguageClient("torchscope-tests", "1")
        self.logs: list[str] = []
        self.log_types: list[tuple[int, str]] = []  # (its MessageType, the message)
        self.ready_pid: Optional[int] = None  # the last runner the server said is ready
        self.progress: list[tuple[Any, dict[str, Any]]] = []
        self.stderr: list[str] = []
        self.workspace = workspace
        self.killed = False
        self.refreshes = 0  # workspace/inlayHint/refresh requests from the server

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(ls: Any, params: types.LogMessageParams) -> None:
            self.logs.append(params.message)
            self.log_types.append((int(params.type), params.message))
            ready = re.search(r"runner ready: .*\(pid (\d+)\)", params.message)
            if ready:  # (kept apart from the logs a test clears)
                self.ready_pid = int(ready.group(1))

        @self.client.feature(types.PROGRESS)
        def on_progress(ls: Any, params: types.ProgressParams) -> None:
            self.progress.append((params.token, plain(params.value)))

        @self.client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
        def on_refresh(ls: Any, params: Any) -> None:
            self.refreshes += 1

        self.run(self._start(python, env, timeout, options or {}))

    def run(self, coro: Any, timeout: float = 60) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    async def _start(
        self, python: str, env: dict[str, str], timeout: float, options: dict[str, Any]
    ) -> None:
        await self.client.start_io(
            python, "-m", "torchscope.server", env=env, cwd=str(self.workspace)
        )
        server = self.client._server
        assert server is not None and server.stderr is not None
        self.server_pid = server.pid
        stderr = server.stderr

        async def drain() -> None:  # the pipe must not fill up
            while line := await stderr.readline():
                self.stderr.append(line.decode(errors="replace"))

        self._drain = asyncio.ensure_future(drain())
        caps = types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
            workspace=types.WorkspaceClientCapabilities(
                inlay_hint=types.InlayHintWorkspaceClientCapabilities(refresh_support=True)
            ),
        )
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=caps,
                root_uri=from_fs_path(str(self.workspace)),
                initialization_options={
                    "storageDir": str(self.workspace / ".storage"),
                    "traceTimeoutSeconds": timeout,
                    "logLevel": "debug",
                    **options,
                },
            )
        )
        self.client.initialized(types.InitializedParams())

    def request(self, method: str, params: dict[str, Any], timeout: float = 60) -> Any:
        async def send() -> Any:
            return await self.client.protocol.send_request_async(method, params)

        return plain(self.run(send(), timeout))

    def error(self, method: str, params: dict[str, Any], timeout: float = 60) -> JsonRpcException:
        with pytest.raises(JsonRpcException) as info:
            self.request(method, params, timeout)
        return info.value

    def lenses(self, path: Path) -> list[tuple[int, str]]:
        params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
        found = self.run(self.client.text_document_code_lens_async(params)) or []
        out = []
        for lens in found:
            assert lens.command.command == "torchscope.visualize"
            assert lens.command.title == "Visualize forward pass"
            (arg,) = lens.command.arguments
            assert arg == {"uri": uri(path), "target": arg["target"]}
            out.append((lens.range.start.line, arg["target"]))
        return out

    def runner_pid(self) -> Optional[int]:
        return self.ready_pid

    def wait_for(self, predicate: Any, timeout: float = 60) -> None:
        async def poll() -> None:
            while not predicate():
                await asyncio.sleep(0.02)

        self.run(poll(), timeout)

    def close(self) -> None:
        if self.killed:
            self.loop.close()
            return

        async def stop() -> None:
            await self.client.shutdown_async(None)
            self.client.exit(None)
            await self.client.stop()

        try:
            self.run(stop(), 15)
        finally:
            self.loop.close()


def uri(path: Path) -> str:
    result = from_fs_path(str(path))
    assert result is not None
    return result


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def server_env(*paths: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*paths, str(HELPER)])
    return env


def line_of(path: Path, needle: str) -> int:
    """0-based line of the first line containing `needle`."""
    return next(i for i, line in enumerate(path.read_text().splitlines()) if needle in line)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return True


MODELS = """
    import os
    import torch
    from torch import nn
    from blocks import Block

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            print("printed at import")  # must not break the LSP stream
            os.write(1, b"raw bytes on fd 1\\n")
            self.fc = nn.Linear(64, 8)

        def forward(self, x):
            return self.fc(x).relu()

    class Stack(Block):
        pass

    def make_model():
        return Net()

    model = Net()

    if __name__ == "__main__":
        out = model(torch.randn(2, 64))
"""

HF = """
    from transformers import PreTrainedModel, PretrainedConfig, GPT2LMHeadModel

    class Tiny(PreTrainedModel):
        pass

    class Head(GPT2LMHeadModel):
        pass

    class Config(PretrainedConfig):
        pass
"""

BLOCKS = """
    import torch.nn as tnn

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.lin = tnn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x)
"""

BROKEN = """
    import torch
    from torch import nn

    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(16, 32)
            self.b = nn.Linear(64, 4)

        def forward(self, x):
            h = self.a(x)
            return self.b(h)

    Broken()(torch.randn(2, 16))  # raises at import? no: only under __main__ below
""".replace(
    "    Broken()(torch.randn(2, 16))  # raises at import? no: only under __main__ below\n",
    "    if __name__ == '__main__':\n        Broken()(torch.randn(2, 16))\n",
)

CTOR = """
    import torch
    from torch import nn

    class Wide(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.fc = nn.Linear(width, 2)

        def forward(self, x):
            return self.fc(x)

    class Doubler(nn.Module):
        def forward(self, x):
            return x * 2
"""

HANGS = """
    import torch
    from torch import nn

    class Spin(nn.Module):
        def forward(self, x):
            while True:
                pass

    class SpinOps(nn.Module):
        def forward(self, x):
            while True:
                x = x + 1

    class SlowToBuild(nn.Module):  # (as a model of billions of parameters on one core)
        def __init__(self):
            super().__init__()
            while True:
                pass
"""

NOISY = """
    import sys
    from torch import nn

    class Noisy(nn.Module):
        def forward(self, x):
            print("x" * 200_000)  # one line longer than a pipe holds
            for i in range(3000):
                print("step", i, file=sys.stderr)
            return x * 2
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("workspace")
    write(root, "models.py", MODELS)
    write(root, "blocks.py", BLOCKS)
    write(root, "hf.py", HF)
    write(root, "ctor.py", CTOR)
    write(root, "broken.py", BROKEN)
    write(root, "hangs.py", HANGS)
    write(root, "exits.py", "import sys\nprint('about to exit')\nsys.exit(3)\n")
    write(root, "dies.py", "import os, sys\nprint('dying now', file=sys.stderr)\nos._exit(3)\n")
    write(root, "loops.py", "while True:\n    pass\n")
    write(root, "noisy.py", NOISY)
    # (the editor tests' fixture: the system stops the runner that builds it, as for want of memory)
    shutil.copy(Path(__file__).parents[1] / "extension" / "e2e" / "fixtures" / "huge.py", root)
    return root


@pytest.fixture(scope="module")
def lsp(workspace: Path):
    session = Session(sys.executable, server_env(), workspace, TIMEOUT)
    yield session
    session.close()


def trace(lsp: Session, path: Path, target: str, **extra: Any) -> dict[str, Any]:
    return lsp.request("torchscope/trace", {"uri": uri(path), "target": target, **extra})


def test_code_lenses(lsp, workspace):
    # model classes, a subclass of a class imported from a project file; transformers subclasses
    # are checked in test_interpreter_without_torch (hf.py makes a runner with torch import
    # transformers ahead of the first trace, which takes seconds)
    models, blocks = workspace / "models.py", workspace / "blocks.py"
    assert lsp.lenses(models) == [
        (line_of(models, "class Net"), "Net"),
        (line_of(models, "class Stack"), "Stack"),
    ]
    assert lsp.lenses(blocks) == [(line_of(blocks, "class Block"), "Block")]
    assert lsp.lenses(workspace / "exits.py") == []


def test_the_runner_starts_with_the_server(lsp, workspace):
    """`python -m torchscope.server` starts its runner before it imports pygls (torch's import
    overlaps the server's start); the server adopts that process and traces in it."""
    started = [line for line in lsp.logs if "runner started:" in line]
    assert started and started[0].endswith(", started with the server)"), started
    (pid,) = re.findall(r"\(pid (\d+), started with the server\)", started[0])
    trace(lsp, workspace / "blocks.py", "Block", input="torch.randn(2, 4)")
    assert lsp.runner_pid() == int(pid)


def test_target_at(lsp, workspace):
    path = workspace / "models.py"

    def at(needle: str, offset: int = 0, text: Optional[str] = None) -> Any:
        src = text if text is not None else path.read_text()
        row = next(i for i, line in enumerate(src.splitlines()) if needle in line)
        col = src.splitlines()[row].index(needle) + offset
        params: dict[str, Any] = {"uri": uri(path), "position": {"line": row, "character": col}}
        if text is not None:
            params["text"] = text
        return lsp.request("torchscope/targetAt", params)

    net, model, factory = (
        line_of(path, s) for s in ("class Net", "model = Net()", "def make_model")
    )
    assert at("return self.fc(x)") == {"target": "Net", "kind": "class", "line": net}
    assert at("model = Net()") == {"target": "model", "kind": "instance", "line": model}
    assert at("model = Net()", 9) == {"target": "Net", "kind": "class", "line": net}
    assert at("return Net()") == {"target": "make_model", "kind": "factory", "line": factory}
    assert at("def make_model", 6) == {"target": "make_model", "kind": "factory", "line": factory}
    assert at("out = model(", 7) == {"target": "model", "kind": "instance", "line": model}
    assert at("import torch") is None
    # the unsaved text of the editor is what is analysed
    edited = path.read_text().replace("model = Net()", "net2 = Net()")
    assert at("net2 = Net()", text=edited) == {"target": "net2", "kind": "instance", "line": model}


def test_targets_of_a_file(lsp, workspace):
    """`torchscope/targets`: every model of the file, for the editor's pick list."""
    path = workspace / "models.py"
    got = lsp.request("torchscope/targets", {"uri": uri(path)})
    assert got == [
        {"target": "Net", "kind": "class", "line": line_of(path, "class Net")},
        {"target": "Stack", "kind": "class", "line": line_of(path, "class Stack")},
        {"target": "make_model", "kind": "factory", "line": line_of(path, "def make_model")},
        {"target": "model", "kind": "instance", "line": line_of(path, "model = Net()")},
    ]
    # the editor's unsaved text is what is listed
    text = "from torch import nn\n\nclass Only(nn.Module):\n    pass\n"
    assert lsp.request("torchscope/targets", {"uri": uri(path), "text": text}) == [
        {"target": "Only", "kind": "class", "line": 2}
    ]
    assert lsp.request("torchscope/targets", {"uri": uri(workspace / "exits.py")}) == []


def test_an_example_a_factory_returns_is_said_as_it_returns_it(lsp, workspace):
    """`build()` returns the model and its example: the input is said as build() gives it,
    not as a call the file makes (it makes none)."""
    path = workspace / "factory.py"
    path.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Tiny(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(5, 2)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n\n\n"
        "def build():\n    return Tiny(), torch.randn(3, 5)\n"
    )
    s = trace(lsp, path, "Tiny")["summary"]
    assert (s["inputKind"], s["input"]) == ("call", "torch.randn(3, 5), as build() returns it")


def test_targets_of_a_file_that_does_not_parse_say_where(lsp, workspace):
    """A model file with a syntax error listed no models, and the editor said "This file
    defines none": the error is where to look."""
    text = "from torch import nn\n\nclass Bad(nn.Module):\n    def forward(self, x)\n        return x\n"
    err = lsp.error("torchscope/targets", {"uri": uri(workspace / "models.py"), "text": text})
    assert err.data["kind"] == "syntax-error" and err.data["line"] == 4
    assert "models.py does not parse: line 4:" in err.message


def test_targets_of_a_saved_file_that_does_not_parse_say_where(lsp, workspace):
    """As with the editor's text: the file on disk, not open, that does not parse listed no
    models (the editor said the file defines none)."""
    path = workspace / "unparsed.py"
    path.write_text("from torch import nn\n\nclass Bad(nn.Module):\n    def forward(self, x)\n")
    err = lsp.error("torchscope/targets", {"uri": uri(path)})
    assert err.data["kind"] == "syntax-error" and err.data["line"] == 4
    assert "unparsed.py does not parse: line 4:" in err.message


def test_a_document_whose_file_is_gone_is_traced_from_its_text(lsp, workspace):
    """A document the editor holds whose file was deleted or moved on disk meanwhile: its
    text is what is traced, as for any unsaved buffer (it said "no such file")."""
    gone = workspace / "gone.py"
    text = (workspace / "models.py").read_text()
    params = {"uri": uri(gone), "target": "Net", "input": "torch.ones(2, 64)"}
    assert lsp.request("torchscope/trace", {**params, "text": text})["summary"]["model"] == "Net"
    doc = types.TextDocumentItem(uri=uri(gone), language_id="python", version=1, text=text)
    lsp.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=doc))
    try:
        assert lsp.request("torchscope/trace", params)["summary"]["model"] == "Net"
    finally:
        lsp.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri(gone)))
        )
    assert not gone.exists()  # (nothing written in its place)


def test_trace_with_progress(lsp, workspace):
    lsp.progress.clear()
    result = trace(lsp, workspace / "models.py", "Net", workDoneToken="trace-1")
    data = Path(result["path"]).read_bytes()
    assert result["size"] == len(data)
    graph = Graph.from_wire(unpack(data))
    assert graph.model.name == "Net" and graph.error is None
    s = result["summary"]
    assert s["model"] == "Net" and s["params"] == 64 * 8 + 8 and s["nodes"] == len(graph.nodes)
    assert s["input"] == "torch.randn(2, 64), as the file calls it"  # in its __main__ block
    assert s["error"] is None
    kinds = [v["kind"] for token, v in lsp.progress if token == "trace-1"]
    messages = [v.get("message") for token, v in lsp.progress if token == "trace-1"]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    assert "Importing" in messages and "Tracing" in messages
    assert any("printed at import" in line for line in lsp.logs)  # user output: in the log
    # a factory and an instance
    assert trace(lsp, workspace / "models.py", "make_model")["summary"]["model"] == "Net"
    assert trace(lsp, workspace / "models.py", "model")["summary"]["model"] == "Net"


def test_debug_lines_reach_the_client_as_debug(lsp, workspace):
    """The server's debug lines are sent as MessageType.Debug, which the language client
    stamps "[Debug …]" (MessageType.Log reached the extension's log unstamped, as info)."""
    lsp.log_types.clear()
    trace(lsp, workspace / "models.py", "Net")
    said = [kind for kind, message in lsp.log_types if message.startswith("trace models.py:Net")]
    assert said == [types.MessageType.Debug]


def test_unsaved_text_is_traced(lsp, workspace):
    path = workspace / "models.py"
    edited = path.read_text().replace("nn.Linear(64, 8)", "nn.Linear(64, 3)")
    assert trace(lsp, path, "Net", text=edited)["summary"]["params"] == 64 * 3 + 3
    # an open document's text is used when the request carries none
    doc = types.TextDocumentItem(uri=uri(path), language_id="python", version=1, text=edited)
    lsp.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=doc))
    try:
        assert trace(lsp, path, "Net")["summary"]["params"] == 64 * 3 + 3
    finally:
        ident = types.TextDocumentIdentifier(uri=uri(path))
        lsp.client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=ident))
    assert trace(lsp, path, "Net")["summary"]["params"] == 64 * 8 + 8


def test_untitled_document(lsp, workspace):
    text = "from torch import nn\n\nclass Draft(nn.Module):\n    pass\n"
    doc = types.TextDocumentItem(
        uri="untitled:Untitled-1", language_id="python", version=1, text=text
    )
    lsp.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=doc))
    try:
        params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=doc.uri))
        lenses = lsp.run(lsp.client.text_document_code_lens_async(params))
        assert [(c.range.start.line, c.command.arguments[0]["target"]) for c in lenses] == [
            (2, "Draft")
        ]
        e = lsp.error("torchscope/trace", {"uri": doc.uri, "target": "Draft"})
        assert e.data["kind"] == "target-error" and "save the file" in e.message
    finally:
        ident = types.TextDocumentIdentifier(uri=doc.uri)
        lsp.client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=ident))


def test_a_notebook_cell_is_not_said_to_be_an_untitled_document(lsp, workspace):
    """A client that sends a notebook cell's uri (the extension says it itself, first) hears
    how notebooks draw a model, not "save the file first": the notebook is saved."""
    cell = "vscode-notebook-cell:/w/nb.ipynb#W0sZmlsZQ%3D%3D"
    e = lsp.error("torchscope/trace", {"uri": cell, "target": "Net", "text": "x = 1\n"})
    assert e.data["kind"] == "target-error"
    assert "torchscope.show(model, x)" in e.message and "save" not in e.message


def test_model_that_raises_is_a_result(lsp, workspace):
    result = trace(lsp, workspace / "broken.py", "Broken")
    error = result["summary"]["error"]
    assert error["type"] == "RuntimeError" and "shapes" in error["message"]
    broken = workspace / "broken.py"
    assert error["file"] == str(broken) and error["line"] == line_of(broken, "return self.b(h)") + 1
    assert Graph.load(result["path"]).error is not None


def test_error_kinds(lsp, workspace):
    models, ctor = uri(workspace / "models.py"), uri(workspace / "ctor.py")
    e = lsp.error("torchscope/trace", {"uri": models, "target": "nope"})
    assert e.code == -32001 and e.data["kind"] == "target-error" and "nope" in e.message
    e = lsp.error("torchscope/trace", {"uri": ctor, "target": "Wide"})
    assert e.data["kind"] == "target-error" and e.data["needsCtorArgs"] is True
    assert e.data["ctorParams"].startswith("width")  # (through the server to the editor)
    result = lsp.request("torchscope/trace", {"uri": ctor, "target": "Wide", "ctorArgs": "width=5"})
    assert result["summary"]["params"] == 5 * 2 + 2
    e = lsp.error("torchscope/trace", {"uri": ctor, "target": "Doubler"})
    assert e.data["kind"] == "needs-input"
    result = lsp.request(
        "torchscope/trace", {"uri": ctor, "target": "Doubler", "input": "torch.ones(3)"}
    )
    assert result["summary"]["input"] == "torch.ones(3)"
    # a wrong input shape makes the forward raise: a result with the error, not an error
    result = lsp.request(
        "torchscope/trace", {"uri": models, "target": "Net", "input": "torch.ones(2, 5)"}
    )
    assert result["summary"]["error"]["type"] == "RuntimeError"


@pytest.mark.parametrize("token", [{}, [1], 2.5, True])
def test_a_progress_token_of_the_wrong_kind_is_a_bad_request(lsp, workspace, token):
    """A workDoneToken that is neither a string nor an integer (LSP's ProgressToken) raised
    inside pygls (-32603, unhashable) after the trace was counted as under way, which then
    never ended: every later edit's whole text was kept. A bad request now, before it."""
    path = workspace / "models.py"
    e = lsp.error("torchscope/trace", {"uri": uri(path), "target": "Net", "workDoneToken": token})
    assert e.code == -32001 and e.data["kind"] == "bad-request", (e.code, e.message)
    assert "workDoneToken" in e.message
    assert trace(lsp, path, "Net", workDoneToken=7)["summary"]["model"] == "Net"


def test_sys_exit_at_import_is_an_error_not_a_dead_server(lsp, workspace):
    params = {"uri": uri(workspace / "exits.py"), "target": "Net", "runTopLevel": True}
    e = lsp.error("torchscope/trace", params)
    assert e.code == -32001 and e.data["kind"] in ("import-error", "runner-crashed")
    assert "sys.exit(3)" in e.message
    pid = lsp.runner_pid()
    e = lsp.error(
        "torchscope/trace",
        {"uri": uri(workspace / "dies.py"), "target": "Net", "runTopLevel": True},
    )
    assert e.data["kind"] == "runner-crashed" and "exited with code 3" in e.message
    assert "dying now" in e.data["details"]
    assert pid is not None and not alive(pid)
    assert (
        lsp.request(
            "torchscope/targetAt",
            {"uri": uri(workspace / "dies.py"), "position": {"line": 0, "character": 0}},
        )
        is None
    )


def test_a_runner_the_system_stops_says_memory_and_meta_builds(lsp, workspace):
    e = lsp.error("torchscope/trace", {"uri": uri(workspace / "huge.py"), "target": "Huge"})
    assert e.data["kind"] == "runner-crashed"
    assert "killed by SIGKILL (most likely out of memory" in e.message
    result = trace(lsp, workspace / "huge.py", "Huge", device="meta", input="torch.ones(1, 8)")
    assert result["summary"]["model"].endswith("Huge") and result["summary"]["error"] is None


def test_a_forward_that_prints_long_lines_is_traced(lsp, workspace):
    """What user code prints goes to the runner's stderr, which the server reads line by line:
    a line longer than the server's buffer must not stop it reading (the runner would block on
    a full pipe, and the trace time out)."""
    result = trace(lsp, workspace / "noisy.py", "Noisy", input="torch.ones(2)")
    assert result["summary"]["error"] is None
    # and the runner is still there for the next trace
    result = trace(lsp, workspace / "noisy.py", "Noisy", input="torch.ones(3)")
    assert result["summary"]["error"] is None


@pytest.mark.parametrize("where", ["import", "build", "forward"])
def test_infinite_loop_times_out(lsp, workspace, where):
    """A loop that never calls torch: at import or build only killing the runner stops it; in
    the forward the runner's timer does, and the runner stays (test_runner_deadline.py). (A
    loop of torch ops is stopped by the tracer's own time budget: test_runner.py.) Stopped
    while importing or building, the error says so (`stage: "build"`): the extension offers
    the meta device."""
    path, target = {
        "import": (workspace / "loops.py", "Net"),
        "build": (workspace / "hangs.py", "SlowToBuild"),
        "forward": (workspace / "hangs.py", "Spin"),
    }[where]
    trace(lsp, workspace / "models.py", "Net")  # (a warm runner, to tell whether it stays)
    pid = lsp.runner_pid()
    assert pid is not None and alive(pid)
    lsp.logs.clear()
    started = time.monotonic()
    # (the loop at import runs only with the user's consent: runTopLevel)
    params = {"uri": uri(path), "target": target, "input": "torch.zeros(2)", "runTopLevel": True}
    e = lsp.error("torchscope/trace", params)
    assert e.data["kind"] == "timeout", e.data
    assert f"past {TIMEOUT:g} s" in e.message
    if where == "forward":
        assert e.data.get("stage") == "trace" and e.message.startswith("the trace ran past")
    else:
        assert e.data.get("stage") == "build", e.data
        assert e.message.startswith(f"importing and building {target} ran past"), e.message
    # the timer starts once the runner is ready: a cold start does not count
    assert time.monotonic() - started < TIMEOUT + 30
    killed = any("killing the runner" in line for line in lsp.logs)
    assert killed == (where != "forward"), lsp.logs
    lsp.wait_for(lambda: alive(pid) == (where == "forward"))  # (a kill takes a moment)
    assert (
        lsp.request(
            "torchscope/targetAt", {"uri": uri(path), "position": {"line": 0, "character": 0}}
        )
        is None
    )


@pytest.mark.parametrize("how", ["cancelRequest", "progressCancel"])
def test_cancel_kills_the_runner(lsp, workspace, how):
    trace(lsp, workspace / "models.py", "Net")
    pid = lsp.runner_pid()
    assert pid is not None and alive(pid)
    lsp.progress.clear()
    token, msg_id = f"cancel-{how}", f"trace-{how}"
    params = {
        "uri": uri(workspace / "hangs.py"),
        "target": "Spin",
        "input": "torch.zeros(2)",
        "workDoneToken": token,
    }
    future = lsp.client.protocol.send_request("torchscope/trace", params, msg_id=msg_id)
    lsp.wait_for(lambda: any(v.get("message") == "Tracing" for t, v in lsp.progress if t == token))
    if how == "cancelRequest":
        lsp.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    else:
        lsp.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))

    async def wait() -> Any:
        return await asyncio.wrap_future(future)

    with pytest.raises(JsonRpcException) as info:
        lsp.run(wait(), 10)
    assert info.value.code == types.LSPErrorCodes.RequestCancelled
    lsp.wait_for(lambda: not alive(pid), 10)
    assert [v["kind"] for t, v in lsp.progress if t == token][-1] == "end"
    assert trace(lsp, workspace / "models.py", "Net")["summary"]["model"] == "Net"
    assert lsp.runner_pid() != pid


def test_shutdown_runner(lsp, workspace):
    """Last of the shared server's tests: it leaves no runner behind."""
    trace(lsp, workspace / "models.py", "Net")
    pid = lsp.runner_pid()
    assert pid is not None and alive(pid)
    assert lsp.request("torchscope/shutdownRunner", {}) is None
    assert not alive(pid)


def test_a_model_file_shown_starts_the_runner(lsp, workspace):
    """After the runner was stopped, the code lenses of a file with a model start a new one
    (torch is imported before the next click); a file without a model does not."""
    assert lsp.runner_pid() is None or not alive(lsp.runner_pid())
    ready = sum("runner ready" in line for line in lsp.logs)
    assert lsp.lenses(workspace / "exits.py") == []
    time.sleep(0.5)
    assert sum("runner started" in line for line in lsp.logs[-5:]) == 0
    assert lsp.lenses(workspace / "blocks.py") != []
    lsp.wait_for(lambda: sum("runner ready" in line for line in lsp.logs) > ready, 60)
    pid = lsp.runner_pid()
    assert pid is not None and alive(pid)


def test_a_killed_server_leaves_no_runner(lsp, workspace):
    """Last user of the shared server: SIGKILL it while its runner loops in user code."""
    lsp.progress.clear()
    params = {
        "uri": uri(workspace / "hangs.py"),
        "target": "Spin",
        "input": "torch.zeros(2)",
        "workDoneToken": "orphan",
    }
    lsp.client.protocol.send_request("torchscope/trace", params)
    lsp.wait_for(
        lambda: any(v.get("message") == "Tracing" for t, v in lsp.progress if t == "orphan")
    )
    pid = lsp.runner_pid()
    assert pid is not None and alive(pid)
    os.kill(lsp.server_pid, signal.SIGKILL)
    lsp.wait_for(lambda: not alive(pid), 10)
    lsp.killed = True


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The libraries the extension bundles (pygls, lsprotocol and their pure-Python deps,
    msgpack), linked from this venv into one folder."""
    import attr
    import attrs
    import cattrs
    import lsprotocol
    import msgpack
    import pygls
    import typing_extensions

    folder = tmp_path_factory.mktemp("bundled")
    for module in (attr, attrs, cattrs, lsprotocol, msgpack, pygls, typing_extensions):
        source = Path(module.__file__ or "")
        source = source.parent if source.name == "__init__.py" else source
        (folder / source.name).symlink_to(source)
    return folder


@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(), reason="needs a Python without torch")
def test_interpreter_without_torch(workspace, bundled, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    check = subprocess.run([python, "-c", "import torch"], capture_output=True)
    assert check.returncode != 0, "this venv must not have torch"
    session = Session(python, server_env(str(bundled)), workspace, TIMEOUT)
    try:
        # static features need no torch
        assert [t for _, t in session.lenses(workspace / "models.py")] == ["Net", "Stack"]
        hf = workspace / "hf.py"  # transformers subclasses
        assert session.lenses(hf) == [
            (line_of(hf, "class Tiny"), "Tiny"),
            (line_of(hf, "class Head"), "Head"),
        ]
        e = session.error(
            "torchscope/trace", {"uri": uri(workspace / "models.py"), "target": "Net"}
        )
        assert e.code == -32001 and e.data["kind"] == "no-torch"
        assert e.data["details"] == python and "torch is not installed" in e.message
        assert "Traceback" not in e.message
    finally:
        session.close()


LOOKS_AT_ITS_LIBRARIES = """
    import os, sys
    import msgpack, typing_extensions
    from torch import nn

    BUNDLED = {bundled!r}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            wrong = [
                what
                for what, bad in (
                    ("msgpack", msgpack.__file__.startswith(BUNDLED)),
                    ("typing_extensions", typing_extensions.__file__.startswith(BUNDLED)),
                    ("PYTHONPATH", BUNDLED in os.environ.get("PYTHONPATH", "")),
                )
                if bad
            ]
            assert not wrong, f"the extension's libraries reached the user's code: {{wrong}}"
            return self.fc(x)
"""


def test_the_users_code_imports_its_own_libraries_not_the_extensions(bundled, tmp_path):
    """The server runs on the libraries the extension bundles (PYTHONPATH); the runner, where
    the user's code runs, must import the user's own versions of the same packages (an older
    attrs, typing_extensions, msgpack of the project), and pass no such path to programs it
    starts: the bundled folder comes last on its sys.path, a fallback (msgpack for the graph
    file, in an environment without it)."""
    write(tmp_path, "own.py", LOOKS_AT_ITS_LIBRARIES.format(bundled=str(bundled)))
    session = Session(sys.executable, server_env(str(bundled)), tmp_path, TIMEOUT * 5)
    try:
        result = session.request(
            "torchscope/trace",
            {"uri": uri(tmp_path / "own.py"), "target": "Net", "input": "torch.ones(2, 4)"},
        )
        assert result["summary"]["error"] is None, result["summary"]["error"]
    finally:
        session.close()


def test_the_workspace_environment_file_reaches_the_runner_only(tmp_path):
    """The extension reads the workspace's `.env` (python.envFile) and hands its variables to
    the server in TORCHSCOPE_RUNNER_ENV: the runner, which imports the user's code, gets them
    (PYTHONPATH entries first), the server keeps its own environment."""
    write(tmp_path, "lib/env_layers.py", "from torch import nn\nWide = nn.Linear\n")
    model = write(
        tmp_path,
        "env_model.py",
        """
        import os
        from env_layers import Wide
        from torch import nn

        class EnvNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = Wide(4, int(os.environ["MODEL_WIDTH"]))

            def forward(self, x):
                return self.fc(x)
        """,
    )
    env = server_env()
    env["TORCHSCOPE_RUNNER_ENV"] = json.dumps(
        {"PYTHONPATH": str(tmp_path / "lib"), "MODEL_WIDTH": "9"}
    )
    session = Session(sys.executable, env, tmp_path, TIMEOUT * 5)
    try:
        result = session.request("torchscope/trace", {"uri": uri(model), "target": "EnvNet"})
        assert result["summary"]["error"] is None, result["summary"]["error"]
        assert result["summary"]["params"] == 4 * 9 + 9
    finally:
        session.close()


# modules the server and the runner import after they start, and torch at its import
SHADOWED = ("json", "logging", "inspect", "ast", "platform", "dataclasses", "typing", "uuid")


def test_files_at_the_workspace_root_named_like_the_standard_library(tmp_path):
    """The server and its runner start in the workspace folder (a user's relative paths), but
    `python -m` would put that folder first on their sys.path: a `logging.py` or `json.py` at
    the root shadowed the standard library, and the server did not start. A model in `src/`
    sees its own folder first, as `python src/model.py` would, and not the root."""
    for name in SHADOWED:
        write(
            tmp_path, f"{name}.py", f"raise ImportError('the workspace {name}.py was imported')\n"
        )
    model = write(tmp_path, "src/model.py", BLOCKS)
    session = Session(sys.executable, server_env(), tmp_path, TIMEOUT * 5)
    try:
        assert [t for _, t in session.lenses(model)] == ["Block"]
        result = session.request(
            "torchscope/trace",
            {"uri": uri(model), "target": "Block", "input": "torch.ones(2, 4)"},
        )
        assert result["summary"]["error"] is None, result["summary"]["error"]
    finally:
        session.close()


REGISTRY = """
    _registered = {}

    def register(cls):
        # as detectron2's or mmengine's registries: one registration of a name per process
        if cls.__name__ in _registered:
            raise KeyError(f"{cls.__name__} is already registered")
        _registered[cls.__name__] = cls
        return cls
"""

REGISTERS = """
    import torch
    from torch import nn
    from registry_lib import register

    @register
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)
"""


def test_a_file_whose_import_fails_again_in_the_warm_runner_gets_a_fresh_one(tmp_path):
    """A class registered in an installed library's registry as the file is imported (a
    detectron2 or mmengine `@register`): the edited file's import raises "already registered"
    in the warm runner, where the first import stays, but not in a fresh `python`. The server
    then runs that trace once more in a fresh runner, and it is drawn."""
    site = tmp_path / "site-packages"  # (a library: never forgotten between traces)
    write(site, "registry_lib.py", REGISTRY)
    model = write(tmp_path, "model.py", REGISTERS)
    env = server_env()
    env["PYTHONPATH"] += os.pathsep + str(site)
    session = Session(sys.executable, env, tmp_path, TIMEOUT * 5)
    try:
        text = model.read_text()
        params = {"uri": uri(model), "target": "Net", "input": "torch.ones(2, 4)"}
        assert session.request("torchscope/trace", {**params, "text": text})["summary"]["model"]
        first = session.runner_pid()
        edited = session.request("torchscope/trace", {**params, "text": text + "\n# edit\n"})
        assert edited["summary"]["error"] is None and edited["summary"]["model"].endswith("Net")
        assert session.runner_pid() != first
        assert any("in a fresh runner" in line for line in session.logs), session.logs[-5:]
    finally:
        session.close()


def test_exit_without_shutdown_during_a_trace_is_quiet(workspace):
    """`exit` with no `shutdown` first, while a trace runs: pygls closes the pipe and the
    cancelled trace still logged, ended its progress and answered; each failed send was
    reported to the client as an error, whose own send failed and was reported again: 37 MB
    of tracebacks on stderr (which the extension logs as errors) and seconds to exit (QA,
    long sessions). Now the server and its runner go, with next to nothing said."""
    session = Session(sys.executable, server_env(), workspace, TIMEOUT)
    try:
        params = {
            "uri": uri(workspace / "hangs.py"),
            "target": "Spin",
            "input": "torch.zeros(2)",
            "workDoneToken": "t",
        }
        session.client.protocol.send_request("torchscope/trace", params)
        session.wait_for(lambda: any(v.get("message") == "Tracing" for _, v in session.progress))
        runner = session.runner_pid()
        assert runner is not None
        session.client.exit(None)
        session.wait_for(lambda: not alive(session.server_pid) and not alive(runner), 30)
        session.run(asyncio.sleep(0.5))  # (the rest of stderr drained)
        err = "".join(session.stderr)
        assert len(err) < 20_000 and "write to closed file" not in err, (len(err), err[-3000:])
    finally:
        session.killed = True
        session.close()
