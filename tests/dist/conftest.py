"""Fixtures of the distribution tests: the files `make dist` wrote into dist/, and a fresh
environment outside the checkout with the wheel installed (see fresh_env.py)."""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fresh_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
VERSION = re.search(
    r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M
).group(1)


def dist_file(name: str) -> Path:
    path = DIST / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make dist` (or `make test-dist`)")
    return path


@pytest.fixture(scope="session")
def wheel() -> Path:
    return dist_file(f"torchscope-{VERSION}-py3-none-any.whl")


@pytest.fixture(scope="session")
def sdist() -> Path:
    return dist_file(f"torchscope-{VERSION}.tar.gz")


@pytest.fixture(scope="session")
def vsix() -> Path:
    version = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))["version"]
    return dist_file(f"torchscope-{version}.vsix")


@pytest.fixture(scope="session")
def fresh(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> fresh_env.FreshEnv:
    """torchscope installed from the wheel into a new venv that sees torch and Jupyter's
    kernel (as a user's would) and nothing else of this machine."""
    root = tmp_path_factory.mktemp("fresh")
    assert ROOT not in root.parents
    view = fresh_env.link_view(
        fresh_env.requirement_closure(["torch", "ipykernel"]), root / "installed-elsewhere"
    )
    assert not (view / "msgpack").exists() and not (view / "torchscope").exists()
    # msgpack comes from pip, pinned to the version the extension bundles, for a run that
    # does not change with the day's releases.
    return fresh_env.create(root / "venv", view, wheel, [f"msgpack=={md.version('msgpack')}"])
