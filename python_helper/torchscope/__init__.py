"""torchscope: trace a PyTorch forward pass into an interactive, collapsible graph.

Names are imported lazily, so `python -m torchscope` can explain a missing torch
in one line instead of failing at import.
"""

from __future__ import annotations

from importlib import import_module

# `typing` is not imported here: `python -m torchscope.server` (and .runner) run this before
# they take the workspace folder off sys.path, where a `typing.py` may lie (entry_path.py)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "FORMAT": "graph",
    "VERSION": "graph",
    "Edge": "graph",
    "Graph": "graph",
    "GraphFormatError": "graph",
    "Group": "graph",
    "Node": "graph",
    "Site": "graph",
    "TraceCancelled": "tracer",
    "TraceTimeout": "tracer",
    "trace": "tracer",
    "trace_call": "tracer",
    "show": "notebook",
    "show_graph": "notebook",
}

__all__ = [
    "FORMAT",
    "VERSION",
    "Edge",
    "Graph",
    "GraphFormatError",
    "Group",
    "Node",
    "Site",
    "TraceCancelled",
    "TraceTimeout",
    "show",
    "show_graph",
    "trace",
    "trace_call",
]

if TYPE_CHECKING:
    from .graph import FORMAT, VERSION, Edge, Graph, GraphFormatError, Group, Node, Site
    from .notebook import show, show_graph
    from .tracer import TraceCancelled, TraceTimeout, trace, trace_call


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchscope' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
