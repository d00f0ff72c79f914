"""Which files are the user's own code: where an error is best shown and which modules a
warm runner must re-import. One rule for the runner and the paused-debugger entry.

Library code is the standard library, installed packages (site-packages, dist-packages),
torch and torchscope itself; an `eval` or REPL string (`<string>`) is nobody's file.
Standard library only (torch is looked up in `sys.modules`, never imported).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import sysconfig
from typing import Any, Optional

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_dirs: Optional[tuple[str, ...]] = None


def _norm(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def library_dirs() -> tuple[str, ...]:
    """Folders of library code, each ending in a separator."""
    global _dirs
    if _dirs is None:
        dirs = {_PKG_DIR}
        paths = sysconfig.get_paths()
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            if paths.get(key):
                dirs.add(paths[key])
        with contextlib.suppress(Exception):
            import site

            dirs.update(site.getsitepackages())
            dirs.add(site.getusersitepackages())
        torch_file = getattr(sys.modules.get("torch"), "__file__", None)
        if torch_file:
            dirs.add(os.path.dirname(str(torch_file)))
        _dirs = tuple(_norm(d).rstrip(os.sep) + os.sep for d in dirs if d)
    return _dirs


def is_library_file(file: str) -> bool:
    f = _norm(file)
    if os.sep + "site-packages" + os.sep in f or os.sep + "dist-packages" + os.sep in f:
        return True
    return f.startswith(library_dirs())


def is_user_file(file: str) -> bool:
    """A file of the user's own code: not library code and not an eval string."""
    return bool(file) and not file.startswith("<") and not is_library_file(file)


def module_files(module: Any) -> list[str]:
    """Where an imported module lives: its file, or a namespace package's folders."""
    file = getattr(module, "__file__", None)
    paths: Any = list(getattr(module, "__path__", []) or []) if file is None else [file]
    return [p for p in paths if isinstance(p, str)]


def is_under(file: str, roots: list[str]) -> bool:
    """`file` lies in one of `roots` (normalised folders ending in a separator)."""
    return _norm(file).startswith(tuple(roots))


def read_source(path: str | os.PathLike[str]) -> str:
    """A Python file's text as Python reads it: its coding cookie (PEP 263) or UTF-8 byte-order
    mark honoured, newlines made `\\n` (a plain UTF-8 read fails on a latin-1 file, and
    keeps a BOM that compile() rejects). Raises OSError, or UnicodeDecodeError/SyntaxError for
    bytes that match no encoding."""
    import importlib.util

    with open(path, "rb") as f:
        return importlib.util.decode_source(f.read())


# files whose lines linecache holds as an editor's text, not as read from disk
_texts_given: set[str] = set()


# a line ends where Python and the editor end it: str.splitlines also breaks at a form feed
# (a ^L page break, which PEP 8 allows), \v, \x1c-\x1e, \x85, \u2028 and \u2029
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """`text`'s lines with their line breaks, as Python and the LSP count lines."""
    return _LINE.findall(text)


def split_lines(text: str) -> list[str]:
    """Lines as Python and the LSP count them (\\n, \\r\\n or \\r), without their line breaks."""
    return _LINE_BREAK.split(text)


def lines_are(filename: str, text: Optional[str]) -> None:
    """What linecache (so inspect, tracebacks, warnings and torchscope's sites) reads as
    `filename`'s lines: `text`, the editor's buffer or HEAD's version being run in its place,
    or the file on disk again when None. Without it, code run from a text is read back from
    the disk: other lines, or a file that does not parse (inspect's tokenizer then fails)."""
    import linecache

    if text is None:
        if filename in _texts_given:
            _forget(filename)
        return
    lines = source_lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # (no modification time: linecache.checkcache keeps it, never reads the disk over it)
    linecache.cache[filename] = (len(text), None, lines, filename)
    _texts_given.add(filename)


def texts_only(filename: Optional[str]) -> None:
    """Forget the texts linecache holds for files other than `filename` (None: all): a file
    traced from an editor's buffer is read from disk again when another trace imports it."""
    for other in [f for f in _texts_given if f != filename]:
        _forget(other)


def _forget(filename: str) -> None:
    """linecache reads `filename` from disk again."""
    import linecache

    _texts_given.discard(filename)
    linecache.cache.pop(filename, None)
