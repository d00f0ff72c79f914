"""Subprocess entry: measure one tool on one model and print one JSON line.

    python bench/worker.py TOOL MODEL [--runs N] [--budget SECONDS]

The JSON line is prefixed with `BENCH-RESULT ` so peers' own printing never confuses the
parent (bench/run.py). A failure inside the tool is reported in the JSON (status "error");
a failure outside it (import, model build) still prints a JSON line, and a crash or a
timeout is reported by the parent from the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MARKER = "BENCH-RESULT "


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget", type=float, default=150.0, help="stop extra runs after this")
    a = ap.parse_args(argv)
    try:
        from tools import TOOLS

        result = TOOLS[a.tool](a.model, a.runs, a.budget)
    except BaseException as exc:  # noqa: BLE001 - always answer the parent
        result = {
            "tool": a.tool,
            "model": a.model,
            "status": "error",
            "error": f"{type(exc).__name__}: {_first_line(exc)}"[:300],
            "traceback": traceback.format_exc(limit=6)[-2000:],
        }
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


if __name__ == "__main__":
    sys.exit(main())
