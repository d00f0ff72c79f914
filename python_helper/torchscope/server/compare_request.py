"""`torchscope/compare`: two graph files → one compare-view graph file (docs/protocol.md).

The extension has two traces of a model (the working copy and HEAD, eval and training mode,
two inputs, two paused traces) and shows their comparison in a panel: the viewer reads the
compare view (`torchscope/compare.py`), which this writes. Reading, diffing and writing need
msgpack only, never torch, so the language server can answer it in any interpreter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from ..compare import compare_view
from ..diff import STATS_TOLERANCE, diff_graphs
from ..graph import write_atomic
from ..graph_file import GraphFileError, read_graph_file

__all__ = ["CompareError", "compare_files"]


class CompareError(Exception):
    """A side that is not a readable graph file; the message is one line for the user."""


def compare_files(
    a: str,
    b: str,
    out: Path,
    a_source: str = "",
    b_source: str = "",
    stats_tolerance: Optional[float] = None,
) -> dict[str, Any]:
    """Compare graph file `a` (before) with `b` (after) and write the compare view to `out`:
    `{path, size, summary: {added, removed, changed, same, changes, model}}` (`changes`: the
    places next / previous change steps through; `model`: b's model name)."""
    try:
        graph_a = read_graph_file(a)
        graph_b = read_graph_file(b)
    except GraphFileError as exc:
        raise CompareError(str(exc)) from None
    tolerance = STATS_TOLERANCE if stats_tolerance is None else stats_tolerance
    diff = diff_graphs(graph_a, graph_b, stats_tolerance=tolerance)
    view = compare_view(diff, a_source, b_source)
    data = view.to_msgpack()
    write_atomic(out, data)
    return {
        "path": str(out),
        "size": len(data),
        "summary": {
            "added": len(diff.added()),
            "removed": len(diff.removed()),
            "changed": len(diff.details),
            "same": diff.same,
            "changes": len(view.changes),
            "model": graph_b.model.name or graph_a.model.name,
        },
    }
