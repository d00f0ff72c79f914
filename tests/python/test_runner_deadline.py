"""When the server gives up on its runner. The runner stops a forward itself at the request's
budget (the tracer's own check at torch calls; its timer for a loop of pure Python), then
makes and writes the graph: that is torchscope's own work, which on a big graph takes seconds.
The server killed the runner 1 s after the budget whatever it was doing, so a trace stopped
by its budget with much recorded, or one done in time whose graph took long to write, lost
the warm runner (QA: 200,000 recorded calls, a 231 MB graph). The real runner process; the
slow part is made slow on purpose (a sitecustomize on the runner's path), as a big graph is."""

from __future__ import annotations

import asyncio
import textwrap
import time
from pathlib import Path

from torchscope.server.runner_client import Failure, RunnerClient

SLOW = """
    import time
    import torchscope.tracefile as tracefile
    import torchscope.tracer as tracer

    def slowly(f):
        def slow(*args, **kwargs):
            time.sleep({seconds})
            return f(*args, **kwargs)
        return slow

    {patch}
"""

MODEL = """
    import torch
    from torch import nn

    class Quick(nn.Module):
        def forward(self, x):
            return torch.relu(x) + 1

    class Ops(nn.Module):  # torch calls until the tracer's budget stops it
        def forward(self, x):
            while True:
                x = torch.tanh(x)

    class Spin(nn.Module):  # pure Python: only the runner's timer stops it
        def forward(self, x):
            while True:
                pass
"""


def _run(tmp_path: Path, monkeypatch, target: str, timeout: float, patch: str = ""):
    site = tmp_path / "site"
    site.mkdir()
    if patch:
        (site / "sitecustomize.py").write_text(textwrap.dedent(SLOW).format(seconds=3, patch=patch))
    monkeypatch.setenv("PYTHONPATH", str(site))
    (tmp_path / "models.py").write_text(textwrap.dedent(MODEL))
    request = {
        "op": "trace",
        "file": str(tmp_path / "models.py"),
        "target": target,
        "input": "torch.zeros(2)",
        "device": "cpu",
        "out": str(tmp_path / "g.msgpack"),
        "timeout": timeout,
    }
    logs: list[str] = []
    stages: list[str] = []

    async def main():
        client = RunnerClient(cwd=str(tmp_path), log=lambda level, message: logs.append(message))
        await client.start()
        pid = client.pid
        try:
            try:
                result = await client.request(request, timeout=timeout, progress=stages.append)
            except Failure as exc:
                result = exc
            return result, pid, client.pid
        finally:
            await client.shutdown()

    return asyncio.run(asyncio.wait_for(main(), 120)), logs, stages


def test_a_graph_slow_to_write_is_waited_for(tmp_path, monkeypatch):
    """Traced in time; writing the graph takes past the budget: the server waits for it."""
    patch = "tracefile.write_atomic = slowly(tracefile.write_atomic)"
    (result, before, after), logs, stages = _run(tmp_path, monkeypatch, "Quick", 1.0, patch)
    assert not isinstance(result, Failure), result
    assert Path(result["path"]).exists()
    assert "Writing the graph" in stages, stages
    assert before == after and not any("killing the runner" in line for line in logs), logs


def test_a_trace_its_budget_stopped_is_waited_for_while_it_ends(tmp_path, monkeypatch):
    """The tracer stopped the forward at the budget and makes the partial graph, past the
    budget: the runner answers `timeout` itself and stays."""
    patch = "tracer.fold_repeated_blocks = slowly(tracer.fold_repeated_blocks)"
    (result, before, after), logs, _ = _run(tmp_path, monkeypatch, "Ops", 1.0, patch)
    assert isinstance(result, Failure) and result.kind == "timeout", result
    assert result.extra.get("stage") == "trace", result.extra
    assert before == after and not any("killing the runner" in line for line in logs), logs


def test_a_forward_looping_in_pure_python_is_stopped_by_the_runner(tmp_path, monkeypatch):
    """No torch call: the runner's timer stops it (was: the server killed the runner, and
    the next trace waited for a cold one)."""
    started = time.monotonic()
    (result, before, after), logs, _ = _run(tmp_path, monkeypatch, "Spin", 1.0)
    assert isinstance(result, Failure) and result.kind == "timeout", result
    assert "ran past 1 s" in result.message
    assert before == after and not any("killing the runner" in line for line in logs), logs
    assert time.monotonic() - started < 60


def test_a_cancelled_trace_leaves_no_runner_crash_behind(tmp_path, caplog):
    """A cancelled trace kills the runner on purpose; its request's future was still pending
    then, got "the Python runner was killed by SIGKILL (most likely out of memory)" and, read
    by nobody, asyncio logged it as an error at every cancel (QA, long sessions)."""
    import gc
    import logging

    (tmp_path / "models.py").write_text(textwrap.dedent(MODEL))
    request = {
        "op": "trace",
        "file": str(tmp_path / "models.py"),
        "target": "Spin",
        "input": "torch.zeros(2)",
        "device": "cpu",
        "out": str(tmp_path / "g.msgpack"),
        "timeout": 60,
    }
    stages: list[str] = []

    async def main():
        client = RunnerClient(cwd=str(tmp_path), log=lambda level, message: None)
        await client.start()
        try:
            task = asyncio.ensure_future(
                client.request(request, timeout=60, progress=stages.append)
            )
            while "Tracing" not in stages:
                await asyncio.sleep(0.05)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            await asyncio.sleep(0.5)  # (the runner's stdout closes: its reader ends)
            gc.collect()  # (an unread future's exception is logged when it is freed)
            await asyncio.sleep(0)
        finally:
            await client.shutdown()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(asyncio.wait_for(main(), 120))
        gc.collect()
    assert not [r for r in caplog.records if r.name == "asyncio"], caplog.text
