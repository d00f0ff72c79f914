"""Broken graph files given to the commands that read them (a QA pass): one line on stderr
naming what is wrong and where, exit 2, never a traceback, never exit 1 (which `diff --check`
means as "the passes differ"). Decorations the viewer drops when malformed (attrs, values,
stats) are dropped here too."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "mlp.graph.msgpack"


def golden() -> dict[str, Any]:
    return msgpack.unpackb(GOLDEN.read_bytes(), raw=False)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args], capture_output=True, text=True, timeout=120
    )


def refused(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 2, (run.returncode, run.stderr)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    return lines[0]


def saved(tmp_path: Path, wire: Any, name: str = "g.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(wire))
    return path


def changed(where: list[Any], value: Any) -> dict[str, Any]:
    wire = copy.deepcopy(golden())
    obj: Any = wire
    for key in where[:-1]:
        obj = obj[key]
    obj[where[-1]] = value
    return wire


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        (["nodes", 3, "params"], "12", "node 3: field 'params' should be a number"),
        (["nodes", 3, "call"], [1], "node 3: field 'call' should be a number"),
        (["nodes", 3, "site"], "m.py:3", "node 3: its site should be a map or nil"),
        (["nodes", 2], 7, "node 2 is not a map"),
        (["nodes", 2, "kind"], None, "node 2: field 'kind' should be a string"),
        (["edges", 1, "src"], "2", "edge 1: field 'src' should be a number"),
        (["error"], "it broke", "'error' should be a map or nil"),
        (["model", "params"], "many", "model: field 'params' should be a number"),
        (["groups", 0], [5, 11], "group 0 is not a map"),
        (["version"], True, "graph version True is not supported"),
    ],
)
def test_a_broken_field_is_named_with_where_it_is(tmp_path, where, value, said) -> None:
    path = saved(tmp_path, changed(where, value))
    line = refused(cli("summary", str(path)))
    assert said in line, line
    assert "not subscriptable" not in line and "indices must be" not in line
    assert said in refused(cli("diff", str(GOLDEN), str(path), "--check"))


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (["nodes", 3, "attrs"], ["dim", 1]),
        (["values"], "yes"),
        (["stats"], "fast"),
        (["warnings"], 3),
    ],
)
def test_a_broken_decoration_is_dropped_as_the_viewer_drops_it(tmp_path, where, value) -> None:
    path = saved(tmp_path, changed(where, value))
    run = cli("summary", str(path))
    assert run.returncode == 0, run.stderr
    assert "GoldenMLP" in run.stdout


def test_a_graph_from_a_newer_torchscope_says_to_update(tmp_path) -> None:
    """It said "is not a torchscope graph: graph version 2 is not supported": a good file
    called none, and no way out (the viewer says to update torchscope)."""
    from torchscope.graph import VERSION

    path = saved(tmp_path, changed(["version"], VERSION + 1))
    for run in (cli("summary", str(path)), cli("diff", str(GOLDEN), str(path))):
        line = refused(run)
        assert "is not a torchscope graph" not in line, line
        assert (
            f"graph format version {VERSION + 1} is newer than this torchscope reads "
            f"(version {VERSION}): update torchscope"
        ) in line, line


def test_json_nested_past_any_graph_is_refused(tmp_path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    line = refused(cli("summary", str(path)))
    assert "nested too deeply" in line, line


def test_msgpack_named_json_is_told_so(tmp_path) -> None:
    path = tmp_path / "g.json"
    path.write_bytes(GOLDEN.read_bytes())
    line = refused(cli("summary", str(path)))
    assert "msgpack" in line and ".msgpack" in line, line
