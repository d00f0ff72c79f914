"""An output name (`-o`) checked before anything runs, for `trace` and `diff` alike: a
folder, a name that is none of the formats written (`-o model.py` must never overwrite the
model), a `--format` it contradicts, a folder that does not exist or an unwritable place is
bad input, found in a second rather than after a trace."""

from __future__ import annotations

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
    if out.is_dir():
        raise OutputNameError(f"-o {name} is a folder: give a file name, e.g. {out / example}")
    known = formats.get(out.suffix.lower())
    if known is None:
        what = f"a {out.suffix} file" if out.suffix else "a name without a suffix"
        raise OutputNameError(f"-o {name} is {what}: {writes}, and the name says which")
    if fmt is not None and fmt != known:
        raise OutputNameError(f"-o {name} names a {known} file but --format {fmt} was given")
    if not out.parent.is_dir():
        raise OutputNameError(f"cannot write {name}: no folder {out.parent}")
    try:
        existed = out.exists()
        with open(out, "ab"):
            pass
        if not existed:
            out.unlink()  # nothing is left behind if what comes next fails
    except OSError as exc:
        raise OutputNameError(f"cannot write {name}: {exc.strerror or exc}") from None
    return out, known
