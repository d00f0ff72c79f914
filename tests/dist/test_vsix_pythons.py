"""The language server the .vsix ships starts in every Python the extension supports (3.10 and
newer): it runs in the user's own interpreter, on the pure-Python libraries bundled in the
.vsix, and those must be complete for each version (cattrs needs `exceptiongroup` before 3.11,
which pip, installing them from 3.11, leaves out). An interpreter older than 3.10 gets a message
saying so, not a traceback. Files at the workspace root named like the standard library
(`logging.py`) are not imported in its place. The server's static side (finding the model at
the cursor) needs no torch, so the interpreters here have none."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# the language server tests' client (pygls's LanguageClient over stdio)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from test_server_lsp import Session, uri  # noqa: E402

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


def server_env(bundled: Path) -> dict[str, str]:
    """The environment the extension starts its server with: the .vsix's libraries and helper."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = os.pathsep.join([str(bundled / "libs"), str(bundled / "tool")])
    return env


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_the_bundled_server_starts_and_finds_a_model(
    version: str, bundled: Path, tmp_path: Path
) -> None:
    model = tmp_path / "net.py"
    model.write_text(MODEL)
    for name in ("typing", "logging", "json"):  # (the server starts in this folder)
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the workspace {name}.py')\n")
    session = Session(python(version), server_env(bundled), tmp_path, 60)  # (pygls's own client)
    try:
        found = session.request(
            "torchscope/targetAt",
            {"uri": uri(model), "position": {"line": 10, "character": 8}},
        )
        assert found == {"target": "Net", "kind": "class", "line": 4}
    finally:
        session.close()  # shutdown, exit


def test_a_python_too_old_is_told_so(bundled: Path, tmp_path: Path) -> None:
    old = python("3.9")
    run = subprocess.run(
        [old, "-m", "torchscope.server"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(bundled),
        cwd=tmp_path,
        timeout=30,
    )
    assert run.returncode != 0
    assert "torchscope needs Python 3.10 or newer" in run.stderr and old in run.stderr, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
