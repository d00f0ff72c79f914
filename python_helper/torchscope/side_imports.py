"""Two sides of a comparison traced in one process, each with its own code.

`diff old/model.py:Net new/model.py:Net` imports both copies of a project in one
interpreter: the files beside the old model (`layers.py`, a package's modules) stay in
`sys.modules` under the same names, and the new model would import the old ones. A side
whose folder differs from the other's forgets, once traced, the modules it imported from
its own folder, and its folder leaves `sys.path` again. Sides in one folder share their
files anyway: nothing is forgotten there (a module registering a custom op must not run
twice).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

from .graph_file import is_graph_file
from .usercode import is_user_file, module_files


def import_root(spec: str) -> Optional[Path]:
    """The folder a target's file is imported from (the top of its package tree); None for a
    graph file or a target that names no file."""
    if is_graph_file(spec):
        return None
    from .build_target import module_name_for, split_target  # (torch: not for graph files)

    try:
        return module_name_for(split_target(spec)[0])[1]
    except Exception:  # (a malformed target: tracing it says what is wrong)
        return None


@contextlib.contextmanager
def own_imports(spec: str, other: str) -> Iterator[None]:
    """Trace side `spec` inside the block; afterwards, when `other` is imported from another
    folder, forget the modules the block imported from `spec`'s folder and put `sys.path`
    back as it was."""
    mine, theirs = import_root(spec), import_root(other)
    if mine is None or theirs is None or mine == theirs:
        yield
        return
    before = set(sys.modules)
    path = list(sys.path)
    try:
        yield
    finally:
        sys.path[:] = path
        inside = os.path.join(os.path.realpath(mine), "")
        for name in set(sys.modules) - before:
            if _from(sys.modules.get(name), inside):
                del sys.modules[name]
        importlib.invalidate_caches()


def _from(module: Any, inside: str) -> bool:
    """Whether a module is the user's code in `inside`: its file (a namespace package: its
    folders) there, and no library's (a project's own `.venv` lies in its folder: torch
    imported again registers its operators twice and fails)."""
    places = module_files(module)
    return bool(places) and all(
        is_user_file(p) and os.path.realpath(p).startswith(inside) for p in places
    )
