"""A wheel or sdist built without the viewer is refused, instead of shipping a package whose
`--format html` and `torchscope.show` fail (issue 14: the viewer is a build output)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _clean_checkout(dest: Path) -> Path:
    """The files a build reads, as a clean checkout has them: no built viewer in static/."""
    dest.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(
        ROOT / "python_helper" / "torchscope",
        dest / "python_helper" / "torchscope",
        ignore=shutil.ignore_patterns("static", "__pycache__"),
    )
    return dest


@pytest.mark.parametrize("kind", ["--wheel", "--sdist"])
def test_build_without_the_viewer_fails_and_says_how_to_build_it(tmp_path: Path, kind: str) -> None:
    src = _clean_checkout(tmp_path / "src")
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", kind, "-o", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode != 0, run.stdout
    assert "the viewer is not built" in run.stdout + run.stderr
    assert "make build-webview" in run.stdout + run.stderr
    assert not out.exists() or not list(out.glob("torchscope-*"))
