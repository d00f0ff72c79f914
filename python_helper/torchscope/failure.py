"""One failure type for every way a trace request can end in an error, whichever process
runs it: the runner (an error reply line), the language server (a JSON-RPC error built
from that reply) and the paused-debugger entry (an `{ok: false}` evaluate reply).

Standard library only: the server and the debug loader import it without torch.
"""

from __future__ import annotations

import traceback
from typing import Any, Optional

MAX_LINE = 500
# The runner's progress message while it imports the file and builds the model: a request
# stopped for its time then fails with `stage: "build"` (docs/protocol.md)
IMPORTING = "Importing"
# ... while it traces (the forward: stopped at the budget by the runner itself), and once the
# trace is over and it writes the graph (torchscope's own work: the server waits for it)
TRACING = "Tracing"
WRITING = "Writing the graph"


def a_or_an(word: str) -> str:
    """`word` with its indefinite article: "an int", "a Tensor", "a UserDict" (a "u" said
    "you": uni…, us…)."""
    vowel = word[:1].lower() in "aeiou" and not word.lower().startswith(("uni", "us", "use"))
    return f"{'an' if vowel else 'a'} {word}"


def shown_name(name: object) -> str:
    """A file's name as a message shows it: quoted (`'m.py '`) where spaces at its ends or a
    character that prints as nothing would hide which name it is, else as it is."""
    text = str(name)
    return repr(text) if text != text.strip() or not text.isprintable() else text


def message_of(exc: BaseException) -> str:
    """str(exc), or Python's own words when its __str__ raises (a user's exception class)."""
    try:
        return str(exc)
    except Exception:
        return "<exception str() failed>"


def one_line(exc: BaseException) -> str:
    """`Type: message`, first line only: what a user reads in a notification."""
    text = f"{type(exc).__name__}: {message_of(exc)}".strip()
    return text.splitlines()[0][:MAX_LINE] if text else type(exc).__name__


def joined_lines(text: str) -> str:
    """`text` with its lines joined by " / ": a command's error is one line on stderr (torch's
    and users' messages may run to several)."""
    return " / ".join(line.strip() for line in text.splitlines() if line.strip())


def traceback_text(exc: BaseException) -> Optional[str]:
    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:  # a broken __str__ in user code
        return None


def exit_text(exc: SystemExit) -> str:
    """`called sys.exit(2)`, and when argparse called it, what argparse said and why: a file
    that parses its command line as it is imported, run by a trace with none."""
    text = f"called sys.exit({exc.code!r})"
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "error" and frame.f_code.co_filename.endswith("argparse.py"):
            said = str(frame.f_locals.get("message", "")).strip().splitlines()
            if said:
                text += (
                    f" (argparse: {said[0][:MAX_LINE]}: the file parses its command line as "
                    "it is imported, and a trace runs the file with no command-line arguments; "
                    'give them defaults, or parse them under `if __name__ == "__main__":`)'
                )
            break
        tb = tb.tb_next
    return text


class Failure(Exception):
    """A request that ends in an error of one protocol kind (docs/protocol.md): `kind` for
    the code that reacts, `message` one line for the user, `details` (a traceback, an
    interpreter path) for the log, `extra` fields passed on as they are (`needsCtorArgs`)."""

    def __init__(
        self, kind: str, message: str, details: Optional[str] = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details
        self.extra = extra

    def runner_reply(self, rid: Any) -> dict[str, Any]:
        """The runner's error reply line."""
        reply: dict[str, Any] = {"id": rid, "ok": False, "kind": self.kind, "message": self.message}
        if self.details is not None:
            reply["details"] = self.details
        reply.update(self.extra)
        return reply

    def debug_reply(self) -> dict[str, Any]:
        """The paused-debugger entry's error reply."""
        return {"ok": False, "kind": self.kind, "error": self.message, "traceback": self.details}

    @staticmethod
    def from_runner_reply(reply: dict[str, Any]) -> Failure:
        """The server's side: the Failure the runner replied with."""
        extra = {
            k: v for k, v in reply.items() if k not in ("id", "ok", "kind", "message", "details")
        }
        return Failure(
            reply.get("kind", "internal"),
            reply.get("message", "the runner failed"),
            reply.get("details"),
            **extra,
        )
