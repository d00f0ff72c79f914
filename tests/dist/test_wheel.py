"""`pip install` of the wheel that `make dist` built, into a fresh environment outside the
checkout: the package carries the viewer, and the pages it writes open in Chromium and draw."""

from __future__ import annotations

import subprocess
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

from conftest import VERSION
from fresh_env import FreshEnv, clean_environ
from pages import assert_drawn, drawn

# What render_html reads (python_helper/torchscope/html.py); setup.py requires the same.
VIEWER = ("page.html", "viewer.css", "viewer-page.js", "layout.worker.js")

MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.encoder(x))
"""

# torchscope.show's view, saved instead of displayed (as outside a notebook).
SAVE_VIEW = """\
import torch
import torchscope
from torchscope.notebook import GraphView
from tiny import Net

graph = torchscope.trace(Net(), torch.randn(2, 8))
print(GraphView(graph.to_msgpack(), graph.model.name).save("view.html"))
"""


def test_wheel_carries_the_viewer_and_its_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = Parser().parsestr(z.read(f"torchscope-{VERSION}.dist-info/METADATA").decode())
        entry_points = z.read(f"torchscope-{VERSION}.dist-info/entry_points.txt").decode()
    assert {f"torchscope/static/{f}" for f in VIEWER} <= names
    assert {"torchscope/cli.py", "torchscope/notebook.py", "torchscope/server/server.py"} <= names
    assert f"torchscope-{VERSION}.dist-info/licenses/LICENSE" in names
    assert not [n for n in names if n.startswith(("tests/", "webview/", "extension/"))]
    required = [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r]
    assert sorted(required) == ["msgpack>=1.0", "torch>=2.1"]
    assert meta["License-Expression"] == "MIT"
    assert "torchscope = torchscope.cli:run" in entry_points


def test_sdist_carries_the_built_viewer(sdist: Path) -> None:
    """pip builds the wheel from the sdist without Node: the built files must be in it."""
    with tarfile.open(sdist) as t:
        names = set(t.getnames())
    base = f"torchscope-{VERSION}"
    assert {f"{base}/python_helper/torchscope/static/{f}" for f in VIEWER} <= names
    assert {f"{base}/setup.py", f"{base}/pyproject.toml", f"{base}/LICENSE"} <= names


def test_installed_wheel_writes_pages_that_draw(fresh: FreshEnv, tmp_path: Path) -> None:
    # pip installed msgpack from the wheel's requirements; torch was there already.
    assert (fresh.site_packages / "msgpack").is_dir()
    assert "Successfully installed" in fresh.pip_log and f"torchscope-{VERSION}" in fresh.pip_log

    work = tmp_path / "work"
    work.mkdir()
    (work / "tiny.py").write_text(MODEL, encoding="utf-8")
    where = fresh.run("-c", "import torchscope; print(torchscope.__file__)", cwd=work)
    assert Path(where.stdout.strip()).is_relative_to(fresh.site_packages), where

    cli = fresh.run(
        "-m", "torchscope", "trace", "tiny.py:Net", "--format", "html", "-o", "page.html", cwd=work
    )
    assert cli.returncode == 0, cli.stderr
    view = fresh.run("-c", SAVE_VIEW, cwd=work)
    assert view.returncode == 0, view.stderr
    # The console script the wheel installs.
    summary = subprocess.run(
        [str(fresh.root / "bin" / "torchscope"), "summary", "tiny.py:Net"],
        cwd=work,
        env=clean_environ(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert summary.returncode == 0, summary.stderr
    assert "encoder: Sequential" in summary.stdout

    reports = drawn(
        [
            {"name": "wheel-cli-page", "path": work / "page.html", "frames": 0},
            {"name": "wheel-graphview-save", "path": work / "view.html", "frames": 0},
        ],
        tmp_path,
    )
    for report in reports.values():
        assert_drawn(report, {"encoder", "head"})
