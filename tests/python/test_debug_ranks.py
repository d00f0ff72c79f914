"""The paused-frame trace in one rank of a real 2-rank torchrun program (FSDP2, gloo, CPU),
through the real debugpy: rank 0 is paused at a breakpoint while rank 1 waits in a
collective. The trace says which rank it ran in, sends nothing (its collectives are done on
rank 0 alone, so neither rank hangs), and the program then finishes exactly as a run that
was never paused or traced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dap_client import AttachedSession, marker_lines, request_expression  # noqa: E402
from test_distributed import free_port  # noqa: E402

from torchscope.graph import from_wire  # noqa: E402

pytest.importorskip("debugpy")

HERE = Path(__file__).resolve().parent
PROGRAM = str(HERE / "debuggees" / "ranks.py")


def launch(out: Path, debug_port: int | None) -> subprocess.Popen[str]:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if debug_port is not None:
        env["DEBUG_PORT"] = str(debug_port)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    cmd += ["--master_addr", "127.0.0.1", "--master_port", str(free_port()), PROGRAM, str(out)]
    return subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(proc: subprocess.Popen[str], out: Path) -> list[list[float]]:
    text, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, text
    return [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]


def test_trace_paused_in_one_rank(tmp_path: Path) -> None:
    plain = launch(tmp_path / "plain", None)
    plain_outputs = finish(plain, tmp_path / "plain")  # one at a time: two cores
    port = free_port()
    proc = launch(tmp_path / "debugged", port)
    session = None
    try:
        session = AttachedSession("127.0.0.1", port)
        line = marker_lines(PROGRAM, "paused")[0]
        session.attach({PROGRAM: [{"line": line}]})
        _, thread, frames = session.wait_stopped(timeout=120)
        assert frames[0]["line"] == line
        frame = frames[0]["id"]

        def call(**request: object) -> dict:
            text = session.evaluate(request_expression(request), frame, timeout=120)
            return json.loads(text)

        graph_file = tmp_path / "rank0.msgpack"
        reply = call(op="trace", expr="model", input="x", out=str(graph_file))
        assert reply["ok"], reply
        summary = reply["summary"]
        assert (summary["rank"], summary["worldSize"]) == (0, 2)
        assert summary["error"] is None
        assert any("rank 0 traced alone" in w for w in summary["warnings"])
        g = from_wire(msgpack.unpackb(graph_file.read_bytes()))
        assert (g.model.rank, g.model.world_size) == (0, 2)
        gathers = g.collectives()
        # the two sharded layers' all-gathers, recorded but done on this rank alone
        assert [n.name for n in gathers] == ["all_gather_into_tensor"] * 2
        assert all(n.attrs["local"] is True and n.attrs["group_size"] == 2 for n in gathers)
        assert [g.nodes[n.parent].path for n in gathers] == ["0", "2"]

        # a forward that talks to one other rank cannot be done alone: a clear error, at once
        relay = call(op="trace", expr="relay", input="x", out=str(tmp_path / "relay.msgpack"))
        assert relay["ok"], relay
        error = relay["summary"]["error"]
        assert error is not None and "point-to-point" in error["message"]
        assert "paused at a breakpoint" in error["message"]

        session.cont(thread)
    finally:
        if session is not None:
            session.close()
    outputs = finish(proc, tmp_path / "debugged")
    assert outputs == plain_outputs  # the program's own results, as if never paused
    for first, second, _ in outputs:
        assert first == second
