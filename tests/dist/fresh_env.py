"""A fresh virtual environment outside the checkout, with torchscope installed from its wheel.

Installing torch (a 200 MB wheel, ~900 MB unpacked) into every fresh environment takes
minutes on this machine, so the fresh environment sees torch the way a user's does, as an
already installed package: a ``.pth`` file adds a *view* folder to its path, which holds
links to torch and to the packages it needs (and to Jupyter's kernel, for the notebook
test), found from their installed metadata, and nothing else. Everything torchscope itself
needs beyond torch (msgpack) is not in the view, so pip has to install it from the wheel's
metadata; the checkout and the shared venv are never on the path.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement


def requirement_closure(names: list[str]) -> list[md.Distribution]:
    """The installed distributions ``names`` need, with theirs, recursively (no extras)."""
    found: dict[str, md.Distribution] = {}
    todo = list(names)
    while todo:
        dist = md.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in found:
            continue
        found[key] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(found.values())


def link_view(dists: list[md.Distribution], view: Path) -> Path:
    """A folder of links to the top-level files of ``dists`` (packages, modules, metadata)."""
    view.mkdir(parents=True, exist_ok=True)
    for dist in dists:
        for file in dist.files or []:
            top = file.parts[0]
            # Scripts live outside site-packages; .pth files are not read from a path entry.
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue
            link = view / top
            if not link.is_symlink():
                link.symlink_to(Path(str(dist.locate_file(top))))
    return view


def clean_environ() -> dict[str, str]:
    """The environment without anything that would put the checkout or a venv on the path."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"):
        env.pop(name, None)
    return env


@dataclass
class FreshEnv:
    root: Path
    python: Path
    site_packages: Path
    pip_log: str

    def run(self, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), *args],
            cwd=cwd,
            env=clean_environ(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def create(root: Path, view: Path, wheel: Path, constraints: list[str]) -> FreshEnv:
    """``python -m venv`` at ``root``, the view on its path, then ``pip install WHEEL``."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)],
        check=True,
        env=clean_environ(),
        timeout=120,
    )
    python = root / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
            env=clean_environ(),
        ).stdout.strip()
    )
    (site / "installed-elsewhere.pth").write_text(f"{view}\n", encoding="utf-8")
    constraint_file = root / "constraints.txt"
    constraint_file.write_text("".join(f"{c}\n" for c in constraints), encoding="utf-8")
    # The venv has no pip of its own (ensurepip alone takes ~20 s here): the test's pip
    # installs into it with --python.
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-input"]
        + ["--constraint", str(constraint_file), str(wheel)],
        cwd=root,
        env=clean_environ(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if pip.returncode != 0:
        raise RuntimeError(f"pip install {wheel.name} failed:\n{pip.stdout}\n{pip.stderr}")
    return FreshEnv(root, python, site, pip.stdout)
