"""A paused program's first trace of GPT-2, with and without the read-ahead of `warm`.

    python bench/paused_first_trace.py [--pairs 3] [--read-ms 1000]

Starts the real debugpy adapter on bench/paused_gpt2.py (GPT-2, 12 layers, random weights,
64 tokens), paused in its forward, and sends what the extension sends through DAP `evaluate`:
`candidates`, `warm` (with the listed model's expression, or without: the read-ahead off),
a pause as a user reads the list, then three traces of `self`. Each pair of fresh debuggees
runs once each way, alternated. Prints one JSON line per debuggee and the medians; the
first trace minus the later ones is what a first trace pays once.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))

from dap_client import DapSession, marker_lines, request_expression  # noqa: E402

PROGRAM = ROOT / "bench" / "paused_gpt2.py"  # stops at its BREAK line


def one_debuggee(tmp: Path, read_ahead: bool, read_ms: int) -> dict:
    line = marker_lines(str(PROGRAM), "paused")[0]
    s = DapSession(sys.executable, log_dir=str(tmp))
    try:
        s.launch(str(PROGRAM), {str(PROGRAM): [{"line": line}]})
        _, thread, frames = s.wait_stopped(0, 180)
        frame = frames[0]["id"]

        def call(**req: object) -> dict:
            return json.loads(s.evaluate(request_expression(req), frame, timeout=600))

        assert call(op="candidates")["ok"]
        warm = call(op="warm", **({"expr": "self"} if read_ahead else {}))
        time.sleep(read_ms / 1000)
        traces = []
        for i in range(3):
            reply = call(op="trace", expr="self", out=str(tmp / f"g{i}.msgpack"), timeBudget=120)
            assert reply["ok"], reply
            traces.append(reply["summary"]["trace_ms"])
        s.cont(thread)
        return {
            "read_ahead": read_ahead,
            "warm_ms": warm.get("elapsed_ms"),
            "read_ahead_values": warm.get("readAhead", 0),
            "trace_ms": [round(t, 1) for t in traces],
            "first_extra_ms": round(traces[0] - statistics.median(traces[1:]), 1),
        }
    finally:
        s.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--read-ms", type=int, default=1000)
    a = ap.parse_args()
    runs: dict[bool, list[dict]] = {True: [], False: []}
    for _ in range(a.pairs):
        for ahead in (True, False):
            with tempfile.TemporaryDirectory(prefix="ts-paused-first-") as tmp:
                r = one_debuggee(Path(tmp), ahead, a.read_ms)
            runs[ahead].append(r)
            print(json.dumps(r), flush=True)
    for ahead, rs in runs.items():
        first = statistics.median(r["trace_ms"][0] for r in rs)
        extra = statistics.median(r["first_extra_ms"] for r in rs)
        print(
            f"read-ahead {'on ' if ahead else 'off'}: first trace median {first:.0f} ms, "
            f"above the later ones by {extra:.0f} ms (median of {len(rs)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
