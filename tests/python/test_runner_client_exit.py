"""The server's runner client when the user's code leaves a process of its own behind that
holds the runner's stderr (a detached child, `start_new_session=True`, outside the runner's
process group, so the kill does not take it): a runner that crashes or runs past its time
is reported when it ends, not when that child lets the pipe go. The real runner process."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from torchscope.server.runner_client import Failure, RunnerClient, start_early

MODEL = """
    import os
    import subprocess
    import sys
    import torch
    from torch import nn

    class Leaves(nn.Module):
        def forward(self, x):
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True
            )
            with open(PIDFILE, "w") as f:
                f.write(str(child.pid))
            if HOW == "crash":
                os._exit(3)
            while True:  # the runner stays busy in user code: only a kill stops it
                pass
"""

# Far below the 5 s the client waited for the runner's pipes to close before it said what
# happened (and 2 s more for each reader): not a speed test, a wait that must not be there.
PROMPT = 3.0


def _run(tmp_path: Path, how: str, timeout: float, early: bool) -> tuple[Failure, float]:
    pidfile = tmp_path / "child.pid"
    model = tmp_path / "leaves.py"
    source = textwrap.dedent(MODEL).replace("PIDFILE", repr(str(pidfile)))
    model.write_text(source.replace("HOW", repr(how)))
    request = {
        "op": "trace",
        "file": str(model),
        "target": "Leaves",
        "input": "torch.zeros(2)",
        "device": "cpu",
        "out": str(tmp_path / "g.msgpack"),
        "timeout": timeout,
    }

    async def main() -> tuple[Failure, float]:
        if early:  # as the server starts its first runner, before its event loop runs
            start_early(sys.executable)
        client = RunnerClient(sys.executable, cwd=None if early else str(tmp_path))
        await client.start()  # (a cold start does not count)
        started = time.monotonic()
        try:
            await client.request(request, timeout=timeout)
        except Failure as exc:
            return exc, time.monotonic() - started
        finally:
            await client.shutdown()
        raise AssertionError("the trace did not fail")

    try:
        return asyncio.run(asyncio.wait_for(main(), 120))
    finally:
        if pidfile.exists() and pidfile.read_text().strip():
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.skipif(os.name != "posix", reason="process groups and sessions are POSIX's")
@pytest.mark.parametrize("early", [False, True], ids=["started", "started-with-the-server"])
def test_a_crash_is_reported_while_a_detached_child_holds_stderr(tmp_path, early):
    failure, took = _run(tmp_path, "crash", timeout=60, early=early)
    assert failure.kind == "runner-crashed", failure
    assert "exited with code 3" in failure.message
    assert took < PROMPT, f"the crash was reported {took:.1f} s after the trace began"


@pytest.mark.skipif(os.name != "posix", reason="process groups and sessions are POSIX's")
@pytest.mark.parametrize("early", [False, True], ids=["started", "started-with-the-server"])
def test_a_timeout_is_reported_while_a_detached_child_holds_stderr(tmp_path, early):
    failure, took = _run(tmp_path, "spin", timeout=1.0, early=early)
    assert failure.kind == "timeout", failure
    assert "ran past 1 s" in failure.message
    assert took < 1.0 + PROMPT, f"the timeout was reported {took:.1f} s after the trace began"
