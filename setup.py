"""Build hooks only; the project's metadata is in pyproject.toml.

The viewer in ``torchscope/static`` is built from TypeScript by ``make build-webview``
(Node). A wheel or sdist made without it would install a package whose ``--format html``
and ``torchscope.show`` fail, so such a build stops here with what to run. An sdist carries
the built files, so installing from it needs no Node. Editable installs (``pip install -e``,
as ``make setup`` does before the viewer is built) are not checked.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

STATIC = Path(__file__).resolve().parent / "python_helper" / "torchscope" / "static"
# What render_html (python_helper/torchscope/html.py) reads for the standalone page.
VIEWER_FILES = ("page.html", "viewer.css", "viewer-page.js", "layout.worker.js")


def require_viewer() -> None:
    missing = [name for name in VIEWER_FILES if not (STATIC / name).is_file()]
    if missing:
        raise SystemExit(
            "torchscope: the viewer is not built "
            f"({', '.join(missing)} missing in python_helper/torchscope/static): "
            "run `make build-webview` (or `make dist`) first"
        )


class BuildPyWithViewer(build_py):
    def run(self) -> None:
        if not self.editable_mode:
            require_viewer()
        super().run()


class SdistWithViewer(sdist):
    def run(self) -> None:
        require_viewer()
        super().run()


setup(cmdclass={"build_py": BuildPyWithViewer, "sdist": SdistWithViewer})
