"""How the commands speak on stderr: `torchscope: …`, always one line (README, "Command
line"), whatever lines the message came in."""

from __future__ import annotations

import sys

from .failure import on_one_line


def say(message: str) -> None:
    print(f"torchscope: {on_one_line(message)}", file=sys.stderr)
