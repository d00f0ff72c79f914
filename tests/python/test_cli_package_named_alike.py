"""A package holding a module of its own name (`linformer/linformer.py`, as many model repos
are laid out), traced with the command line from the repository's root: the file imports
its package absolutely (`from linformer.reversible import …`). The package's root must come
before the file's own folder on sys.path, or `import linformer` finds the module, not the
package ("'linformer' is not a package"), as `python -m linformer.linformer` never would."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MODEL = """
import torch
from torch import nn
from linformer.reversible import Twice

class Linformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.twice = Twice()
    def forward(self, x):
        return self.twice(self.fc(x))
"""

REVERSIBLE = """
from torch import nn

class Twice(nn.Module):
    def forward(self, x):
        return x * 2
"""


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python_helper")}
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_module_named_as_its_package_traces_from_the_repository_root(tmp_path: Path) -> None:
    package = tmp_path / "linformer"
    package.mkdir()
    (package / "__init__.py").write_text("from linformer.linformer import Linformer\n")
    (package / "linformer.py").write_text(textwrap.dedent(MODEL))
    (package / "reversible.py").write_text(textwrap.dedent(REVERSIBLE))
    done = _cli(
        ["summary", "linformer/linformer.py:Linformer", "--input", "torch.randn(2, 4)"], tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "twice: Twice" in done.stdout
