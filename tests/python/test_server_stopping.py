"""Stopping the runner on purpose while it traces, through the real server over stdio: the
trace's answer says why (not "killed by SIGKILL (most likely out of memory)", which made the
editor offer the meta device when the server was only restarted)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from test_server_lsp import HANGS, Session, server_env, uri, write


def _tracing(session: Session, path: Any, token: str) -> Any:
    """A trace of the never-ending forward, once the runner says it traces."""
    params = {"uri": uri(path), "target": "Spin", "input": "torch.zeros(2)", "workDoneToken": token}
    future = session.client.protocol.send_request("torchscope/trace", params)
    session.wait_for(
        lambda: any(v.get("message") == "Tracing" for t, v in session.progress if t == token)
    )
    return future


def _failure(session: Session, future: Any) -> JsonRpcException:
    async def wait() -> Any:
        return await asyncio.wrap_future(future)

    with pytest.raises(JsonRpcException) as info:
        session.run(wait(), 20)
    return info.value


def test_a_trace_when_the_server_shuts_down(tmp_path):
    ws = tmp_path.resolve()
    path = write(ws, "hangs.py", HANGS)
    session = Session(sys.executable, server_env(), ws, 120)
    try:
        future = _tracing(session, path, "shutdown")
        shut = session.client.protocol.send_request("shutdown", None)
        err = _failure(session, future)
        assert err.data["kind"] == "runner-stopped", (err.data, err.message)
        assert "the language server is shutting down" in err.message
        assert "SIGKILL" not in err.message and "memory" not in err.message

        async def wait_shut() -> Any:
            return await asyncio.wrap_future(shut)

        session.run(wait_shut(), 20)
        assert not any("out of memory" in line for line in session.logs), session.logs
        session.client.exit(None)
        session.run(session.client.stop(), 20)
        session.killed = True  # (shut down and gone: close only ends the loop)
    finally:
        session.close()


def test_a_trace_when_the_runner_is_shut_down(tmp_path):
    """`torchscope/shutdownRunner` (the editor's interpreter changed) while a trace runs; the
    next trace starts a runner again."""
    ws = tmp_path.resolve()
    path = write(ws, "hangs.py", HANGS)
    write(ws, "small.py", "import torch\nfrom torch import nn\nnet = nn.Linear(2, 2)\n")
    session = Session(sys.executable, server_env(), ws, 120)
    try:
        future = _tracing(session, path, "runner")
        assert session.request("torchscope/shutdownRunner", {}) is None
        err = _failure(session, future)
        assert err.data["kind"] == "runner-stopped", (err.data, err.message)
        assert "SIGKILL" not in err.message
        got = session.request(
            "torchscope/trace",
            {"uri": uri(ws / "small.py"), "target": "net", "input": "torch.randn(1, 2)"},
        )
        assert got["summary"]["error"] is None
    finally:
        session.close()
