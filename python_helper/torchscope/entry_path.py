"""sys.path for torchscope's own processes: the working folder off its front, and (in the
runner) the extension's bundled libraries at its end.

The language server and its runner start in the user's workspace folder (the runner runs the
user's code, whose relative paths mean that folder), and `python -m` puts the working folder
first on sys.path: a `logging.py` or `json.py` at the workspace root would then stand in for
the standard library in processes that are not the user's scripts. The runner puts each traced
file's own folder first instead, as `python path/model.py` does. Called first thing, while
only modules Python loads at its start have been imported (torchscope/__init__.py imports
nothing else); a user who sets PYTHONSAFEPATH (3.11+) has the folder off already.
"""

from __future__ import annotations

import os
import sys

__all__ = ["RUNNER_LIBS", "bundled_libraries_last", "drop_working_folder"]

# where the server tells its runner the extension's bundled libraries are (runner_env)
RUNNER_LIBS = "TORCHSCOPE_RUNNER_LIBS"


def drop_working_folder() -> None:
    if getattr(sys.flags, "safe_path", False) or not sys.path or not sys.path[0]:
        return
    if os.path.abspath(sys.path[0]) == os.getcwd():
        del sys.path[0]


def bundled_libraries_last() -> None:
    """The extension's bundled libraries (pygls, attrs, msgpack …) last on the runner's
    sys.path, after the user's own, and gone from its environment: the user's code imports the
    project's versions, and msgpack comes from there only when the project has none."""
    libs = os.environ.pop(RUNNER_LIBS, None)
    if libs and libs not in sys.path:
        sys.path.append(libs)
