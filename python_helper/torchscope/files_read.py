"""The files a model's construction reads (a `config.json`, a vocabulary): a build the
runner reuses while they are unchanged would otherwise show the old model after an edit of
one of them. Seen by `open` (builtins' and `io`'s, which `Path.read_text` and `json.load(open
(…))` go through) while the build runs; imports read their files another way, and the
runner follows imported files itself."""

from __future__ import annotations

import builtins
import contextlib
import io
import os
from collections.abc import Iterator
from typing import Any

_MOST = 1000  # files followed at most: each is looked at again before a build is reused
_WRITING = frozenset("wax+")


@contextlib.contextmanager
def files_read() -> Iterator[set[str]]:
    """The absolute paths of the files opened for reading while the block runs."""
    read: set[str] = set()
    real = builtins.open

    def open_seen(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real(file, mode, *args, **kwargs)
        if len(read) < _MOST and isinstance(file, (str, bytes, os.PathLike)):
            with contextlib.suppress(Exception):  # (only a note: never the user's open's error)
                if _WRITING.isdisjoint(str(mode)):
                    read.add(os.path.abspath(os.fsdecode(file)))
        return handle

    builtins.open = io.open = open_seen  # type: ignore[assignment]
    try:
        yield read
    finally:
        # (back to the real one unless the block put in its own since)
        if builtins.open is open_seen:
            builtins.open = real
        if io.open is open_seen:
            io.open = real  # type: ignore[assignment]
