"""How soon the editor has GPT-2's shape hints after a trace (issue 11: "within 50 ms").

    python bench/hints_latency.py [--runs 10]

Starts the real language server (`python -m torchscope.server`, pygls's LanguageClient over
stdio, as tests/python/test_server_lsp.py does), opens examples/gpt2.py and transformers'
modeling_gpt2.py in the client, traces the `gpt2` factory once to warm the runner, then per
run: sends `torchscope/trace`, and the moment its result arrives asks for the inlay hints of
the traced file and of modeling_gpt2.py (where GPT-2's forward lines are). Measured from the
result to each inlay-hint response, and to the server's `workspace/inlayHint/refresh`; the
server's own log gives the time it spent reading and indexing the graph file. Writes
bench/results-hints.json (with the machine) and prints a summary; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "bench"))

from lsprotocol import types  # noqa: E402
from run import machine  # noqa: E402
from test_server_lsp import Session, server_env, uri  # noqa: E402

EXAMPLES = ROOT / "examples"
GPT2 = EXAMPLES / "gpt2.py"


def stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "median": statistics.median(xs),
        "p90": xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))],
        "min": xs[0],
        "max": xs[-1],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results-hints.json"))
    a = ap.parse_args()
    import transformers.models.gpt2.modeling_gpt2 as modeling

    library = Path(modeling.__file__ or "")
    info = machine()
    storage = tempfile.mkdtemp(prefix="ts-hints-bench-")
    session = Session(sys.executable, server_env(), EXAMPLES, 600, {"storageDir": storage})
    rows: list[dict[str, Any]] = []
    try:
        for path in (GPT2, library):
            doc = types.TextDocumentItem(
                uri=uri(path), language_id="python", version=1, text=path.read_text()
            )
            session.client.text_document_did_open(
                types.DidOpenTextDocumentParams(text_document=doc)
            )

        def hints_request(path: Path) -> Any:
            lines = path.read_text().count("\n") + 1
            params = types.InlayHintParams(
                text_document=types.TextDocumentIdentifier(uri=uri(path)),
                range=types.Range(
                    start=types.Position(line=0, character=0),
                    end=types.Position(line=lines, character=0),
                ),
            )
            return session.client.text_document_inlay_hint_async(params)

        async def one() -> dict[str, Any]:
            refreshes = session.refreshes
            result = await session.client.protocol.send_request_async(
                "torchscope/trace", {"uri": uri(GPT2), "target": "gpt2"}
            )
            t0 = time.perf_counter()

            async def timed(path: Path) -> tuple[float, int]:
                found = await hints_request(path)
                return (time.perf_counter() - t0) * 1000, len(found or [])

            (traced_ms, traced_n), (library_ms, library_n) = await asyncio.gather(
                timed(GPT2), timed(library)
            )
            while session.refreshes == refreshes:
                await asyncio.sleep(0.001)
            refresh_ms = (time.perf_counter() - t0) * 1000
            return {
                "graph_bytes": result.size,
                "nodes": result.summary.nodes,
                "traced_file_ms": traced_ms,
                "traced_file_hints": traced_n,
                "library_ms": library_ms,
                "library_hints": library_n,
                "refresh_ms": refresh_ms,
            }

        session.run(one(), 600)  # cold: starts Python, imports torch and transformers
        for _ in range(a.runs):
            rows.append(session.run(one(), 600))
    finally:
        session.close()
    logged = [line for line in session.logs if line.startswith("hints: ")][1:]  # [0]: cold
    # the server's own times, logged once per trace: "… in W ms (C ms CPU reading and indexing)"
    indexed = [float(line.split(" in ")[-1].split()[0]) for line in logged]
    cpu = [float(line.rsplit("(", 1)[1].split()[0]) for line in logged]
    info["load_end"] = os.getloadavg()
    report = {
        "machine": info,
        "model": "examples/gpt2.py: gpt2() (GPT2Model, 12 layers, 1x64 tokens)",
        "graph": {"nodes": rows[0]["nodes"], "bytes": rows[0]["graph_bytes"]},
        "runs": rows,
        "ms": {
            "result_to_traced_file_hints": stats([r["traced_file_ms"] for r in rows]),
            "result_to_modeling_gpt2_hints": stats([r["library_ms"] for r in rows]),
            "result_to_refresh_request": stats([r["refresh_ms"] for r in rows]),
            "server_read_and_index": stats(indexed) if indexed else None,
            "server_read_and_index_cpu": stats(cpu) if cpu else None,
        },
        "hints": {
            "traced_file": rows[0]["traced_file_hints"],
            "modeling_gpt2": rows[0]["library_hints"],
        },
    }
    Path(a.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["ms"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
