"""A project whose package lives under `lib/` or `src/`, through the real server over stdio: the
code lens of a model subclassing the package's class, and its trace in the real runner (the
static search itself is tested in test_server_find_targets)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from test_server_lsp import TIMEOUT, Session, line_of, server_env, trace, write

from torchscope.graph import Graph, unpack
from torchscope.server.runner_client import RUNNER_ENV

ENCODER = """
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.relu(self.proj(x))
"""

FINETUNED = """
import torch
from torch import nn
from toolkit.encoder import Encoder

class Finetuned(Encoder):
    def __init__(self):
        super().__init__(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(super().forward(x))
"""


def _layout(ws: Path, folder: str) -> Path:
    write(ws, f"{folder}/toolkit/__init__.py", "")
    write(ws, f"{folder}/toolkit/encoder.py", ENCODER)
    return write(ws, "scripts/finetune.py", FINETUNED)


def test_a_package_on_the_workspace_pythonpath(tmp_path):
    """`.env`'s PYTHONPATH=lib, as the extension hands it to the server (made absolute): the lens
    is shown and the trace imports the package."""
    ws = tmp_path.resolve()
    script = _layout(ws, "lib")
    env = server_env()
    env[RUNNER_ENV] = json.dumps({"PYTHONPATH": str(ws / "lib")})
    session = Session(sys.executable, env, ws, TIMEOUT * 10)
    try:
        assert session.lenses(script) == [(line_of(script, "class Finetuned"), "Finetuned")]
        got = trace(session, script, "Finetuned", input="torch.randn(3, 4)")
        assert got["summary"]["error"] is None, got["summary"]
        graph = Graph.from_wire(unpack(Path(got["path"]).read_bytes()))
        assert graph.model.name == "Finetuned"
        names = [n.name for n in graph.nodes if n.kind == "module"]
        assert names == ["Finetuned", "Linear", "Linear"], names
    finally:
        session.close()


def test_a_src_folder_without_pythonpath_has_its_lens(tmp_path):
    """A `src/` folder at the workspace root is searched for the class without any setting."""
    ws = tmp_path.resolve()
    script = _layout(ws, "src")
    session = Session(sys.executable, server_env(), ws, TIMEOUT)
    try:
        assert session.lenses(script) == [(line_of(script, "class Finetuned"), "Finetuned")]
        assert session.lenses(ws / "scripts" / "missing.py") == []
    finally:
        session.close()
