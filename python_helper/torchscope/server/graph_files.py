"""The language server's graph files in the extension's storage folder. Every window's
server writes into the same folder, so each removes only its own old files (named with its
pid) and, of the others, only those of a server that is gone and a day old: a window's
panels show the graphs of its own server, and of the server before it (a restart, a reload),
whose files it indexes again."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Optional

KEEP_GRAPH_FILES = 20  # of this server's own, the newest, the one being written included
OTHERS_AGE_S = 24 * 3600  # another server's file, its server gone, is removed past this age

_WRITER = re.compile(r"-(\d+)-\d+-\d+\.msgpack$")


def new_graph_path(folder: Path, target: str, pid: int, serial: int) -> Path:
    """A graph file's name: the target, the writing server's pid, the time, a serial."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", target)[:60]
    return folder / f"{safe}-{pid}-{int(time.time() * 1000)}-{serial}.msgpack"


def prune(folder: Path, pid: int, keep: int = KEEP_GRAPH_FILES) -> list[Path]:
    """Remove this server's oldest graph files so that one more makes `keep`, and other
    servers' files that are old and whose server is gone; returns what was removed. A file
    another server removes meanwhile is passed over."""
    now = time.time()
    own: list[tuple[float, Path]] = []
    stale: list[Path] = []
    for path in folder.glob("*.msgpack"):
        try:
            mtime = path.stat().st_mtime
        except OSError:  # (gone between the listing and the look: another window's prune)
            continue
        writer = _writer(path.name)
        if writer is None or writer == pid:  # (a name without a pid: an older version's)
            own.append((mtime, path))
        elif now - mtime > OTHERS_AGE_S and not _running(writer):
            stale.append(path)
    own.sort()
    stale.extend(path for _, path in own[: max(0, len(own) - keep + 1)])
    removed = []
    for path in stale:
        try:
            path.unlink()
            removed.append(path)
        except OSError:
            pass
    return removed


def _writer(name: str) -> Optional[int]:
    found = _WRITER.search(name)
    return int(found.group(1)) if found else None


def _running(pid: int) -> bool:
    """Whether a process `pid` runs; where that can't be asked safely (Windows, where
    os.kill ends the process), no."""
    if os.name != "posix":
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (EPERM: it runs, as another user)
        return True
    return True
