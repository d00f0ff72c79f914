"""Chromium for the distribution tests: open pages (tests/webview/tools/drawn.ts, through
Node and playwright-core, as the viewer's own browser tests do) and check that they drew."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def drawn(pages: list[dict[str, Any]], work: Path) -> dict[str, dict[str, Any]]:
    """Open each page in Chromium (tests/webview/tools/drawn.ts): its report, by name.

    A page is ``{"name", "path", "frames"}``; ``frames`` is how many iframes deep the viewer is.
    """
    spec = work / "pages.json"
    spec.write_text(
        json.dumps(
            [{"name": p["name"], "url": p["path"].as_uri(), "frames": p["frames"]} for p in pages]
        ),
        encoding="utf-8",
    )
    run = subprocess.run(
        ["node", "--import", "tsx", "tests/webview/tools/drawn.ts", str(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    return {r["name"]: r for r in json.loads(run.stdout)}


def assert_drawn(
    report: dict[str, Any], module_paths: set[str], expected: tuple[str, ...] = ()
) -> None:
    """The viewer finished its layout and drew the model's modules, input and output,
    without errors, network requests or navigating the page that holds it. ``expected``:
    pieces of console messages that the test's own page causes, not the viewer."""
    assert report["state"] == "ready", report
    kinds = {n["kind"] for n in report["nodes"]}
    assert {"input", "output", "module"} <= kinds, report["nodes"]
    drawn_paths = {n["path"] for n in report["nodes"] if n["kind"] == "module"}
    assert module_paths <= drawn_paths, report["nodes"]
    assert [e for e in report["errors"] if not any(x in e for x in expected)] == []
    assert report["external"] == []
    assert report["topNavigations"] == []
    assert report["stateAfterClick"] == "ready"
