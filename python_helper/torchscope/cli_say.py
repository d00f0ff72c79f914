"""How the commands speak on stderr: `torchscope: …`, always one line (README, "Command
line"), whatever lines the message came in."""

from __future__ import annotations

import sys

from .failure import joined_lines


def say(message: str) -> None:
    print(f"torchscope: {joined_lines(message)}", file=sys.stderr)
