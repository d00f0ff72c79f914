"""`python -m torchscope.server`: the language server over stdio.

The runner (the process that imports torch) starts before anything else is imported: its
seconds of importing torch overlap the server's own start (see runner_client.start_early)."""

from .runner_client import start_early

start_early()

from .server import main  # noqa: E402 - after the runner's start, on purpose

main()
