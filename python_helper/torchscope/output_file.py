"""An output name (`-o`) checked before anything runs, for `trace` and `diff` alike: a
folder, a name that is none of the formats written (`-o model.py` must never overwrite the
model), a `--format` it contradicts, a named pipe or a device (opening a pipe waits for a
reader), a folder that does not exist or an unwritable place is bad input, found in a second
rather than after a trace."""

from __future__ import annotations

import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Optional


class OutputNameError(Exception):
    """The `-o` name can't be written as asked; the message is one line for the user."""


def checked_output(
    name: str, fmt: Optional[str], formats: Mapping[str, str], writes: str, example: str
) -> tuple[Path, str]:
    """`(path, format)` of `-o name`: `formats` maps a suffix to its format, `writes` says
    which files the command writes ("torchscope writes .msgpack, .json or .html files"),
    `example` a file name for a folder given instead."""
    out = Path(name)
    try:
        mode = _mode(out)
        if mode is not None and stat.S_ISDIR(mode):
            raise OutputNameError(f"-o {name} is a folder: give a file name, e.g. {out / example}")
        known = formats.get(out.suffix.lower())
        if known is None:
            what = f"a {out.suffix} file" if out.suffix else "a name without a suffix"
            raise OutputNameError(f"-o {name} is {what}: {writes}, and the name says which")
        if fmt is not None and fmt != known:
            raise OutputNameError(f"-o {name} names a {known} file but --format {fmt} was given")
        if mode is not None and not stat.S_ISREG(mode):
            # (never opened: a named pipe's open waits for a reader, for good)
            raise OutputNameError(
                f"cannot write {name}: it is {_special(mode)}, not a regular file"
            )
        parent = _mode(out.parent)
        if parent is None or not stat.S_ISDIR(parent):
            raise OutputNameError(f"cannot write {name}: no folder {out.parent}")
        _probe(out)
    except OSError as exc:  # (a name longer than the system takes, a folder not to be read)
        raise OutputNameError(f"cannot write {name}: {exc.strerror or exc}") from None
    return out, known


def _mode(path: Path) -> Optional[int]:
    """`path`'s st_mode, the link followed; None: nothing is there."""
    try:
        return path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None


def _special(mode: int) -> str:
    """What a file that is no regular file is, as the user would call it."""
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "no regular file"


def _probe(out: Path) -> None:
    """Opened for writing as the write will: a place not to be written fails now."""
    existed = out.exists()
    with open(out, "ab"):
        pass
    if not existed:
        out.unlink()  # nothing is left behind if what comes next fails
