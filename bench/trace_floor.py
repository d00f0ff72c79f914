"""How far below its time a structure-only trace could go: its whole-model passes timed one
by one, and the trace again with the recording of ops, then of module calls too, replaced by
stubs that only keep the bookkeeping the forward needs (a node id, the producer of each
output, the open module calls). What is left then is the cost of seeing the forward at all
(module hooks, the lean call path, the function mode) plus the passes before and after it.

    python bench/trace_floor.py [--model blocks2000] [--runs 9]

CPU time of this process (time.process_time), the fastest of --runs, the garbage collector
off as during a trace. The stubbed traces make wrong graphs on purpose: this measures a
bound, it does not test anything.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from models import build  # noqa: E402

import torchscope  # noqa: E402
import torchscope.tracer as tracer  # noqa: E402
from torchscope.folding import fold_repeated_blocks  # noqa: E402
from torchscope.graph import Node  # noqa: E402
from torchscope.state import ModelState  # noqa: E402


def best(f: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.process_time()
        f()
        times.append(time.process_time() - t0)
    return min(times) * 1000


def stub_op_records(
    rec: Any, info: Any, args: Any, kwargs: Any, outs: Any, sites: Any = None
) -> int:
    nid = len(rec.nodes)
    node = Node(nid, "op", info.name, rec._parent(), info.target)
    if kwargs or not all(isinstance(a, torch.Tensor) for a in args):
        # (as recorded: a layer's first call is checked against them before its class
        # takes the one-call shortcut)
        node.attrs = rec._call_attrs(info, args, kwargs)
    rec.nodes.append(node)
    for t in outs:
        rec.producer[id(t)] = (weakref.ref(t), nid, None)
    return nid


def stub_module_records(rec: Any, shown: Any, key: int, frame: Any) -> int:
    nid = len(rec.nodes)
    rec.nodes.append(Node(nid, "module", type(shown).__name__, None))
    rec.stack.append(nid)
    return nid


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="blocks2000")
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    b = build(a.model)
    model, args, kwargs = b.model, b.args, b.kwargs
    gc.disable()

    def plain() -> None:
        with torch.no_grad():
            model(*args, **kwargs)

    def trace() -> Any:
        return torchscope.trace(model, *args, values=False, costs=False, **kwargs)

    plain()
    graph = trace()
    named, _ = tracer.module_tree(model)
    rows: list[tuple[str, float]] = [("plain forward", best(plain, a.runs))]
    rows.append(("trace, structure only", best(trace, a.runs)))
    rows.append(("  module tree walk", best(lambda: tracer.module_tree(model), a.runs)))
    rows.append(("  state snapshot", best(lambda: ModelState(named), a.runs)))
    state = ModelState(named)
    rows.append(("  state restore (nothing changed)", best(state.restore, a.runs)))
    rows.append(
        (
            "  recorder set-up (descriptions, parameter counts)",
            best(
                lambda: tracer.Recorder(model, named, None, None, None, False, False, None), a.runs
            ),
        )
    )
    rows.append(("  folding", best(lambda: fold_repeated_blocks(graph), a.runs)))
    record_call, module_node = tracer.Recorder._record_call, tracer.Recorder._module_node
    layer_op = tracer.Recorder._record_layer_op
    try:
        tracer.Recorder._record_call = stub_op_records  # type: ignore[method-assign]
        # (a one-call layer's op, in a structure-only trace, is recorded by its own path)
        tracer.Recorder._record_layer_op = (  # type: ignore[method-assign]
            lambda rec, info, args, kwargs, result, sites: stub_op_records(
                rec, info, args, kwargs, [result], sites
            )
        )
        rows.append(("trace, op records stubbed", best(trace, a.runs)))
        tracer.Recorder._module_node = stub_module_records  # type: ignore[method-assign]
        rows.append(("trace, op and module records stubbed", best(trace, a.runs)))
    finally:
        tracer.Recorder._record_call, tracer.Recorder._module_node = record_call, module_node
        tracer.Recorder._record_layer_op = layer_op  # type: ignore[method-assign]
    base = rows[0][1]
    print(
        f"{a.model}: {len(graph.nodes)} nodes, {len(graph.edges)} edges; CPU ms, best of {a.runs}"
    )
    print("| step | ms | × plain |\n|---|---:|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:.1f} | {ms / base:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
