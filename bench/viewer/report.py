"""The "Viewer" section of bench/results.md, from bench/viewer/results.json (run.ts).

    python bench/viewer/report.py [bench/results.md]   # replace (or append) the section
    python bench/viewer/report.py --print              # print it

bench/run.py calls `update()` after it rewrites bench/results.md, so the section survives a
tracer run.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results.json")
START = "<!-- viewer:start -->"
END = "<!-- viewer:end -->"

# Targets from issue 3 ("Benchmarks").
FIRST_S = 0.5
EXPAND_S = 0.2
ALL_S = 5.0
LONG_MS = 100

# Why a target is missed, from profiling the page (performance marks, worker timestamps,
# long tasks) on this machine; written by hand, keep in step with webview/src.
WHY: dict[str, str] = {
    "first": (
        "Why: the path to the first picture is (1) the browser parsing the 2-5 MB page and "
        "compiling the 2 MB inline bundle, ~1/3 of which is the layout worker's source with "
        "Graphviz's WASM embedded as a string (boot mark at ~0.2-0.4 s under this load; "
        "~0.05 s for the same page without the bundle); (2) on the page, decoding the graph "
        "(msgpack, 0.2-2.3 MB: up to ~0.3 s on the 4,000-op model here) and the collapsed first "
        "view's DOT; (3) in parallel, the worker starting, parsing its 1.5 MB script and "
        "compiling the WASM (0.1 s on an idle page, 0.2-0.4 s while the page is busy on 2 "
        "loaded cores), then Graphviz on the first view (~0.03-0.08 s). Left to do: keep "
        "the worker's source out of the page bundle (a non-script element the page turns into "
        "the worker's Blob before the bundle is parsed: needs the page template, "
        "python_helper/torchscope/html.py, not only webview/src) and a graph encoding that "
        "decodes faster (or decoding in chunks)."
    ),
    "long": (
        "Why: at load, one task is the HTML parser compiling and running the 2 MB inline "
        "bundle (0.1-0.2 s here) and another is decoding the graph's msgpack (grows with the "
        "graph: ~0.06 s for GPT-2, up to ~0.3 s for 4,000 ops under load); both happen before "
        "anything is drawn. Expands and expand-all stay under 100 ms (layout in the worker, "
        "drawing in time-boxed chunks) except where a row says otherwise."
    ),
    "expand": "Why: see the table (layout in the worker; measured with the machine loaded).",
    "all": (
        "Why: nearly all of it is the layout in the worker, mostly Graphviz dot on ~4,000 "
        "boxes and their edges; dot is single-threaded and its time moves with the machine's "
        "load (3.9 s, 5.4 s and 2.6 s for this same graph in three earlier runs today, "
        "11:42, 11:52 and 11:57 UTC). Left to do: a cheaper dot configuration for very large views "
        "(the BIG_GRAPH limits in webview/src/compute.ts), or laying out the repeated blocks "
        "once and stacking them."
    ),
}


# Written by hand from the development runs of the same build (webview at 7cf8d8e) earlier
# on the same day; keep in step when re-running.
NOTES = """
**How solid these are.** One run per page, on a shared 2-core machine. The same build, run
three times just before this run (11:42, 11:52 and 11:57 UTC; 1-min load average 3.9-4.5,
2.8-2.9 and 1.6-2.4), gave torchscope first draws of 405 / 655 / 724 / 688 ms, 559 / 549 /
552 / 767 ms and 475 / 468 / 372 / 494 ms (GPT-2 / T5 / Llama / 4,000 ops): the 0.5 s target
was met on every model in one of the four runs, the quietest; it is marginal on this machine
(see *Why* under target 1 and below). Expand all on the 4,000-op model took 3.88 s, 5.35 s
and 2.62 s in those runs: Graphviz's time moves with the load, and 5 s is not a safe margin.
The expand and Llama targets held in every run (expand median 9-20 ms on GPT-2; Llama
expanded 0.59-1.50 s).

**What limits the first draw** (the marks above): the browser parsing the page and
compiling the 2 MB inline bundle until `boot` (0.15-0.35 s; ~0.05 s for the same page
without the bundle), of which about a third is the layout worker's source with Graphviz's
WASM embedded as a string; then the worker starting, parsing that source and compiling the
WASM (~0.1 s on an idle page, 0.2-0.4 s when the page is busy on 2 loaded cores), in
parallel with the page decoding the graph (0.06-0.16 s here, up to 0.3 s under load for the
4,000-op model) and computing the collapsed first view. Next steps, not done here: keep the
worker's source out of the page's bundle (a non-script element turned into the worker's
Blob before the bundle is parsed; that changes the page template in
python_helper/torchscope/html.py, not only webview/src), which would also remove most of
the load-time long task; and a graph encoding that decodes faster or in chunks.

**torchvista's numbers.** The issue says torchvista's page took 42 s for 4,000 nodes and did
not finish the 32-layer Llama in 120 s. Here its fully expanded pages drew in 19-34 s (4,000
ops, four runs) and 14-22 s (Llama, three runs), freezing the page all along (the longest
task is the whole layout). Two development runs reported "not drawn in 120 s" for some
torchvista pages (GPT-2 and Llama expanded; the 4,000-op opening view) that drew in 1.5-34 s
in other runs: the harness, most likely a DevTools call that never answered (run.ts now
keeps a slow call pending and starts another beside it every 5 s), not torchvista.
"""


def _ms(x: Optional[float]) -> str:
    if x is None:
        return "–"
    return f"{x / 1000:.2f} s" if x >= 1000 else f"{x:.0f} ms"


def _row_cells(r: dict[str, Any], timeout_s: float) -> list[str]:
    status = r.get("status", "?")
    first = r.get("first") or {}
    if first.get("ms") is None:
        cells = [f"**no draw** ({r.get('error', status)})", "–", "–", "–", "–"]
        return cells
    exps = [e["ms"] for e in r.get("expands") or [] if e.get("ms") is not None]
    exp = "–"
    if exps:
        exp = f"{_ms(statistics.median(exps))} (n={len(exps)}, {_ms(min(exps))}–{_ms(max(exps))})"
    elif r.get("error"):
        exp = f"**{r['error']}**"
    ea = r.get("expandAll") or {}
    if ea.get("ms") is not None:
        all_cell = _ms(ea["ms"])
    else:
        all_cell = f"**not drawn in {timeout_s:.0f} s**" + (
            f" ({ea['error']})" if ea.get("error") else ""
        )
    nodes = r.get("expandAllNodes")
    lo = r.get("longest") or {}
    busy = " (page still frozen when closed)" if lo.get("stillBusy") else ""
    long_cell = (
        f"{_ms(lo.get('all'))}{busy} (load {_ms(lo.get('load'))}, expands "
        f"{_ms(lo.get('expands'))}, expand-all {_ms(lo.get('expandAll'))})"
        if lo
        else "–"
    )
    return [_ms(first["ms"]), exp, all_cell, f"{nodes:,}" if nodes else "–", long_cell]


def _marks(r: dict[str, Any]) -> str:
    m = r.get("marks") or {}
    if not m:
        return ""
    boot, dec = m.get("torchscope:boot"), m.get("torchscope:decoded")
    ls, wr = m.get("torchscope:layout-start"), m.get("torchscope:worker-ready")
    ld, dr = m.get("torchscope:layout-done"), m.get("torchscope:drawn")
    parts = [f"bytes received {_ms(r.get('responseEnd'))}", f"bundle running (boot) {_ms(boot)}"]
    if boot is not None and dec is not None:
        parts.append(f"decode {_ms(dec - boot)}")
    if wr is not None:
        parts.append(f"worker ready {_ms(wr)}")
    if ls is not None and ld is not None:
        parts.append(f"first layout {_ms(ld - ls)} (layout-start → layout-done)")
    if boot is not None and dr is not None:
        parts.append(f"decode + layout + draw {_ms(dr - boot)} (boot → drawn)")
    return "torchscope's own marks (ms after navigation start): " + ", ".join(parts) + "."


def section(path: str = RESULTS) -> str:
    with open(path) as f:
        res = json.load(f)
    m = res["machine"]
    timeout_s = res["args"]["timeout_s"]
    man = res.get("manifest", {})
    rows = res["rows"]
    ls, le = m.get("load_start") or [0, 0, 0], m.get("load_end") or [0, 0, 0]
    L = [
        "## Viewer",
        "",
        f"**Machine:** {m.get('cpu')}, {m.get('cores')} cores (shared, loaded); "
        f"{m.get('chromium')} "
        f"headless (`--disable-gpu`); {m.get('date')}; torchscope at {m.get('git')}; load average "
        f"{ls[0]:.1f} / {ls[1]:.1f} / {ls[2]:.1f} at the start, {le[0]:.1f} / {le[1]:.1f} / "
        f"{le[2]:.1f} at the end (1/5/15 min). One run per page.",
        "",
        "`make bench-viewer`: `bench/viewer/make_pages.py` writes both tools' standalone HTML for "
        "each model, `bench/viewer/run.ts` opens them in one Chromium, `report.py` writes this. "
        "All times are taken inside the page (`performance.now()` from navigation start; event "
        "timestamps), so the DevTools-protocol round trips don't count.",
        "",
        "- *first draw*: navigation start (bytes of the file) → first graph in the DOM. "
        "torchscope: the root's `data-state` becomes `ready`. torchvista: its first graph nodes "
        "are inserted (its layout and drawing run in one synchronous task, so that is the end "
        "of the task).",
        "- *expand*: a click on a collapsed module's expand control (`[data-toggle]` / "
        "torchvista's `+` circle; a `click` event dispatched on it) → drawn again; median over "
        f"up to {res['args']['expands']} different modules: those of the opening view, each "
        "from the opening view (torchscope: collapse-all between them; torchvista: its "
        "cluster's `−`); if it has fewer, also those inside one opened module (torchscope: "
        "a ×N group if there is one), each collapsed again before the next. *n* = how many.",
        "- *expand all*: torchscope: `[data-action=expand-all]` → ready (expand-all leaves "
        "one-op wrappers such as `nn.Linear` as boxes, see docs/viewer.md). torchvista has no "
        "expand-all control: its page written with `collapse_modules_after_depth=99` (every "
        "module open) is loaded and timed to its first draw. *nodes*: boxes in the expanded "
        "graph (torchscope: the status line's drawn count; torchvista: `g.node_*` elements).",
        "- *longest long task*: a `PerformanceObserver({type: 'longtask'})` injected with "
        "`addInitScript` before the page's scripts; longest over the whole session, and per "
        "phase.",
        f"- Timeout {timeout_s:.0f} s per action; a page still frozen then is closed.",
        "- torchvista 0.2.13: `trace_model(model, inputs, export_format='html', export_path=…)` "
        "writes a self-contained page: d3, viz.js (Graphviz WASM) and jsoneditor are inlined "
        "from the package's own `torchvista/assets`, so it works offline as written (no CDN, "
        "nothing patched or served; the run records any non-file request: "
        + ("none" if not any(r.get("requests") for r in rows) else "see the JSON")
        + "). Its trace recurses per node: it hit Python's recursion limit on the 32-layer "
        "Llama and the 4,000-op model, so `make_pages.py` runs it in a thread with a 512 MB "
        "stack and a recursion limit of 200,000. T5 goes through a two-input wrapper module "
        "(torchvista takes positional inputs only; torchscope traces `T5Model` with keyword "
        "inputs).",
        "",
    ]
    for name in dict.fromkeys(r["model"] for r in rows):
        info = man.get(name, {})
        ts = info.get("torchscope", {})
        title = info.get("title", name)
        extra = ""
        if ts.get("nodes"):
            extra = (
                f" torchscope's graph: {ts['nodes']:,} nodes ({ts.get('ops', 0):,} ops), msgpack "
                f"{ts.get('msgpack_bytes', 0) / 2**20:.1f} MB, "
                f"page {ts.get('bytes', 0) / 2**20:.1f} MB."
            )
        tv = info.get("torchvista", {})
        if tv.get("bytes"):
            extra += f" torchvista's page {tv['bytes'] / 2**20:.1f} MB."
        L += [f"### {title}", "", extra.strip(), ""]
        L += [
            "| tool | first draw | expand (median) | expand all | nodes (expanded) "
            "| longest long task |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for r in [r for r in rows if r["model"] == name]:
            L.append(f"| {r['tool']} | " + " | ".join(_row_cells(r, timeout_s)) + " |")
        for r in rows:
            if r["model"] == name and r["tool"] == "torchscope" and _marks(r):
                L += ["", _marks(r)]
        L.append("")
    L += ["### Targets", ""] + targets(rows) + [""]
    L += [NOTES.strip(), ""]
    return "\n".join(L)


def targets(rows: list[dict[str, Any]]) -> list[str]:
    def ts(model: str) -> Optional[dict[str, Any]]:
        return next((r for r in rows if r["model"] == model and r["tool"] == "torchscope"), None)

    def tv(model: str) -> Optional[dict[str, Any]]:
        return next((r for r in rows if r["model"] == model and r["tool"] == "torchvista"), None)

    def v(ok: bool) -> str:
        return "**met**" if ok else "**missed**"

    out: list[str] = []
    # 1. first draw
    firsts = [
        (r["model"], (r.get("first") or {}).get("ms")) for r in rows if r["tool"] == "torchscope"
    ]
    got = [(m, x) for m, x in firsts if x is not None]
    if got:
        worst = max(x for _, x in got)
        ok = worst <= FIRST_S * 1000
        cells = ", ".join(f"{m} {_ms(x)}" for m, x in got)
        line = f"1. **First drawn graph ≤ {FIRST_S} s, any model**: {v(ok)} — {cells}."
        if not ok:
            over = [m for m, x in got if x > FIRST_S * 1000]
            line = line[:-1] + (
                f"; over on {', '.join(over)}, by up to {worst - FIRST_S * 1000:.0f} ms "
                f"({worst / (FIRST_S * 1000):.2f}× the budget). {WHY['first']}"
            )
        out.append(line)
    # 2. expand on GPT-2
    r = ts("gpt2")
    if r and r.get("expandMedian") is not None:
        x = r["expandMedian"]
        ok = x <= EXPAND_S * 1000
        n = len([e for e in r.get("expands") or [] if e.get("ms") is not None])
        peer = tv("gpt2")
        pc = (
            f"; torchvista {_ms(peer['expandMedian'])}" if peer and peer.get("expandMedian") else ""
        )
        out.append(
            f"2. **One expand ≤ {EXPAND_S} s median on GPT-2**: {v(ok)} — {_ms(x)} over {n} "
            f"modules{pc}." + ("" if ok else f" {WHY['expand']}")
        )

    # 3/4. expand all
    def all_line(num: int, model: str, label: str) -> None:
        r = ts(model)
        if not r:
            return
        x = (r.get("expandAll") or {}).get("ms")
        peer = tv(model)
        pc = ""
        if peer:
            px = (peer.get("expandAll") or {}).get("ms")
            pc = (
                f"; torchvista {_ms(px)} for {peer.get('expandAllNodes') or '?'} nodes"
                if px is not None
                else "; torchvista did not draw it within the timeout"
            )
        if x is None:
            out.append(
                f"{num}. **{label} ≤ {ALL_S:g} s**: **missed** — not drawn within the timeout{pc}."
            )
            return
        ok = x <= ALL_S * 1000
        nodes = r.get("expandAllNodes")
        lay = re.search(r"layout ([\d,]+) ms", r.get("expandAllStatus") or "")
        if lay:
            pc = f" (of which the worker's layout, DOT + Graphviz: {lay.group(1)} ms)" + pc
        out.append(
            f"{num}. **{label} ≤ {ALL_S:g} s**: {v(ok)} — {_ms(x)} for {nodes:,} drawn nodes{pc}."
            + ("" if ok else f" Over by {x - ALL_S * 1000:.0f} ms. {WHY['all']}")
        )

    all_line(3, "synth4000", "Expand all, ~4,000 visible nodes (synthetic 4,000-op model)")
    all_line(4, "llama32", "32-layer Llama fully expanded")
    # 5. long tasks
    longs = [
        (r["model"], r["longest"]) for r in rows if r["tool"] == "torchscope" and r.get("longest")
    ]
    if longs:
        worst = max(lo["all"] for _, lo in longs)
        ok = worst <= LONG_MS
        cells = ", ".join(
            f"{m} {lo['all']} ms (load {lo['load']}, expands {lo['expands']}, "
            f"expand-all {lo['expandAll']})"
            for m, lo in longs
        )
        line = f"5. **Main thread never blocked > {LONG_MS} ms**: {v(ok)} — longest task: {cells}"
        if not ok:
            line += f"; worst {worst} ms, {worst - LONG_MS} ms over. {WHY['long']}"
        peers = [
            (r["model"], r["longest"]["all"])
            for r in rows
            if r["tool"] == "torchvista" and r.get("longest")
        ]
        if peers:
            line += (
                " torchvista, for comparison: " + ", ".join(f"{m} {_ms(x)}" for m, x in peers) + "."
            )
        out.append(line)
    return out


def update(md_path: str, results: str = RESULTS) -> bool:
    """Replace the viewer section of `md_path` (or append it). False if no results yet."""
    if not os.path.exists(results):
        return False
    text = open(md_path).read() if os.path.exists(md_path) else ""
    block = f"{START}\n{section(results)}\n{END}\n"
    if START in text and END in text:
        a, b = text.index(START), text.index(END) + len(END)
        text = text[:a] + block.rstrip("\n") + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(md_path, "w") as f:
        f.write(text)
    return True


if __name__ == "__main__":
    if "--print" in sys.argv:
        print(section())
    else:
        target = next(
            (a for a in sys.argv[1:] if not a.startswith("--")),
            os.path.join(HERE, "..", "results.md"),
        )
        done = update(target)
        print(
            f"viewer section {'written to' if done else 'not written (no results.json):'} {target}"
        )
