"""torchscope: trace a PyTorch forward pass into an interactive, collapsible graph."""

from .graph import FORMAT, VERSION, Edge, Graph, GraphFormatError, Group, Node, Site
from .tracer import TraceCancelled, TraceTimeout, trace, trace_call

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
    "trace",
    "trace_call",
    "show",
]


def show(model, *args, **kwargs):  # noqa: ANN001, ANN201 - thin lazy wrapper
    """Trace and display the viewer in Jupyter (see torchscope.notebook.show)."""
    from .notebook import show as _show

    return _show(model, *args, **kwargs)
