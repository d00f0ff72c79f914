"""The server's graph files in the storage folder every window's server shares: each server
removes its own oldest, and another's only when that server is gone and the file a day old
(a window tracing 20 models deleted the graph another window's panel showed)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from torchscope.server.graph_files import KEEP_GRAPH_FILES, OTHERS_AGE_S, new_graph_path, prune


def _file(folder: Path, target: str, pid: int, age_s: float, serial: int) -> Path:
    path = new_graph_path(folder, target, pid, serial)
    path.write_bytes(b"\x80")
    at = time.time() - age_s
    os.utime(path, (at, at))
    return path


def _gone_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_server_removes_only_its_own_old_files(tmp_path):
    mine, other = os.getpid(), os.getppid()  # (the other: a server that runs)
    own = [_file(tmp_path, f"M{i}", mine, 100 - i, i) for i in range(KEEP_GRAPH_FILES + 3)]
    theirs = [_file(tmp_path, f"T{i}", other, 1000 + i, i) for i in range(30)]
    removed = prune(tmp_path, mine)
    assert sorted(removed) == sorted(own[:4])  # the oldest: room for the one being written
    assert all(p.exists() for p in theirs)
    assert len(list(tmp_path.glob("*.msgpack"))) == KEEP_GRAPH_FILES - 1 + 30


def test_a_gone_servers_files_go_once_a_day_old(tmp_path):
    gone = _gone_pid()
    old = _file(tmp_path, "Old", gone, OTHERS_AGE_S + 60, 1)
    recent = _file(tmp_path, "Recent", gone, 60, 2)  # (a window reloaded: its panels read it)
    running = _file(tmp_path, "Running", os.getppid(), OTHERS_AGE_S + 60, 3)
    assert prune(tmp_path, os.getpid()) == [old]
    assert recent.exists() and running.exists()


def test_files_named_before_servers_signed_them_count_as_its_own(tmp_path):
    for i in range(KEEP_GRAPH_FILES + 1):
        path = tmp_path / f"g{i}.msgpack"
        path.write_bytes(b"\x80")
        os.utime(path, (1000 + i, 1000 + i))
    removed = prune(tmp_path, os.getpid())
    assert [p.name for p in removed] == ["g0.msgpack", "g1.msgpack"]


def test_a_file_another_server_removes_meanwhile_is_passed_over(tmp_path):
    """(A dangling name stands for a file deleted between the listing and the look: the
    look raised, and the trace failed with "cannot write graph files".)"""
    (tmp_path / "Gone-1-2-3.msgpack").symlink_to(tmp_path / "nothing-there")
    _file(tmp_path, "Mine", os.getpid(), 10, 1)
    assert prune(tmp_path, os.getpid()) == []
