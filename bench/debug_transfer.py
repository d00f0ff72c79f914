"""How a very large graph travels from a paused debuggee (issue 5's "100 MB graph" measure).

    python bench/debug_transfer.py [--blocks 3000] [--repeat 60]

Starts the real debugpy adapter on tests/python/debuggees/trainer.py (a model of BLOCKS
blocks × REPEAT ops each, never run by the program), pauses in its training loop, and
through DAP `evaluate` (as the extension does): traces that model into a file, times a
trivial evaluate right after (the session is alive and answers at once), fetches the file
again the remote-attach way (`read_chunk`, 4 MiB per evaluate), then lets the program finish
and checks its output against a plain run. Prints one JSON line; nothing is asserted.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))

from dap_client import DapSession, marker_lines, request_expression  # noqa: E402

TRAINER = str(ROOT / "tests" / "python" / "debuggees" / "trainer.py")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=60)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ts-debug-transfer-"))
    wrapper = tmp / "run_trainer.py"
    wrapper.write_text(
        "import runpy, sys\n"
        f"sys.argv = [{TRAINER!r}, '{a.blocks}', '{a.repeat}']\n"
        f"runpy.run_path({TRAINER!r}, run_name='__main__')\n"
    )
    plain = subprocess.run(
        [sys.executable, TRAINER, str(a.blocks), str(a.repeat)], capture_output=True, text=True
    )
    step = marker_lines(TRAINER, "step")[0]
    s = DapSession(sys.executable, log_dir=str(tmp))
    result: dict = {"blocks": a.blocks, "repeat": a.repeat}
    try:
        s.launch(str(wrapper), {TRAINER: [{"line": step, "condition": "step == 0"}]})
        _, thread, frames = s.wait_stopped(0, 120)
        frame = frames[0]["id"]

        def call(timeout: float = 600, **req: object) -> dict:
            return json.loads(s.evaluate(request_expression(req), frame, timeout=timeout))

        out = tmp / "deep.msgpack"
        t0 = time.perf_counter()
        reply = call(
            op="trace", expr="deep", input="torch.randn(2, 4)", out=str(out), timeBudget=600
        )
        result["trace_evaluate_s"] = round(time.perf_counter() - t0, 2)
        result["ok"] = reply.get("ok")
        result["bytes"] = reply.get("size")
        result["reply_chars"] = len(json.dumps(reply))
        result["nodes"] = reply.get("summary", {}).get("nodes")
        t0 = time.perf_counter()
        s.evaluate("1 + 1", frame)
        result["next_evaluate_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        # remote attach: the same bytes in chunks of at most 4 MiB
        t0, offset, digest, chunks = time.perf_counter(), 0, hashlib.sha256(), 0
        while True:
            part = call(op="read_chunk", path=str(out), offset=offset, size=4 << 20)
            data = base64.b64decode(part["data"])
            digest.update(data)
            offset += len(data)
            chunks += 1
            if part.get("eof") or not data:
                break
        result["chunked_s"] = round(time.perf_counter() - t0, 2)
        result["chunks"] = chunks
        result["chunked_same_bytes"] = (
            digest.hexdigest() == hashlib.sha256(out.read_bytes()).hexdigest()
        )
        s.request("setBreakpoints", {"source": {"path": TRAINER}, "breakpoints": []})
        since = s.cont(thread)
        s.wait_end(since, timeout=300)
        result["same_output_as_plain_run"] = s.output() == plain.stdout
    finally:
        s.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
