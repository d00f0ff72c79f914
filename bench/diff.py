"""Benchmark of `torchscope diff`: comparing two traces of GPT-2 and of a 70B Llama on meta.

    python bench/diff.py            # measure, write bench/diff-results.json and the "Diff"
                                    # section of bench/results.md
    python bench/diff.py --runs 3   # fewer timed runs
    python bench/diff.py --print    # print the section from the saved results

Each pair is traced once; then, in this process, `diff_graphs(a, b)` is timed `--runs` times
(median and best reported), and so are the two steps after it: the compare view with the text
diff, and the `torchscope.diff` JSON document. Targets from issue 12: GPT-2 ≤ 100 ms, 70B on
meta ≤ 1 s (the diff itself). bench/run.py keeps the section when it rewrites results.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "diff-results.json")
START = "<!-- diff:start -->"
END = "<!-- diff:end -->"
TARGET_MS = {"gpt2": 100.0, "llama70b": 1000.0}


def _gpt2(n_layer: int = 12, n_embd: int = 768, n_head: int = 12):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=n_layer, n_embd=n_embd, n_head=n_head)).eval()
    return model, (torch.randint(0, 50257, (1, 64)),), {}


def _llama(layers: int = 80, intermediate: int = 28672):
    """The examples/llama70b.py architecture (LlamaModel, Llama-3-70B config) on meta."""
    import torch
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(
        hidden_size=8192,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=64,
        num_key_value_heads=8,
        vocab_size=128256,
        max_position_embeddings=8192,
        rope_theta=500000.0,
    )
    with torch.device("meta"):
        model = LlamaModel(config).eval()
        ids = torch.randint(0, 128256, (1, 32))
    return model, (), {"input_ids": ids}


def _example_llama():
    """examples/llama70b.py:llama70b, built as `torchscope diff … --device meta` builds it."""
    from torchscope.build_target import build, call_arguments

    built = build(os.path.join(ROOT, "examples", "llama70b.py") + ":llama70b", device="meta")
    args, kwargs = call_arguments(built, "meta")
    return built.model, args, kwargs


PAIRS: list[tuple[str, str, str, Callable[[], Any], Callable[[], Any]]] = [
    ("gpt2", "identical", "the same model traced twice", _gpt2, _gpt2),
    ("gpt2", "block removed", "12 → 11 layers", _gpt2, lambda: _gpt2(n_layer=11)),
    (
        "gpt2",
        "every width changed",
        "n_embd 768 → 1024 (n_head 16): every node changed",
        _gpt2,
        lambda: _gpt2(n_embd=1024, n_head=16),
    ),
    (
        "llama70b",
        "identical",
        "examples/llama70b.py on meta, traced twice",
        _example_llama,
        _example_llama,
    ),
    ("llama70b", "layer removed", "80 → 79 layers", _llama, lambda: _llama(layers=79)),
    (
        "llama70b",
        "every MLP changed",
        "intermediate_size 28672 → 14336",
        _llama,
        lambda: _llama(intermediate=14336),
    ),
]


def _trace(factory: Callable[[], Any]):
    import torchscope

    model, args, kwargs = factory()
    return torchscope.trace_call(model, args, kwargs)


def _timed(fn: Callable[[], Any], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of each run: on this shared 2-core machine the wall time
    grows with the other jobs' load, the CPU time much less."""
    wall, cpu = [], []
    for _ in range(runs):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return wall, cpu


def measure(runs: int) -> dict[str, Any]:
    import torch

    from torchscope.compare import compare_view
    from torchscope.diff import diff_graphs
    from torchscope.diff_text import render_text

    torch.set_num_threads(1)
    rows = []
    for model, case, note, make_a, make_b in PAIRS:
        a, b = _trace(make_a), _trace(make_b)
        d = diff_graphs(a, b)
        row = {
            "model": model,
            "case": case,
            "note": note,
            "nodes": [len(a.nodes), len(b.nodes)],
            "edges": [len(a.edges), len(b.edges)],
            "added": len(d.added()),
            "removed": len(d.removed()),
            "changed": len(d.details),
            "same": d.same,
        }
        for key, fn in (
            ("diff", lambda a=a, b=b: diff_graphs(a, b)),
            ("text", lambda d=d: render_text(compare_view(d))),
            ("json", lambda d=d: json.dumps(d.to_wire(), ensure_ascii=False)),
        ):
            row[f"{key}_ms"], row[f"{key}_cpu_ms"] = _timed(fn, runs)
        row["load"] = os.getloadavg()[0]
        print(
            f"  {model:<9} {case:<20} nodes {row['nodes'][0]:>5}/{row['nodes'][1]:<5} "
            f"diff {statistics.median(row['diff_ms']):7.1f} ms "
            f"(cpu {statistics.median(row['diff_cpu_ms']):6.1f})  "
            f"view+text {statistics.median(row['text_ms']):7.1f} ms  "
            f"json {statistics.median(row['json_ms']):6.1f} ms",
            flush=True,
        )
        rows.append(row)
    return {"machine": _machine(), "runs": runs, "rows": rows}


def _machine() -> dict[str, Any]:
    import torch

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    try:
        commit = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "commit": commit,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load": os.getloadavg()[0],
    }


def section(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        "## Diff (`torchscope diff`)",
        "",
        f"`python bench/diff.py`: {m['date']}, {m['cpu']} ({m['cores']} cores, load average "
        f"{m['load']:.2f} at start), Python {m['python']}, torch {m['torch']}, commit "
        f"{m['commit']}. Each pair traced once; each step timed {results['runs']} times in one "
        "process: wall-clock median (best) and, after the slash, the median CPU time of the "
        "process, which the other jobs on this shared machine inflate much less. *diff*: "
        "`diff_graphs(a, b)`, the comparison itself (the issue's target); "
        "*view + text*: `compare_view` (the merged graph the compare page will draw) and "
        "`render_text` after it; *json*: the `torchscope.diff` document serialised; *load*: "
        "the 1-minute load average after the row.",
        "",
        "| model | case | nodes a / b | added / removed / changed / same | diff ms | "
        "view + text ms | json ms | load | target |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results["rows"]:
        target = TARGET_MS[r["model"]]
        verdict = _verdict(r, target)
        lines.append(
            f"| {r['model']} | {r['case']}: {r['note']} | {r['nodes'][0]:,} / {r['nodes'][1]:,} "
            f"| {r['added']:,} / {r['removed']:,} / {r['changed']:,} / {r['same']:,} "
            f"| {_ms(r, 'diff')} | {_ms(r, 'text')} | {_ms(r, 'json')} | {r['load']:.1f} "
            f"| ≤ {target:,.0f} ms: {verdict} |"
        )
    lines.append("")
    lines.append(
        "Three estimates per row, as in the tracer benchmark: the wall-clock median, the best "
        "wall-clock run and the median CPU time. *met*: all three within the target; "
        "*missed*: none; *inconclusive*: the estimates disagree (named: those over the "
        "target), which on this machine means the other jobs' load decided it."
    )
    return "\n".join(lines)


def _verdict(row: dict[str, Any], target: float) -> str:
    estimates = {
        "median": statistics.median(row["diff_ms"]),
        "best": min(row["diff_ms"]),
        "CPU": statistics.median(row["diff_cpu_ms"]),
    }
    over = [name for name, ms in estimates.items() if ms > target]
    if not over:
        return "met"
    if len(over) == len(estimates):
        return "**missed**"
    return f"inconclusive ({', '.join(over)} over)"


def _ms(row: dict[str, Any], key: str) -> str:
    wall, cpu = row[f"{key}_ms"], row[f"{key}_cpu_ms"]
    return f"{statistics.median(wall):,.1f} ({min(wall):,.1f}) / {statistics.median(cpu):,.1f}"


def update(md_path: str, results_path: str = RESULTS) -> bool:
    """Replace the diff section of `md_path` (or append it). False if no results yet."""
    if not os.path.exists(results_path):
        return False
    with open(results_path) as f:
        results = json.load(f)
    text = open(md_path).read() if os.path.exists(md_path) else ""
    block = f"{START}\n{section(results)}\n{END}"
    if START in text and END in text:
        a, b = text.index(START), text.index(END) + len(END)
        text = text[:a] + block + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(md_path, "w") as f:
        f.write(text)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--print", action="store_true", help="print the section of the saved results")
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"))
    args = ap.parse_args()
    if args.print:
        with open(RESULTS) as f:
            print(section(json.load(f)))
        return 0
    sys.path.insert(0, os.path.join(ROOT, "python_helper"))
    results = measure(args.runs)
    with open(RESULTS, "w") as f:
        json.dump(results, f, indent=1)
    update(args.out)
    print(f"wrote {os.path.relpath(RESULTS)} and the diff section of {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
