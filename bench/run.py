"""torchscope tracer benchmark: torchscope vs torchview, torchlens and torchvista.

    python bench/run.py                 # full run: every model x every tool, 5 runs each
    python bench/run.py --quick         # development: 1 run, a small subset, short timeouts
    python bench/run.py --models gpt2,blocks2000 --tools plain,torchscope --runs 3

Each (tool, model) pair runs in a fresh subprocess (bench/worker.py) with a timeout, so peak
RSS never mixes and a peer that fails, crashes or hangs is reported and the run goes on.
Writes a markdown report (bench/results.md; --quick writes bench/results-quick.md, labelled)
and the raw measurements next to it as JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from models import LLAMA_70B, MODELS  # noqa: E402

# torchscope: as it runs by default, with values and costs; torchscope-off: without them
TOOL_ORDER = ["plain", "torchscope", "torchscope-off", "torchview", "torchlens", "torchvista"]
TOOL_LABELS = {
    "plain": "plain forward (no_grad)",
    "torchscope": "torchscope (values + costs)",
    "torchscope-off": "torchscope (values, costs off)",
}
PEERS = ["torchview", "torchlens", "torchvista"]
MARKER = "BENCH-RESULT "
REAL_TRANSFORMERS = ["gpt2", "bert-base", "vit-base", "resnet50"]
QUICK_MODELS = ["gpt2", "blocks2000", "llama3-70b-meta"]

# Targets from issue 2 ("Benchmarks").
T_RATIO = 1.3  # trace <= 1.3x plain forward, each real-tensor model
T_PEER = 0.5  # overhead <= half the best peer's overhead
T_BLOCKS = 3.0  # 2,000-block model <= 3x plain forward
T_META_S = 3.0  # 70B on meta: trace + save <= 3 s
T_META_MB = 1024.0  # ... with peak RSS <= 1 GB
REF_BYTES_PER_NODE = 240
# Targets from issue 10 (values and costs on): the turn-one targets above hold with them off.
T_VALUES_GPT2 = 1.6  # GPT-2 with values and costs <= 1.6x plain forward
T_VALUES_BLOCKS = 6.0  # 2,000 blocks with values and costs <= 6x plain forward

# Why a target is missed, from profiling the tracer (see the "Where the time goes" section).
# Written by hand after `python bench/profile_blocks.py`; keep in step with the code.
WHY: dict[str, str] = {
    "ratio": (
        "Why: part of it is torchscope's fixed Python cost per recorded call (a node, edges "
        "and site per op, a node and a description per module call: tens of µs each), large "
        "next to batch-1 CPU kernels; on ResNet-50 that part is only ~40 ms and the rest sits "
        "inside the convolutions under the trace (see the supplementary note at the end); and "
        "on this loaded machine the ratio moves by tens of percent between runs."
    ),
    "peer": (
        "Why: the same per-call Python cost; the best peer on this model does comparably "
        "little per call (see the table)."
    ),
    "blocks": (
        "The paired measurement of `bench/profile_blocks.py` (plain forward and trace "
        "alternated in one process, median) gave 4.1× (88 vs 358 ms, 5 pairs, 10:37 UTC) and "
        "4.6× (197 vs 900 ms, 15 pairs, 11:08 UTC): most likely **missed** by ~1.4-1.5×. "
        "Why: each of the 8,000 ops and 8,001 module calls costs torchscope tens of µs of "
        "Python against ~11 µs per op for the plain forward, plus whole-model passes before "
        "and after the forward (folding, parameter totals, state snapshot); see *Where the "
        "time goes* below."
    ),
    "meta_time": (
        "Why: 80 decoder layers give ~6,000 nodes recorded in Python at the same per-call cost, "
        "plus serialising them."
    ),
    "meta_rss": "Why: the graph's Python objects (nodes, edges, attrs) before serialisation.",
    "values_gpt2": (
        "Why: the statistics are torch reductions of every tensor (min/max, sum, centred "
        "norm, a zero count, a histogram sample): a few passes over every activation and, on "
        "the first trace of a model, over every weight used directly (GPT-2's Conv1D weights, "
        "85M values, are read once per version and kept between traces, so the cold trace "
        "pays for them and the warm ones do not)."
    ),
    "values_blocks": (
        "Why: 8,000 small tensors: per tensor a copy into a staging buffer and its share of "
        "the batched reductions, about as much as one plain op; on top of the tracer's own "
        "cost per call (target 3)."
    ),
}
SUPPLEMENT_NOTES: str = """
This run is on the tracer after the 11:10–12:05 UTC changes: module hooks read tensors with
torch functions off (they were re-entering the tracer's own mode), weights skip the view-base
lookup (a Python dispatch per property on a Parameter), interned folding signatures and a
cheaper own-weight check. ResNet-50, missed at 1.39–1.87× in the 10:44 run, is met here; its
earlier gap was mostly the per-weight dispatch and load noise. The 2,000-block model is the
remaining miss: about 4× by the median and best-of (2.98× paired), against torchview's ~59×
and torchlens' ~250× in the run above; each op and module call still costs the tracer
~6 µs and ~13 µs of Python (measured with a 4,000-op and a 4,000-module model), on top of
torch's slower hooked module call path, against ~4 µs and ~2 µs for the plain forward.
Llama-3-70B on meta: trace + save 0.47 s median (0.73 s for the first, cold call in the
process), peak RSS 13 MB over the baseline — target 4 met.
"""
PROFILE_NOTES: str = """
From `python bench/profile_blocks.py --runs 15` (cProfile over one trace of the 2,000-block
model; torchscope at commit 23b528c plus the tracer's uncommitted working-tree changes of
11:08 UTC, the code changes under us). Without the profiler, 15 alternated pairs: plain
forward 197 ms, trace 900 ms (4.6×; a quieter run at 10:37 gave 88 vs 358 ms, 4.1×); about
85 % of the trace is spent until the forward returns (setup + recorded forward), 15 % after.
Under the profiler the trace takes 1.88 s; shares of that (an earlier profile at 10:37 had
the same order, with folding smaller):

| where (tracer.py unless named) | calls | cumulative | share |
|---|---:|---:|---:|
| `Recorder._record_call` — node, attrs, edges per op (excluding the op itself) | 8,000 | 0.49 s | 26 % |
| &nbsp;&nbsp;of which `_edge` (producer lookup, shape list, dtype name, constant nodes) | 18,001 | 0.18 s | 10 % |
| &nbsp;&nbsp;of which `_is_own_tensor` (a layer's own weights: set built from `parameters()`/`buffers()`) | 8,000 | 0.06 s | 3 % |
| `Recorder.pre_hook` — a node per module call | 8,001 | 0.38 s | 20 % |
| &nbsp;&nbsp;of which `_info` → `_describe` (`extra_repr`, class info): every module here is distinct, so the per-module cache never hits | 8,001 | 0.19 s | 10 % |
| `folding.fold_repeated_blocks` after the forward (`structure_signatures` alone 0.18 s) | 1 | 0.25 s | 13 % |
| torch's `Module._call_impl` slow path (`inner`), taken because global hooks are set | 8,001 | 0.07 s own | 4 % |
| `parameter_counts` + `ModelState` init/restore + `named_modules` (whole-model passes) | 1 each | ~0.20 s | 11 % |
| `sites.frame_site` (op and module call sites) | 16,001 | 0.06 s | 3 % |

So, in order: per-op bookkeeping (`_record_call`/`_edge`), per-module-call nodes and first-
time module descriptions (`pre_hook`/`_describe`), then repeated-block folding
(`structure_signatures`, one pass over all 16,003 nodes in Python) and the O(modules)
whole-model passes (`parameter_counts`, `ModelState`, `named_modules`). Reaching 3× from
~4-4.6× means removing roughly a third of the overhead; the folding pass and the per-module
description together are about that much in this profile.
"""  # noqa: E501


# -- machine -------------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def git_state() -> str:
    """The torchscope commit measured, and whether its tracer had uncommitted changes."""
    root = os.path.dirname(HERE)
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            text=True,
            capture_output=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "python_helper"],
            cwd=root,
            text=True,
            capture_output=True,
            timeout=10,
        ).stdout.strip()
    except Exception:  # noqa: BLE001
        return "unknown"
    return head + (" + uncommitted changes in python_helper/" if dirty else "")


def machine() -> dict[str, Any]:
    cpu = "unknown"
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    os_name = platform.platform()
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            os_name = f"{line.split('=', 1)[1].strip(chr(34))} ({platform.release()})"
    versions: dict[str, Optional[str]] = {}
    from importlib.metadata import version

    for dist in [
        "torch",
        "transformers",
        "torchscope",
        "torchview",
        "torchlens",
        "torchvista",
        "msgpack",
        "psutil",
    ]:
        try:
            versions[dist] = version(dist)
        except Exception:  # noqa: BLE001
            versions[dist] = None
    return {
        "git": git_state(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "ram_gb": mem_kb / 2**20,
        "os": os_name,
        "python": platform.python_version(),
        "versions": versions,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load_start": os.getloadavg(),
    }


# -- running workers ---------------------------------------------------------------------


def run_worker(tool: str, model: str, runs: int, timeout: float) -> dict[str, Any]:
    cmd = [
        sys.executable,
        os.path.join(HERE, "worker.py"),
        tool,
        model,
        "--runs",
        str(runs),
        "--budget",
        str(timeout * 0.6),
    ]
    t0 = time.perf_counter()
    # own session: on timeout the whole worker process group is ended, by its id
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        cwd=HERE,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return {
            "tool": tool,
            "model": model,
            "status": "timeout",
            "error": f"no result within {timeout:.0f} s",
            "wall_s": time.perf_counter() - t0,
        }
    wall = time.perf_counter() - t0
    for line in reversed(out.splitlines()):
        if line.startswith(MARKER):
            res = json.loads(line[len(MARKER) :])
            res["wall_s"] = wall
            return res
    tail = (err or "").strip().splitlines()[-3:]
    why = f"exit status {proc.returncode}"
    if proc.returncode and proc.returncode < 0:
        why = f"killed by signal {-proc.returncode}"
    return {
        "tool": tool,
        "model": model,
        "status": "crash",
        "error": f"{why}: {' | '.join(tail)[:300]}",
        "wall_s": wall,
    }


# -- derived numbers ---------------------------------------------------------------------


def med(xs: Optional[list[float]]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def derive(rows: list[dict[str, Any]]) -> None:
    """Per row: median plain, median trace, ratio, overhead; per model: vs the best peer."""
    by_model: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        r["plain_med"] = med(r.get("plain_ms"))
        r["trace_med"] = med(r.get("trace_ms"))
        r["after_med"] = med(r.get("plain_after_ms"))
        if r["status"] == "ok" and r["trace_med"] is not None and r["plain_med"]:
            r["ratio"] = r["trace_med"] / r["plain_med"]
            # best-of estimate, robust to load spikes: fastest trace over fastest plain forward.
            # torchscope undoes everything after a trace, so its interleaved plain forwards
            # count too; a peer's may run with the peer's leftovers (torchlens' wrappers).
            plain_all = list(r["plain_ms"])
            if r["tool"].startswith("torchscope"):
                plain_all += r.get("plain_after_ms") or []
            r["plain_best"] = min(plain_all)
            r["ratio_min"] = min(r["trace_ms"]) / r["plain_best"]
            r["overhead"] = r["trace_med"] - r["plain_med"]
            r["overhead_min"] = min(r["trace_ms"]) - r["plain_best"]
            after = r.get("plain_after_ms") or []
            cpu_t, cpu_p = r.get("trace_cpu_ms") or [], r.get("plain_after_cpu_ms") or []
            if r["tool"].startswith("torchscope") and len(cpu_t) == len(cpu_p) and cpu_t:
                # paired on CPU time: each trace over the plain forward just before it
                r["ratio_cpu"] = statistics.median(t / p for t, p in zip(cpu_t, cpu_p) if p > 0)
            if r["tool"].startswith("torchscope") and len(after) == len(r["trace_ms"]):
                # paired: each trace over the plain forward run just before it
                r["ratio_paired"] = statistics.median(
                    t / a for t, a in zip(r["trace_ms"], after) if a > 0
                )
        all_plain = (r.get("plain_ms") or []) + (r.get("plain_after_ms") or [])
        if len(all_plain) > 1:
            r["plain_spread"] = max(all_plain) / min(all_plain)
        by_model.setdefault(r["model"], []).append(r)
    for model_rows in by_model.values():
        for key, out in (("overhead", "vs_best_peer"), ("overhead_min", "vs_best_peer_min")):
            peers = [r for r in model_rows if r["tool"] in PEERS and r.get(key) is not None]
            best = min(peers, key=lambda r: r[key]) if peers else None
            for r in model_rows:
                if best is not None and r.get(key) is not None and best[key] > 0:
                    r[out] = r[key] / best[key]
                    r[out.replace("vs_", "") + "_tool"] = best["tool"]
            if best is not None:
                for r in model_rows:
                    r["best_peer"] = r.get("best_peer_tool")


# -- formatting -----------------------------------------------------------------------


def f_ms(x: Optional[float]) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}"


def f_x(x: Optional[float], digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}×"


def f_num(x: Optional[float], digits: int) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def f_mb(x: Optional[float]) -> str:
    return "–" if x is None else f"{x:,.0f}"


def status_cell(r: dict[str, Any]) -> str:
    if r["status"] == "ok":
        s = "ok"
        if r.get("stopped_early"):
            s += f" ({len(r.get('trace_ms') or [])} runs: budget)"
        return s
    return f"**{r['status']}**: {_md(r.get('error', ''))[:160]}"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def real_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| tool | status | runs | plain fwd ms | trace ms (median) | cold trace ms | trace / plain "
        "| (min / min) | overhead ms | overhead / best peer's | peak RSS Δ MB | nodes "
        "| msgpack B/node | plain after ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        tool = TOOL_LABELS.get(r["tool"], r["tool"])
        vs = (
            f_x(r.get("vs_best_peer"))
            if r["tool"] not in PEERS
            else (f_x(r.get("vs_best_peer")) if r.get("vs_best_peer") is not None else "–")
        )
        if r["tool"] == "plain":
            vs = "–"
        runs = len(r.get("trace_ms") or r.get("plain_ms") or [])
        out.append(
            f"| {tool} | {status_cell(r)} | {runs} | {f_ms(r.get('plain_med'))} | "
            f"{f_ms(r.get('trace_med'))} | {f_ms(r.get('first_ms'))} | {f_x(r.get('ratio'))} | "
            f"{f_x(r.get('ratio_min'))} | "
            f"{f_ms(r.get('overhead'))} | {vs} | {f_mb(r.get('rss_delta_mb'))} | "
            f"{r.get('nodes', '–')} | "
            f"{f_num(r.get('bytes_per_node'), 0)} | {f_ms(r.get('after_med'))} |"
        )
    return out


def meta_table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| tool | status | runs | model build s | plain fwd on meta ms | trace ms (median; "
        "torchscope: trace + save .msgpack) | cold ms | peak RSS Δ MB | peak RSS MB (process) "
        "| nodes | msgpack MB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        tool = TOOL_LABELS.get(r["tool"], r["tool"])
        runs = len(r.get("trace_ms") or r.get("plain_ms") or [])
        mp = r.get("msgpack_bytes")
        out.append(
            f"| {tool} | {status_cell(r)} | {runs} | "
            f"{f_num(r.get('build_s'), 1)} | "
            f"{f_ms(r.get('plain_med'))} | {f_ms(r.get('trace_med'))} | "
            f"{f_ms(r.get('first_ms'))} | {f_mb(r.get('rss_delta_mb'))} | "
            f"{f_mb(r.get('rss_peak_mb'))} | {r.get('nodes', '–')} | "
            f"{f_num(None if mp is None else mp / 2**20, 1)} |"
        )
    return out


def targets(rows: list[dict[str, Any]]) -> list[str]:
    def ts(model: str, tool: str = "torchscope-off") -> Optional[dict[str, Any]]:
        """Targets 1-5 (issue 2) are about the structure-only trace: the off row (the
        default row before values existed, when an old results file is rendered)."""
        for t in (tool, "torchscope") if tool == "torchscope-off" else (tool,):
            for r in rows:
                if r["model"] == model and r["tool"] == t:
                    return r
        return None

    lines: list[str] = []

    def verdict(ok: bool) -> str:
        return "**met**" if ok else "**missed**"

    def why(key: str) -> str:
        return f" {WHY[key]}" if key in WHY else ""

    def judge(med_ok: Optional[bool], min_ok: Optional[bool]) -> str:
        if med_ok is None:
            return verdict(bool(min_ok))
        if min_ok is None or med_ok == min_ok:
            return verdict(med_ok)
        return "**inconclusive** (the median and the best-of estimate disagree: machine noise)"

    def ratio_line(m: str, r: dict[str, Any], limit: float, key: str) -> str:
        ests = [r["ratio"], r["ratio_min"]]
        paired = r.get("ratio_paired")
        if paired is not None:
            ests.append(paired)
        cpu = r.get("ratio_cpu")
        if cpu is not None:
            ests.append(cpu)
        oks = [e <= limit for e in ests]
        if all(oks):
            v = verdict(True)
        elif not any(oks):
            v = verdict(False)
        else:
            lean = "met" if sum(oks) * 2 > len(oks) else "missed"
            v = (
                f"**inconclusive, leaning {lean}** ({sum(oks)} of {len(oks)} estimates within "
                "the budget: machine noise)"
            )
        extra = ""
        if not all(oks):
            extra = f"; at worst {max(ests) / limit:.2f}× the budget.{why(key)}"
        return (
            f"{v} — median {r['ratio']:.2f}× ({f_ms(r['trace_med'])} / "
            f"{f_ms(r['plain_med'])} ms), best-of {r['ratio_min']:.2f}× "
            f"({f_ms(min(r['trace_ms']))} / {f_ms(r['plain_best'])} ms)"
            + ("" if paired is None else f", paired {paired:.2f}×")
            + ("" if cpu is None else f", paired CPU time {cpu:.2f}×")
            + extra
        )

    # 1. trace <= 1.3x plain on the real-tensor transformers models
    lines.append(f"1. **Trace ≤ {T_RATIO}× plain forward** (real-tensor models):")
    for m in REAL_TRANSFORMERS:
        r = ts(m)
        if r is None:
            continue
        if r.get("ratio") is None:
            lines.append(f"   - {m}: not measured ({r['status']}: {_md(r.get('error', ''))[:120]})")
            continue
        lines.append(f"   - {m}: {ratio_line(m, r, T_RATIO, 'ratio')}")
    # 2. overhead <= half the best peer's
    lines.append(f"2. **Overhead ≤ {T_PEER}× the best peer's overhead**:")
    for m in REAL_TRANSFORMERS + ["blocks2000"]:
        r = ts(m)
        if r is None:
            continue
        a, b = r.get("vs_best_peer"), r.get("vs_best_peer_min")
        if a is None and b is None:
            lines.append(
                f"   - {m}: no comparison (torchscope {r['status']}, no peer succeeded, or the "
                "best peer's measured overhead was ≤ 0 — noise larger than the overhead)"
            )
            continue
        parts = []
        if a is not None:
            parts.append(
                f"median: {f_ms(r['overhead'])} ms vs {r['best_peer_tool']}'s "
                f"{f_ms(r['overhead'] / a)} ms = {a:.2f}×"
            )
        if b is not None:
            parts.append(
                f"best-of: {f_ms(r['overhead_min'])} ms vs {r['best_peer_min_tool']}'s "
                f"{f_ms(r['overhead_min'] / b)} ms = {b:.2f}×"
            )
        med_ok = None if a is None else a <= T_PEER
        min_ok = None if b is None else b <= T_PEER
        extra = ""
        if not ((med_ok is None or med_ok) and (min_ok is None or min_ok)):
            worst = max(x for x in (a, b) if x is not None)
            extra = f"; at worst {worst / T_PEER:.2f}× the allowance.{why('peer')}"
        lines.append(f"   - {m}: {judge(med_ok, min_ok)} — {'; '.join(parts)}{extra}")
    # 3. 2,000 blocks <= 3x
    r = ts("blocks2000")
    if r is not None:
        head = f"3. **2,000-block model ≤ {T_BLOCKS:g}× plain**:"
        if r.get("ratio") is None:
            lines.append(f"{head} not measured ({r['status']})")
        else:
            lines.append(f"{head} {ratio_line('blocks2000', r, T_BLOCKS, 'blocks')}")
    # 4. 70B meta
    r = ts("llama3-70b-meta")
    if r is not None:
        if r.get("trace_med") is None:
            lines.append(
                f"4. **Llama-3-70B on meta**: not measured ({r['status']}: "
                f"{_md(r.get('error', ''))[:160]})"
            )
        else:
            s = r["trace_med"] / 1000
            ok = s <= T_META_S
            extra = "" if ok else f", {s / T_META_S:.2f}× the budget.{why('meta_time')}"
            lines.append(
                f"4. **Llama-3-70B on meta, trace + save ≤ {T_META_S:g} s**: {verdict(ok)} — "
                f"{s:.2f} s median (cold, first call in the process: "
                f"{r['first_ms'] / 1000:.2f} s; building the meta model itself, not "
                f"counted: {r['build_s']:.1f} s){extra}"
            )
            d, p = r.get("rss_delta_mb"), r.get("rss_peak_mb")
            if d is not None and p is not None:
                ok = d <= T_META_MB
                lines.append(
                    f"   **peak RSS ≤ 1 GB**: {verdict(ok)} — {d:,.0f} MB over the baseline "
                    "after the "
                    f"model build ({p:,.0f} MB for the whole process, Python + torch + "
                    f"transformers included{'; that too is under 1 GB' if p <= T_META_MB else ''})."
                    + ("" if ok else why("meta_rss"))
                )
    # 5. bytes per node
    bpn = [
        (m, r["bytes_per_node"]) for m in list(MODELS) if (r := ts(m)) and r.get("bytes_per_node")
    ]
    if bpn:
        cells = ", ".join(f"{m} {b:.0f}" for m, b in bpn)
        lines.append(
            f"5. **msgpack bytes per node** (reported; reference ≈ {REF_BYTES_PER_NODE} with "
            f"plain maps): {cells}."
        )
    lines += values_targets(rows, ts, ratio_line, verdict, why)
    return lines


def values_targets(rows, ts, ratio_line, verdict, why) -> list[str]:  # type: ignore[no-untyped-def]
    """Issue 10: with values and costs on (the default trace)."""
    lines: list[str] = []
    if not any(r["tool"] == "torchscope-off" for r in rows):
        return lines
    lines.append("")
    lines.append(
        "With values and costs (statistics of every tensor, the NaN origin, FLOPs, bytes "
        "and time of every call; issue 10):"
    )
    lines.append("")
    for n, (model, limit, key) in enumerate(
        (("gpt2", T_VALUES_GPT2, "values_gpt2"), ("blocks2000", T_VALUES_BLOCKS, "values_blocks")),
        start=6,
    ):
        r = ts(model, "torchscope")
        head = f"{n}. **{model} with values and costs ≤ {limit:g}× plain**:"
        if r is None or r.get("ratio") is None:
            lines.append(f"{head} not measured")
            continue
        cold = r.get("first_ms")
        extra = f" Cold (first) trace in its process: {f_ms(cold)} ms." if cold else ""
        lines.append(f"{head} {ratio_line(model, r, limit, key).rstrip('.')}.{extra}")
    r = ts("llama3-70b-meta", "torchscope")
    if r is not None and r.get("trace_med") is not None:
        s = r["trace_med"] / 1000
        d = r.get("rss_delta_mb")
        ok_t = s <= T_META_S
        ok_m = d is not None and d <= T_META_MB
        lines.append(
            f"8. **Llama-3-70B on meta with costs (FLOPs, bytes per call), trace + save ≤ "
            f"{T_META_S:g} s and ≤ 1 GB**: time {verdict(ok_t)} — {s:.2f} s median (cold "
            f"{r['first_ms'] / 1000:.2f} s); memory {verdict(ok_m)} — "
            f"{'–' if d is None else f'{d:,.0f}'} MB over the baseline after the build."
        )
    growth = []
    for m in MODELS:
        on, off = ts(m, "torchscope"), ts(m, "torchscope-off")
        if not (on and off and on.get("bytes_per_node") and off.get("bytes_per_node")):
            continue
        growth.append(
            f"{m} {off['bytes_per_node']:.0f} → {on['bytes_per_node']:.0f} "
            f"(+{on['bytes_per_node'] - off['bytes_per_node']:.0f})"
        )
    if growth:
        lines.append(
            "9. **Graph size per node, values and costs off → on** (msgpack bytes per node; "
            "reported): " + ", ".join(growth) + "."
        )
    return lines


def report(info: dict[str, Any], rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    v = info["versions"]
    L: list[str] = ["# torchscope tracer benchmark", ""]
    if args.quick:
        L += [
            "> **QUICK RUN (`--quick`): 1 run per measurement, a subset of models, short "
            "timeouts. For development only — these are not the benchmark's results.**",
            "",
        ]
    L += [
        "## Machine",
        "",
        f"- CPU: {info['cpu']}, {info['cores']} cores"
        + (f" ({info['affinity']} usable)" if info.get("affinity") else ""),
        f"- RAM: {info['ram_gb']:.1f} GB",
        f"- OS: {info['os']}",
        f"- Python {info['python']}, torch {v['torch']}, transformers {v['transformers']}",
        f"- torchscope {v['torchscope']} at commit {info['git']}",
        f"- peers: torchview {v['torchview']}, torchlens {v['torchlens']}, "
        f"torchvista {v['torchvista']}",
        f"- Date: {info['date']}; run took {info.get('elapsed_min', 0):.1f} min; load average at "
        f"start {info['load_start'][0]:.2f}, at end {info.get('load_end', (0,))[0]:.2f} "
        "(the machine is shared: other builds were running, expect noise)",
        f"- Runs: median of {args.runs} warm runs per measurement (after one cold run, reported "
        f"separately); each tool × model in a fresh process; timeout {args.timeout:.0f} s each.",
        "",
        "## Method",
        "",
        "- *plain fwd*: `model(*inputs)` under `torch.no_grad()`, 2 warm-up calls, then median "
        "of the timed calls — measured inside every tool's own process just before its traces, "
        "and *trace / plain* uses that process's number, so both halves of a ratio see about the "
        "same machine load. *plain after* is the same forward timed between the warm traces "
        "(plain, trace, plain, trace, …): well above *plain fwd*, it means the tool leaves torch "
        "or the model slower after it has run (or that the load changed).",
        "- *(min / min)*, the best-of estimate: fastest trace over fastest plain forward (for "
        "torchscope, which leaves nothing behind, its interleaved plain forwards count too) — "
        "less sensitive to load spikes than the medians, more to a quiet moment on one side only. "
        "For torchscope, a third, *paired* estimate: the median over runs of each trace divided "
        "by the plain forward timed just before it (drift-resistant), and a fourth, the same "
        "pairs in *CPU time* of the tracing thread (`time.thread_time`; torch runs one thread "
        "here), which leaves out the time other processes held the core. A target is called met "
        "or missed when all estimates agree, *inconclusive* (with the majority) otherwise.",
        "- *overhead* = trace − plain forward. *overhead / best peer's*: divided by the smallest "
        "overhead among the peers that succeeded on that model.",
        "- *peak RSS Δ*: the kernel's peak-RSS mark (VmHWM) is reset after the model build and the "
        "plain forwards; the column is the peak during the traces minus the RSS at that point.",
        "- torchscope: `torchscope.trace(model, *inputs)` (runs under no_grad by default); on "
        "meta, trace + `graph.save('….msgpack')`. *msgpack B/node* = `len(graph.to_msgpack())` / "
        "nodes (nodes = module calls + ops + inputs/outputs/constants). Two rows: *values + "
        "costs*, the default (`values=True, costs=True`: statistics of every tensor, FLOPs, "
        "bytes and time of every call; weights used directly are read once per version and "
        "kept between traces, so the *cold trace* column pays for reading them), and *values, "
        "costs off* (`values=False, costs=False`: the structure only, the trace issue 2's "
        "targets 1–5 are about).",
        "- torchview: `draw_graph(model, input_data=…, device=…, save_graph=False)` (builds the "
        "graphviz source, renders no image) with `depth=inf`, the whole module tree like "
        "torchscope's graph (its default depth=3 fails on GPT-2 with a KeyError in "
        "`render_edges`).",
        "- torchlens: `torchlens.trace(model, inputs, save=None)` — 2.x removed "
        "`log_forward_pass`/`vis_opt`; `trace` draws nothing, and `save=None` keeps metadata "
        "only (no activations), its fastest graph-only mode.",
        "- torchvista: `trace_model(model, inputs)` — builds its full HTML page and hands it to "
        "IPython `display()` (no notebook here: nothing opens, no file is written).",
        "- One intra-op thread (`torch.set_num_threads(1)`) for every model, not only the "
        "2,000-block one: with 2 threads on this 2-core machine shared with other builds, a GPT-2 "
        "forward swung between 0.15 s and 2 s (barrier spinning whenever the other core is "
        "busy); with one, 0.25–0.45 s. `BENCH_THREADS=2` changes it.",
        "- Every model is built from a transformers config or by hand with random weights; "
        "nothing is downloaded.",
        "",
    ]
    for name, spec in MODELS.items():
        model_rows = [r for r in rows if r["model"] == name]
        if not model_rows:
            continue
        model_rows.sort(
            key=lambda r: TOOL_ORDER.index(r["tool"]) if r["tool"] in TOOL_ORDER else 99
        )
        note = next((r.get("note") for r in model_rows if r.get("note")), "")
        L += [f"## {spec.title}", "", f"{note}." if note else "", ""]
        if name == "llama3-70b-meta":
            L += [f"Config: {', '.join(f'{k}={v}' for k, v in LLAMA_70B.items())}.", ""]
        L += (meta_table(model_rows) if spec.meta else real_table(model_rows)) + [""]
    spreads = sorted(r["plain_spread"] for r in rows if r.get("plain_spread"))
    noise = ""
    if spreads:
        noise = (
            f"Noise: within a single process, the same plain forward varied by a factor of "
            f"{statistics.median(spreads):.1f} (median over all processes), up to "
            f"{spreads[-1]:.1f}; differences smaller than that are not resolved by this run "
            "(a torchscope-only run with more runs, where present, follows at the end)."
        )
    L += ["## Targets", "", noise, ""] + targets(rows) + [""]
    if PROFILE_NOTES:
        L += ["## Where the time goes (2,000-block model)", "", PROFILE_NOTES.strip(), ""]
    L += ["Raw measurements: `" + os.path.basename(args.json_out) + "`.", ""]
    return "\n".join(L)


def console_table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'model':<16} {'tool':<11} {'status':<8} {'plain ms':>9} {'trace ms':>9} "
        f"{'ratio':>7} {'ovh ms':>8} {'vs peer':>8} {'RSS Δ MB':>9}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['model']:<16} {r['tool']:<11} {r['status']:<8} {f_ms(r.get('plain_med')):>9} "
            f"{f_ms(r.get('trace_med')):>9} {f_x(r.get('ratio')):>7} {f_ms(r.get('overhead')):>8} "
            f"{f_x(r.get('vs_best_peer')):>8} {f_mb(r.get('rss_delta_mb')):>9}"
            + (f"  {r.get('error', '')[:70]}" if r["status"] != "ok" else "")
        )
    return "\n".join(lines)


def supplement(path: str) -> str:
    """A torchscope-only run with more runs, appended to the report (--supplement)."""
    with open(path) as f:
        saved = json.load(f)
    rows = [r for r in saved["rows"] if r["tool"] == "torchscope"]
    derive(rows)
    m = saved["machine"]
    L = [
        "",
        f"## Supplementary run: torchscope alone, {saved['args']['runs']} runs",
        "",
        f"`python bench/run.py --models {','.join(r['model'] for r in rows)} --tools torchscope "
        f"--runs {saved['args']['runs']}` at {m['date']} (load average {m['load_start'][0]:.1f}; "
        f"torchscope at {m['git']}); raw: `{os.path.basename(path)}`. More runs, no peers: the "
        "better estimate of targets 1 and 3 on this machine.",
        "",
        "| model | plain fwd ms | trace ms | trace / plain (median) | best-of | paired "
        "| plain spread | budget | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if r["model"] == "llama3-70b-meta":
            continue  # its target is trace + save ≤ 3 s, in the notes below, not a ratio
        if r.get("ratio") is None:
            L.append(f"| {r['model']} | {r['status']} | | | | | | | |")
            continue
        limit = T_BLOCKS if r["model"] == "blocks2000" else T_RATIO
        ests = [r["ratio"], r["ratio_min"], r.get("ratio_paired", r["ratio"])]
        oks = [e <= limit for e in ests]
        v = "met" if all(oks) else "missed" if not any(oks) else "inconclusive"
        if v == "missed":
            v += f" (by {min(ests) / limit:.2f}–{max(ests) / limit:.2f}×)"
        L.append(
            f"| {r['model']} | {f_ms(r['plain_med'])} | {f_ms(r['trace_med'])} | "
            f"{r['ratio']:.2f}× | {r['ratio_min']:.2f}× | {f_x(r.get('ratio_paired'))} | "
            f"{r.get('plain_spread', 0):.1f}× | ≤ {limit:g}× | **{v}** |"
        )
    if SUPPLEMENT_NOTES:
        L += ["", SUPPLEMENT_NOTES.strip()]
    return "\n".join(L) + "\n"


def render_only(args: argparse.Namespace) -> int:
    with open(args.render) as f:
        saved = json.load(f)
    for k in ("runs", "timeout", "quick"):
        setattr(args, k, saved["args"][k])
    args.json_out = args.render
    if not args.out:
        args.out = os.path.splitext(args.render)[0] + ".md"
    rows = saved["rows"]
    derive(rows)
    text = report(saved["machine"], rows, args)
    if args.supplement:
        text += supplement(args.supplement)
    with open(args.out, "w") as f:
        f.write(text)
    if not args.quick:
        viewer_section(args.out)
    print(f"wrote {os.path.relpath(args.out)}")
    return 0


def viewer_section(md_path: str) -> None:
    """Append the viewer benchmark's section (bench/viewer/results.json, `make bench-viewer`)
    and the diff benchmark's (bench/diff-results.json, `make bench-diff`)."""
    sys.path.insert(0, os.path.join(HERE, "viewer"))
    try:
        from report import update  # bench/viewer/report.py

        if update(md_path):
            print(f"added the viewer section to {os.path.relpath(md_path)}")
    except Exception as e:  # noqa: BLE001  the tracer report stands on its own
        print(f"viewer section not added: {type(e).__name__}: {e}")
    try:
        from diff import update as update_diff  # bench/diff.py

        if update_diff(md_path):
            print(f"added the diff section to {os.path.relpath(md_path)}")
    except Exception as e:  # noqa: BLE001
        print(f"diff section not added: {type(e).__name__}: {e}")


VALUES_HEAD = "## Values and costs (issue 10)"


def values_section(json_path: str) -> str:
    """The section of bench/results.md for values and costs: a run of the plain forward and
    torchscope with and without them (`--tools plain,torchscope,torchscope-off`)."""
    with open(json_path) as f:
        saved = json.load(f)
    rows = saved["rows"]
    derive(rows)
    m = saved["machine"]
    v = m["versions"]
    L = [
        VALUES_HEAD,
        "",
        f"`python bench/run.py --tools plain,torchscope,torchscope-off --runs "
        f"{saved['args']['runs']}` (raw: `{os.path.basename(json_path)}`): the plain forward and "
        "torchscope with values and costs (the default: statistics of every tensor, the NaN "
        "origin, FLOPs, bytes and time of every call) and without them, each in its own "
        "process, in one run.",
        "",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gb']:.1f} GB RAM, {m['os']}; "
        f"Python {m['python']}, torch {v['torch']}, transformers {v['transformers']}; "
        f"torchscope at commit {m['git']}.",
        f"- {m['date']}, {m.get('elapsed_min', 0):.1f} min; load average "
        f"{m['load_start'][0]:.1f} at the start, {m.get('load_end', (0,))[0]:.1f} at the end. "
        "The machine is shared (other engineers' builds and browser tests ran meanwhile): "
        "wall times swing by factors; read the ratios, and the CPU-time estimate most of all.",
        "- Peers are not in this run (not installed in this environment); their numbers are "
        "in the tables above, from the earlier full run.",
        "",
        "| model | row | plain fwd ms | trace ms | cold trace ms | trace / plain: median | "
        "best-of | paired | paired CPU | peak RSS Δ MB | nodes | msgpack B/node |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in MODELS:
        for r in sorted(
            (r for r in rows if r["model"] == name),
            key=lambda r: TOOL_ORDER.index(r["tool"]) if r["tool"] in TOOL_ORDER else 99,
        ):
            L.append(
                f"| {name} | {TOOL_LABELS.get(r['tool'], r['tool'])} | "
                f"{f_ms(r.get('plain_med'))} | {f_ms(r.get('trace_med'))} | "
                f"{f_ms(r.get('first_ms'))} | {f_x(r.get('ratio'))} | {f_x(r.get('ratio_min'))} | "
                f"{f_x(r.get('ratio_paired'))} | {f_x(r.get('ratio_cpu'))} | "
                f"{f_mb(r.get('rss_delta_mb'))} | {r.get('nodes', '–')} | "
                f"{f_num(r.get('bytes_per_node'), 0)} |"
            )
    L += ["", "Targets, this run (2, the peers' overhead, needs the peers):", ""]
    skipping = False
    for line in targets(rows):
        if line[:1].isdigit():
            skipping = line.startswith("2.")
        if not skipping:
            L.append(line)
    if VALUES_NOTES:
        L += ["", VALUES_NOTES.strip()]
    return "\n".join(L) + "\n"


# Written by hand after the run below; keep in step with the code.
VALUES_NOTES = ""


def update_values_section(md_path: str, json_path: str) -> None:
    """Replace (or add, before the viewer's section) the values-and-costs section."""
    with open(md_path) as f:
        text = f.read()
    section = values_section(json_path)
    start = text.find(VALUES_HEAD)
    if start >= 0:
        nxt = text.find("\n## ", start + len(VALUES_HEAD))
        text = text[:start] + section + ("\n" + text[nxt + 1 :] if nxt >= 0 else "")
    else:
        at = text.find("\n## Viewer")
        text = text + "\n" + section if at < 0 else text[: at + 1] + section + "\n" + text[at + 1 :]
    with open(md_path, "w") as f:
        f.write(text)
    print(f"wrote the values-and-costs section of {os.path.relpath(md_path)}")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick", action="store_true", help="1 run, a subset of models, short timeouts"
    )
    ap.add_argument("--runs", type=int, help="timed runs per measurement (default 5; --quick 1)")
    ap.add_argument("--models", help=f"comma-separated, from: {', '.join(MODELS)}")
    ap.add_argument("--tools", help=f"comma-separated, from: {', '.join(TOOL_ORDER)}")
    ap.add_argument(
        "--timeout", type=float, help="seconds per tool x model (default 420; --quick 120)"
    )
    ap.add_argument(
        "--out", help="markdown report (default bench/results.md; --quick: results-quick.md)"
    )
    ap.add_argument("--render", metavar="JSON", help="only re-write the report from a saved JSON")
    ap.add_argument(
        "--supplement", metavar="JSON", help="with --render: append a torchscope-only run"
    )
    ap.add_argument(
        "--values-section",
        metavar="JSON",
        help="only put the values-and-costs section of a saved run (--tools plain,torchscope,"
        "torchscope-off) into bench/results.md (or --out)",
    )
    args = ap.parse_args(argv)
    if args.values_section:
        update_values_section(args.out or os.path.join(HERE, "results.md"), args.values_section)
        return 0
    if args.render:
        return render_only(args)
    args.runs = args.runs or (1 if args.quick else 5)
    args.timeout = args.timeout or (120.0 if args.quick else 420.0)
    models = (
        args.models.split(",") if args.models else (QUICK_MODELS if args.quick else list(MODELS))
    )
    tools = args.tools.split(",") if args.tools else TOOL_ORDER
    for m in models:
        if m not in MODELS:
            ap.error(f"unknown model {m!r}; choose from {', '.join(MODELS)}")
    for t in tools:
        if t not in TOOL_ORDER:
            ap.error(f"unknown tool {t!r}; choose from {', '.join(TOOL_ORDER)}")
    partial = args.quick or args.models or args.tools or args.runs < 5
    if args.out is None:
        args.out = os.path.join(HERE, "results-quick.md" if partial else "results.md")
    args.quick = bool(partial)  # anything short of the full run is labelled as such
    args.json_out = os.path.splitext(args.out)[0] + ".json"

    info = machine()
    print(
        f"machine: {info['cpu']}, {info['cores']} cores, {info['ram_gb']:.1f} GB; "
        f"torch {info['versions']['torch']}; {info['date']}",
        flush=True,
    )
    t0 = time.time()
    rows: list[dict[str, Any]] = []
    for m in models:
        for t in tools:
            print(f"  {m:<16} {t:<11} …", end=" ", flush=True)
            r = run_worker(t, m, args.runs, args.timeout)
            rows.append(r)
            med_t = med(r.get("trace_ms"))
            print(
                f"{r['status']}"
                + (f"  trace {med_t:,.0f} ms" if med_t else "")
                + (f"  plain {med(r.get('plain_ms')):,.1f} ms" if r.get("plain_ms") else "")
                + (f"  [{r.get('error', '')[:100]}]" if r["status"] != "ok" else "")
                + f"  ({r.get('wall_s', 0):.0f} s)",
                flush=True,
            )
    info["elapsed_min"] = (time.time() - t0) / 60
    info["load_end"] = os.getloadavg()
    derive(rows)
    print()
    print(console_table(rows))
    text = report(info, rows, args)
    with open(args.out, "w") as f:
        f.write(text)
    with open(args.json_out, "w") as f:
        json.dump({"machine": info, "args": vars(args), "rows": rows}, f, indent=1)
    if not partial:
        viewer_section(args.out)
    print(f"\nwrote {os.path.relpath(args.out)} and {os.path.relpath(args.json_out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
