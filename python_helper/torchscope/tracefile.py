"""Trace one call of a model into a graph file and say what happened: the last step of every
trace request, the same for the editor's runner and the paused-debugger entry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from torch import nn

from .failure import Failure
from .graph import write_atomic
from .tracer import ModelTooDeep, trace_call
from .usercode import is_user_file

TraceResult = dict[str, Any]  # {path, size, summary} (docs/protocol.md)


def trace_to_file(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    out: str | Path,
    described: str,
    input_kind: str = "typed",
    input_expr: Optional[str] = None,
    input_template: Optional[str] = None,
    time_budget: Optional[float] = None,
    cancel: Optional[Callable[[], bool]] = None,
    local_collectives: bool = False,
    traced: Optional[Callable[[], None]] = None,
) -> TraceResult:
    """Trace `model(*args, **kwargs)`, write the msgpack graph to `out` (atomically), and return
    `{path, size, summary}`. A forward that raises is a result (the partial graph, with
    `summary.error` at the user's line); a trace stopped by its budget or its cancel check is
    a Failure (`timeout`, `cancelled`) and writes nothing. With local_collectives, the
    forward's collectives are recorded and done on this rank alone (collectives.py).
    `traced`: called once the trace is over (no user code runs after it) and its graph is to
    be written, before it is packed and written, which takes seconds for a big one."""
    try:
        graph = trace_call(
            model,
            args,
            kwargs,
            time_budget=time_budget,
            cancel=cancel,
            raise_errors=False,
            local_collectives=local_collectives,
        )
    except ModelTooDeep as exc:
        raise Failure("target-error", str(exc)) from exc
    error = graph.error
    if error is not None and error.type == "TraceTimeout":
        budget = f"{time_budget:g} s" if time_budget else "its time budget"
        raise Failure("timeout", f"the trace ran past {budget} and was stopped")
    if error is not None and error.type == "TraceCancelled":
        raise Failure("cancelled", "the trace was cancelled")
    if traced is not None:
        traced()
    data = graph.to_msgpack()
    write_atomic(out, data)
    summary = graph.result_summary(described, is_user_file)
    summary["inputKind"] = input_kind  # docs/protocol.md: where the input came from
    summary["inputExpr"] = input_expr  # an expression that gives it again, or None
    if input_template:  # an input given as a value: an expression of its kind and shape
        summary["inputTemplate"] = input_template
    return {"path": str(out), "size": len(data), "summary": summary}
