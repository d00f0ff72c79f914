"""`torchscope/compare` and the trace request's `train` through pygls's own LanguageClient,
against the real server process and its runner (as tests/python/test_server_lsp.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgpack
import pytest
from test_server_lsp import (  # noqa: F401 - `bundled` is a fixture used by name
    SYSTEM_PYTHON,
    TIMEOUT,
    Session,
    bundled,
    server_env,
    uri,
    write,
)

from torchscope.compare import compare_view
from torchscope.diff import diff_graphs
from torchscope.graph import Graph, unpack

MODEL = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 32)
            self.drop = nn.Dropout(0.5)
            self.out = nn.Linear(32, 4)

        def forward(self, x):
            return self.out(self.drop(torch.relu(self.fc(x))))

    if __name__ == "__main__":
        Net()(torch.randn(2, 16))
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare-workspace")
    write(root, "net.py", MODEL)
    return root


@pytest.fixture(scope="module")
def lsp(workspace: Path):
    session = Session(sys.executable, server_env(), workspace, TIMEOUT)
    yield session
    session.close()


def trace(lsp: Session, path: Path, **extra: object) -> dict:
    return lsp.request("torchscope/trace", {"uri": uri(path), "target": "Net", **extra})


def read_view(path: str) -> dict:
    return msgpack.unpackb(Path(path).read_bytes(), raw=False)


def test_compare_the_working_copy_with_its_committed_text(lsp, workspace):
    path = workspace / "net.py"
    committed = path.read_text()
    edited = committed.replace("nn.Linear(16, 32)", "nn.Linear(16, 64)").replace(
        "nn.Linear(32, 4)", "nn.Linear(64, 4)"
    )
    # a: the committed text, b: the unsaved edit; the same runner, the same input
    a = trace(lsp, path, text=committed)
    b = trace(lsp, path, text=edited)
    assert (
        a["summary"]["input"] == b["summary"]["input"] == "torch.randn(2, 16), as the file calls it"
    )
    result = lsp.request(
        "torchscope/compare",
        {"a": a["path"], "b": b["path"], "aSource": "HEAD", "bSource": "working copy"},
    )
    wire = read_view(result["path"])
    assert result["size"] == Path(result["path"]).stat().st_size
    assert Path(result["path"]).parent == workspace / ".storage"  # the server's own folder
    # the same comparison as the Python API makes of the two graph files
    ga, gb = (Graph.from_wire(unpack(Path(r["path"]).read_bytes())) for r in (a, b))
    diff = diff_graphs(ga, gb)
    expected = compare_view(diff, "HEAD", "working copy").to_wire()
    assert wire["compare"] == expected["compare"]
    assert result["summary"] == {
        "added": 0,
        "removed": 0,
        "changed": len(diff.details),
        "same": diff.same,
        "changes": len(expected["compare"]["changes"]),
        "model": "Net",
    }
    fc = next(i for i, n in enumerate(wire["nodes"]) if n["path"] == "fc")
    assert wire["compare"]["status"][fc] == "changed"
    assert "out_features: 32 → 64" in wire["compare"]["details"][fc]
    assert wire["compare"]["a"]["source"] == "HEAD"
    assert any("compared" in line and "changed" in line for line in lsp.logs)


def test_head_of_an_imported_file_through_texts(lsp, workspace):
    # the edit is in the imported file: HEAD's text of it goes with the trace of HEAD
    layers = write(
        workspace,
        "stack_layers.py",
        """
        from torch import nn

        def block():
            return nn.Sequential(nn.Linear(16, 16), nn.GELU())
    """,
    )
    head_layers = layers.read_text().replace("nn.GELU()", "nn.ReLU()")
    path = write(
        workspace,
        "stack.py",
        """
        import torch
        from torch import nn
        from stack_layers import block

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = block()

            def forward(self, x):
                return self.body(x)

        if __name__ == "__main__":
            Net()(torch.randn(2, 16))
    """,
    )
    committed = path.read_text()
    a = trace(
        lsp, path, text=committed, texts=[{"file": str(layers), "text": head_layers}], hints=False
    )
    b = trace(lsp, path, text=committed)
    result = lsp.request("torchscope/compare", {"a": a["path"], "b": b["path"]})
    wire = read_view(result["path"])
    act = next(i for i, n in enumerate(wire["nodes"]) if n["path"] == "body.1")
    assert wire["compare"]["status"][act] == "changed"
    assert (
        "target: torch.nn.modules.activation.ReLU → torch.nn.modules.activation.GELU"
        in wire["compare"]["details"][act]
    )
    e = lsp.error(
        "torchscope/trace",
        {"uri": uri(path), "target": "Net", "texts": [{"file": "stack_layers.py", "text": ""}]},
    )
    assert e.data["kind"] == "bad-request" and "not an absolute file path" in e.message


def test_training_mode_is_one_trace_only(lsp, workspace):
    path = workspace / "net.py"
    ev = trace(lsp, path, train=False)
    tr = trace(lsp, path, train=True)
    assert ev["summary"]["input"].endswith("(eval mode)")
    assert tr["summary"]["input"].endswith("(training mode)")
    result = lsp.request("torchscope/compare", {"a": ev["path"], "b": tr["path"]})
    wire = read_view(result["path"])
    drop = next(
        i for i, n in enumerate(wire["nodes"]) if n["kind"] == "op" and n["name"] == "dropout"
    )
    assert wire["compare"]["status"][drop] == "changed"
    assert "training: False → True" in wire["compare"]["details"][drop]
    e = lsp.error("torchscope/trace", {"uri": uri(path), "target": "Net", "train": "yes"})
    assert e.data["kind"] == "bad-request" and "train must be true or false" in e.message
    # the runner's build goes back to the mode it was built in: a plain trace is as before
    plain = read_view(trace(lsp, path)["path"])
    plain_drop = next(n for n in plain["nodes"] if n["kind"] == "op" and n["name"] == "dropout")
    assert plain_drop["attrs"]["training"] is True  # nn.Module starts in training mode


def test_an_identical_pair_and_an_explicit_out(lsp, workspace, tmp_path):
    a = trace(lsp, workspace / "net.py", train=False)
    out = tmp_path / "sub" / "same.msgpack"
    result = lsp.request("torchscope/compare", {"a": a["path"], "b": a["path"], "out": str(out)})
    assert result["path"] == str(out) and out.exists()
    s = result["summary"]
    assert (s["added"], s["removed"], s["changed"], s["changes"]) == (0, 0, 0, 0)
    assert set(read_view(str(out))["compare"]["status"]) == {"same"}


def test_unreadable_sides_are_bad_graph_errors(lsp, workspace, tmp_path):
    good = trace(lsp, workspace / "net.py")["path"]
    junk = tmp_path / "junk.msgpack"
    junk.write_bytes(b"not msgpack")
    e = lsp.error("torchscope/compare", {"a": str(tmp_path / "gone.msgpack"), "b": good})
    assert e.code == -32001 and e.data["kind"] == "bad-graph"
    assert "no such file" in e.message
    e = lsp.error("torchscope/compare", {"a": good, "b": str(junk)})
    assert e.data["kind"] == "bad-graph" and "is not a torchscope graph" in e.message
    e = lsp.error("torchscope/compare", {"a": good})
    assert e.data["kind"] == "bad-graph"


@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(), reason="needs a Python without torch")
def test_a_server_without_torch_compares(lsp, workspace, bundled, tmp_path):  # noqa: F811
    a = trace(lsp, workspace / "net.py", train=False)["path"]
    b = trace(lsp, workspace / "net.py", train=True)["path"]
    venv = tmp_path / "venv"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    assert subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0
    session = Session(python, server_env(str(bundled)), workspace, TIMEOUT)
    try:
        result = session.request("torchscope/compare", {"a": a, "b": b})
        assert result["summary"]["changed"] >= 1
        assert "compare" in read_view(result["path"])
    finally:
        session.close()
