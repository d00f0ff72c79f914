"""How the commands speak: on stderr `torchscope: …`, always one line (README, "Command
line"), whatever lines the message came in; on stdout what was asked for, where a stdout
that can't take it (a full disk) is the user's to fix, not a bug of ours."""

from __future__ import annotations

import re
import sys

from .failure import joined_lines


class StdoutError(Exception):
    """Standard output can't be written (closed, a full disk); the message is one line."""


def say(message: str) -> None:
    if sys.stderr is not None:  # (closed: print would write to stdout instead)
        print(f"torchscope: {printable(joined_lines(message))}", file=sys.stderr)


# control characters but the line break and the tab: C0, DEL and C1 (`\x9b` is a CSI too)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}


def printable(text: str) -> str:
    """`text` with every control character but the line break and the tab as a visible
    escape (`\\x1b`, `\\r`): names in a graph file anyone can write would otherwise reach the
    terminal as its commands (clear the screen, set the title, overwrite a line)."""
    return _CONTROLS.sub(lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


def show(text: str) -> None:
    """`text` on stdout, as a line. A reader that went away stays a BrokenPipeError (the
    command ends quietly, 141)."""
    if sys.stdout is None:  # (`>&-`: Python then has no stdout at all)
        raise StdoutError("standard output is closed: give the command somewhere to print")
    try:
        print(printable(text))
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _unwritable(exc) from None


def flush_stdout() -> None:
    """What is still buffered for stdout, written (a full disk shows here, not at exit)."""
    if sys.stdout is None:
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise _unwritable(exc) from None


def _unwritable(exc: OSError) -> StdoutError:
    return StdoutError(f"cannot write to standard output: {exc.strerror or exc}")
