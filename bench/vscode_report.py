"""Write bench/results-vscode.md from bench/results-vscode.json (bench/vscode_panel.ts).

    python bench/vscode_report.py [results-vscode.json] [results-vscode.md] [--before before.json]

Each target is quoted as met (every run within it), missed (none), or inconclusive (some
runs within, some not: on this shared machine the other jobs' load decides it).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent

SCENARIOS: list[tuple[str, str, str, float | None]] = [
    # (key, what, value field, target ms)
    (
        "gpt2_warm_existing_panel",
        "GPT-2 right-click → drawn, warm, into its open panel",
        "total_ms",
        1000,
    ),
    ("gpt2_warm_new_panel", "GPT-2 right-click → drawn, warm, into a new panel", "total_ms", 1000),
    (
        "gpt2_warm_existing_panel",
        "… of which the panel: graph received → drawn",
        "received_to_drawn_ms",
        None,
    ),
    (
        "gpt2_warm_new_panel",
        "… of which the panel: graph received → drawn",
        "received_to_drawn_ms",
        None,
    ),
    (
        "palette_breakpoint_new_panel",
        "GPT-2 paused at a breakpoint: palette → drawn (new panel, Enter at once)",
        "total_ms",
        1000,
    ),
    (
        "palette_breakpoint_new_panel",
        "… of which: Enter → graph received in the panel",
        "pick_to_received_ms",
        None,
    ),
    (
        "palette_breakpoint_existing_panel",
        "GPT-2 paused at a breakpoint: palette → drawn (its open panel, Enter at once)",
        "total_ms",
        1000,
    ),
    (
        "synth4000_new_panel",
        "4,000 ops: longest task in the panel while the graph arrives (new panel)",
        "longest_task_arriving_ms",
        100,
    ),
    (
        "synth4000_existing_panel",
        "4,000 ops: longest task in the panel while the graph arrives (open panel)",
        "longest_task_arriving_ms",
        100,
    ),
    (
        "synth4000_new_panel",
        "… Chromium trace, the panel's thread (shared with the workbench): the longest task's wall time",
        "traced_longest_task_wall_ms",
        100,
    ),
    (
        "synth4000_new_panel",
        "… the same trace: the most CPU time one task used",
        "traced_most_cpu_in_one_task_ms",
        100,
    ),
    (
        "synth4000_existing_panel",
        "… Chromium trace, open panel: the longest task's wall time",
        "traced_longest_task_wall_ms",
        100,
    ),
    (
        "synth4000_existing_panel",
        "… the same trace: the most CPU time one task used",
        "traced_most_cpu_in_one_task_ms",
        100,
    ),
]


def values(runs: list[dict[str, Any]], field: str) -> list[float]:
    # No long task at all in the window is 0 ms of long task.
    out: list[float] = []
    for r in runs:
        v = r.get(field)
        if v is None and field.startswith("longest_task") and r.get("observer_in_frame") == "yes":
            v = 0
        if isinstance(v, (int, float)):
            out.append(float(v))
    return out


def ms(x: float) -> str:
    return f"{x / 1000:.2f} s" if x >= 1000 else f"{x:.0f} ms"


def verdict(vals: list[float], target: float) -> str:
    within = sum(v <= target for v in vals)
    if not vals:
        return "inconclusive (no run)"
    if within == len(vals):
        return "met"
    if within == 0:
        return "missed"
    return f"inconclusive ({within} of {len(vals)} runs within)"


def summary(vals: list[float]) -> str:
    if not vals:
        return "–"
    return f"{ms(statistics.median(vals))} ({ms(min(vals))}–{ms(max(vals))}, n={len(vals)})"


def table(data: dict[str, Any], before: dict[str, Any] | None) -> list[str]:
    head = "| measure | median (range, n) | target | verdict |"
    sep = "|---|---:|---|---|"
    if before:
        head = "| measure | before (main) | after | target | verdict (after) |"
        sep = "|---|---:|---:|---|---|"
    lines = [head, sep]
    for key, what, field, target in SCENARIOS:
        vals = values(data["results"].get(key, []), field)
        t = f"≤ {ms(target)}" if target else "–"
        v = verdict(vals, target) if target else "–"
        if before:
            bfield = field
            if field == "longest_task_arriving_ms":
                # Before: no arrival mark in that viewer; the right-click → drawn window.
                bfield = "longest_task_click_to_drawn_ms"
            bvals = values(before["results"].get(key, []), bfield)
            lines.append(f"| {what} | {summary(bvals)} | {summary(vals)} | {t} | {v} |")
        else:
            lines.append(f"| {what} | {summary(vals)} | {t} | {v} |")
    return lines


def details(data: dict[str, Any]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for key, what, _field, _t in SCENARIOS:
        if key in seen:
            continue
        seen.add(key)
        runs = data["results"].get(key, [])
        if not runs:
            continue
        out.append(f"**{what}** — each run:")
        out.append("")
        for r in runs:
            parts = [f"{k} {v}" for k, v in r.items() if v is not None]
            out.append(f"- {'; '.join(parts)}")
        out.append("")
    return out


def median_of(data: dict[str, Any], key: str, field: str) -> float | None:
    vals = values(data["results"].get(key, []), field)
    return statistics.median(vals) if vals else None


def reading(data: dict[str, Any]) -> list[str]:
    """Where the time goes, from the runs' own fields."""
    out = ["## Reading", ""]
    for key, what in [
        ("gpt2_warm_existing_panel", "into its open panel"),
        ("gpt2_warm_new_panel", "into a new panel"),
    ]:
        total = median_of(data, key, "total_ms")
        to_panel = median_of(data, key, "to_received_ms")
        panel = median_of(data, key, "received_to_drawn_ms")
        runner = median_of(data, key, "runner_trace_ms")
        if total is None or to_panel is None or panel is None:
            continue
        line = (
            f"- GPT-2 right-click {what}: of the median {ms(total)}, {ms(to_panel)} pass before the "
            f"graph reaches the panel (language server and runner: building GPT-2 with random "
            f"weights and tracing it"
        )
        if runner is not None:
            line += f"; the runner's trace alone {ms(runner)}"
        line += f") and {ms(panel)} in the panel (graph received → drawn)."
        out.append(line)
    boot = median_of(data, "palette_breakpoint_new_panel", "pick_to_boot_ms")
    recv = median_of(data, "palette_breakpoint_new_panel", "pick_to_received_ms")
    drawn = median_of(data, "palette_breakpoint_new_panel", "pick_to_drawn_ms")
    if boot is not None and recv is not None and drawn is not None:
        out.append(
            f"- At a breakpoint, after Enter: the new panel's viewer starts at {ms(boot)} (VS Code "
            f"creates the webview when the list shows; its page is fetched late), the graph "
            f"arrives at {ms(recv)} (the trace in the paused program), drawn at {ms(drawn)}."
        )
    out.append(
        "- Long tasks: the panel has the same origin as the workbench in code-server, so it "
        "runs on the workbench's main thread (tasks attributed `same-origin-ancestor` are "
        "VS Code's own). On a machine this loaded a task's wall time is mostly waiting for a "
        "core: the Chromium trace gives each task's CPU time too, which is the work the "
        "viewer's code put in one task."
    )
    return out + [""]


def machine_line(data: dict[str, Any]) -> str:
    m = data["machine"]
    s, e = data["started"], data["ended"]
    loads = "; ".join(
        f"after {k}: {' / '.join(map(str, v))}" for k, v in data.get("loads", {}).items()
    )
    return (
        f"**Machine:** {m['cpu']}, {m['cores']} cores (shared with other jobs); {m['chromium']} headless; "
        f"code-server {m['code_server']}{' on Node ' + m['node'] if m.get('node') else ''}; torchscope at {m['commit']}{' (+ uncommitted changes)' if m.get('dirty') else ''}; "
        f"{s['when']} → {e['when']}; load average (1/5/15 min) {' / '.join(map(str, s['loadavg']))} at the start, "
        f"{' / '.join(map(str, e['loadavg']))} at the end ({loads})."
    )


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    src = Path(args[0]) if args else HERE / "results-vscode.json"
    dst = Path(args[1]) if len(args) > 1 else HERE / "results-vscode.md"
    # --before FILE, as often as needed: each file's runs fill the before column of its measures
    befores = [
        (Path(sys.argv[i + 1]).name, json.loads(Path(sys.argv[i + 1]).read_text()))
        for i, a in enumerate(sys.argv[:-1])
        if a == "--before"
    ]
    before = (
        {"results": {k: v for _n, b in befores for k, v in b["results"].items() if v}}
        if befores
        else None
    )
    data = json.loads(src.read_text())
    text = [
        "# The graph panel in VS Code (code-server): measured",
        "",
        "`make bench-vscode` (or `CHROMIUM=/usr/bin/chromium node --import tsx bench/vscode_panel.ts "
        "--runs N` after `make package code-server`, then `python bench/vscode_report.py`): code-server "
        "with the .vsix installed, driven by Playwright in Chromium as the end-to-end tests drive it. "
        "Times come from the viewer's own performance marks (`torchscope:received`, `decoded`, "
        "`layout-start`, `drawn`), read in the panel's frame, against the moment of the click or key. "
        "Long tasks: a `PerformanceObserver({type: 'longtask'})` put into every frame before its "
        "scripts (`addInitScript`); *while the graph arrives* = from the `torchscope:received` mark "
        "(the graph message handled in the panel) to 200 ms after `drawn`, tasks attributed to the "
        "panel's frame itself (`self`).",
        "",
        machine_line(data),
        "",
    ]
    for name, b in befores:
        measures = ", ".join(k for k, v in b["results"].items() if v)
        text += [
            f"*Before* ({measures}; `bench/{name}`): the same script on main's .vsix "
            f"({b['machine']['commit']}, {b['started']['when']}, load average at the start "
            f"{' / '.join(map(str, b['started']['loadavg']))}): {b.get('note', '')}.",
            "",
        ]
    if befores:
        args = " ".join(f"--before bench/{n}" for n, _b in befores)
        text += [
            f"Report: `python bench/vscode_report.py bench/results-vscode.json "
            f"bench/results-vscode.md {args}`.",
            "",
        ]
    text += table(data, before)
    text += [""] + reading(data)
    text += ["## Each run", ""] + details(data)
    dst.write_text("\n".join(text).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
