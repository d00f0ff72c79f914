"""`python -m torchscope.server`: the language server over stdio.

The runner (the process that imports torch) starts before anything else is imported: its
seconds of importing torch overlap the server's own start (see runner_client.start_early)."""

import sys

if sys.version_info < (3, 10):  # noqa: UP036 - checked before any import that needs 3.10
    sys.exit(
        f"torchscope needs Python 3.10 or newer: {sys.executable} is Python "
        f"{sys.version.split()[0]}. Pick another interpreter (the setting torchscope.pythonPath, "
        "or the Python extension's)."
    )

from ..entry_path import drop_working_folder  # noqa: E402

drop_working_folder()  # before the imports below: the workspace's files are not our modules

from .runner_client import start_early  # noqa: E402

start_early()

from .server import main  # noqa: E402 - after the runner's start, on purpose

main()
