"""One function per tool: build the model, time plain forwards and traces, return metrics.

Every tool function has the signature `(model_name, runs, budget_s) -> dict` and runs in
a fresh worker process (bench/worker.py), so peak RSS never mixes between tools.

The protocol, the same for every tool:
  1. build the model (timed, not part of the trace);
  2. plain forward under torch.no_grad(): 2 warm-up calls, then `runs` timed calls
     (`plain_ms`: the denominator of trace / plain, measured in the same process shortly
     before the traces, as the machine is shared and its load drifts);
  3. reset the kernel's peak-RSS mark (/proc/self/clear_refs), take the baseline RSS;
  4. one cold trace (timed, reported separately: it pays one-time costs such as imports
     or wrapping torch functions), then `runs` rounds of (one plain forward, one trace);
     the result of each trace is dropped before the next. The plain forwards in this loop
     (`plain_after_ms`) show whether a tool leaves the model or torch slower after it
     has run (torchlens, for one, leaves torch functions wrapped);
  5. peak RSS during the traces minus the baseline (the plain forwards inside the loop
     allocate no more than the forward inside each trace does).
A trace loop stops early (at least one warm run) once `budget_s` is spent, so a slow
peer still reports something inside the worker timeout; the run count is reported.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import resource
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from models import Built, build

# -- memory --------------------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mb() -> float:
    kb = _status_kb("VmRSS")
    if kb is None:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    return kb / 1024


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM). False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_mb() -> float:
    kb = _status_kb("VmHWM")
    if kb is None:  # ru_maxrss cannot be reset: the delta then includes the model build
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024


# -- timing --------------------------------------------------------------------------


@contextlib.contextmanager
def quiet():
    """Peers print (torchvista's display() of its HTML object, progress lines): drop it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


class _Cpu:
    """The CPU time of this thread over each timed call too (`thread_time`): on a loaded
    machine it leaves out the time other processes held the core (torch runs one thread)."""

    def __init__(self) -> None:
        self.last = 0.0

    def timed(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        c0 = time.thread_time()
        wall, out = _timed(fn)
        self.last = (time.thread_time() - c0) * 1000
        return wall, out


def measure(
    tool: str,
    model_name: str,
    runs: int,
    budget_s: float,
    trace: Callable[[Built], Any] | None,
    extras: Callable[[Built, Any], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The shared protocol (module docstring). `trace(built)` runs one trace and returns
    what the tool returns; `extras(built, result)` adds tool-specific metrics afterwards."""
    m: dict[str, Any] = {"tool": tool, "model": model_name, "status": "ok", "pid": os.getpid()}
    built = build(model_name)
    m.update(build_s=built.build_s, threads=built.threads, device=built.device, note=built.note)
    gc.collect()
    model, args, kwargs = built.model, built.args, built.kwargs

    def fwd() -> Any:
        with torch.no_grad():
            return model(*args, **kwargs)

    for _ in range(2):
        fwd()
    m["plain_ms"] = [_timed(fwd)[0] for _ in range(runs)]
    gc.collect()
    m["peak_reset"] = reset_peak()
    base = rss_mb()
    m["rss_baseline_mb"] = base
    if trace is None:  # the plain-forward reference row: its peak over the same baseline
        m["plain_after_ms"] = [_timed(fwd)[0] for _ in range(runs)]
        m["rss_peak_mb"] = peak_mb()
        m["rss_delta_mb"] = m["rss_peak_mb"] - base
        return m
    result: Any = None
    cpu = _Cpu()
    try:
        with quiet():
            m["first_ms"], result = _timed(lambda: trace(built))
        times: list[float] = []
        m["trace_ms"] = times
        after = m["plain_after_ms"] = []
        cpu_trace = m["trace_cpu_ms"] = []
        cpu_after = m["plain_after_cpu_ms"] = []
        spent = m["first_ms"] / 1000
        for _ in range(runs):
            if times and spent > budget_s:
                m["stopped_early"] = f"budget {budget_s:.0f} s spent after {len(times)} warm runs"
                break
            result = None
            after.append(cpu.timed(fwd)[0])
            cpu_after.append(cpu.last)
            with quiet():
                ms, result = cpu.timed(lambda: trace(built))
            cpu_trace.append(cpu.last)
            times.append(ms)
            spent += ms / 1000
    except BaseException as exc:  # noqa: BLE001 - RecursionError, meta unsupported …: report it
        m["status"] = "error"
        m["error"] = f"{type(exc).__name__}: {_first_line(exc)}"
        if isinstance(exc, KeyboardInterrupt):
            raise
    m["rss_peak_mb"] = peak_mb()
    m["rss_delta_mb"] = m["rss_peak_mb"] - base
    if m["status"] == "ok" and extras is not None:
        try:
            m.update(extras(built, result))
        except Exception as exc:  # noqa: BLE001
            m["extras_error"] = f"{type(exc).__name__}: {_first_line(exc)}"
    return m


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else "")[:300]


def median(xs: list[float] | None) -> float | None:
    return statistics.median(xs) if xs else None


# -- the tools ---------------------------------------------------------------------


def plain(model_name: str, runs: int, budget_s: float) -> dict[str, Any]:
    """No tool: the plain forward alone (reference row, including its peak RSS)."""
    return measure("plain", model_name, runs, budget_s, None)


def torchscope(model_name: str, runs: int, budget_s: float) -> dict[str, Any]:
    """`torchscope.trace(model, *args, **kwargs)` as it runs by default: with tensor
    statistics and costs (values=True, costs=True); on meta, trace + graph.save(.msgpack)."""
    return _torchscope("torchscope", model_name, runs, budget_s, values=True)


def torchscope_off(model_name: str, runs: int, budget_s: float) -> dict[str, Any]:
    """`torchscope.trace(model, *args, values=False, costs=False, **kwargs)`: the structure
    only, as before values and costs existed (issue 2's targets)."""
    return _torchscope("torchscope-off", model_name, runs, budget_s, values=False)


def _torchscope(
    tool: str, model_name: str, runs: int, budget_s: float, values: bool
) -> dict[str, Any]:
    import torchscope as ts

    tmp = tempfile.mkdtemp(prefix="bench-ts-")
    out_path = os.path.join(tmp, "graph.msgpack")

    def trace(b: Built) -> Any:
        g = ts.trace(b.model, *b.args, values=values, costs=values, **b.kwargs)
        if b.device == "meta":
            g.save(out_path)  # the 70B target is "built and saved"
        return g

    def extras(b: Built, g: Any) -> dict[str, Any]:
        ms, raw = _timed(g.to_msgpack)
        save_ms, _ = _timed(lambda: g.save(out_path))
        n = len(g.nodes)
        return {
            "nodes": n,
            "edges": len(g.edges),
            "groups": len(getattr(g, "groups", []) or []),
            "msgpack_bytes": len(raw),
            "bytes_per_node": len(raw) / n if n else None,
            "to_msgpack_ms": ms,
            "save_ms": save_ms,
            "tracer_trace_ms": getattr(g, "trace_ms", None),
            "version": _version("torchscope"),
        }

    try:
        return measure(tool, model_name, runs, budget_s, trace, extras)
    finally:
        with contextlib.suppress(OSError):
            if os.path.exists(out_path):
                os.remove(out_path)
            os.rmdir(tmp)


def torchview(model_name: str, runs: int, budget_s: float) -> dict[str, Any]:
    """torchview 0.2.7 README: `draw_graph(model, input_data=..., device=...)`.
    save_graph=False (the default) builds the graphviz source but renders no image.
    depth=inf: the whole module tree, like torchscope's graph (the default depth=3 also
    fails on GPT-2 here: KeyError in ComputationGraph.render_edges)."""
    from torchview import draw_graph

    def trace(b: Built) -> Any:
        data: Any = list(b.args) if len(b.args) != 1 else b.args[0]
        return draw_graph(
            b.model,
            input_data=data,
            device=b.device,
            depth=float("inf"),
            save_graph=False,
            **b.kwargs,
        )

    def extras(b: Built, g: Any) -> dict[str, Any]:
        return {"version": _version("torchview"), "graphviz_lines": len(g.visual_graph.body)}

    return measure("torchview", model_name, runs, budget_s, trace, extras)


def torchlens(model_name: str, runs: int, budget_s: float) -> dict[str, Any]:
    """torchlens 2.36.1: `log_forward_pass(..., vis_opt="none")` is gone (the 2.0 API says
    "use torchlens.trace(model, x)"); `tl.trace` draws nothing unless `.draw()` is called.
    save="none" keeps metadata only (no activations): the graph-only mode, its fastest."""
    import torchlens as tl

    def trace(b: Built) -> Any:
        return tl.trace(b.model, list(b.args), input_kwargs=b.kwargs or None, save=None)

    def extras(b: Built, log: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"version": _version("torchlens")}
        for attr in ("layer_list", "layers"):
            layers = getattr(log, attr, None)
            if layers is not None:
                with contextlib.suppress(Exception):
                    out["nodes"] = len(layers)
                    break
        return out

    return measure("torchlens", model_name, runs, budget_s, trace, extras)


def torchvista(model_name: str, runs: int, budget_s: float) -> dict[str, Any]:
    """torchvista 0.2.13 README: `trace_model(model, inputs)`; outside a notebook it builds
    the full HTML page and hands it to IPython's display() (printed as a repr, dropped
    here); no browser, no file."""
    from torchvista import trace_model

    def trace(b: Built) -> Any:
        if b.kwargs:
            raise NotImplementedError("torchvista.trace_model takes positional inputs only")
        inputs: Any = b.args[0] if len(b.args) == 1 else b.args
        return trace_model(b.model, inputs)

    def extras(b: Built, _: Any) -> dict[str, Any]:
        return {"version": _version("torchvista")}

    return measure("torchvista", model_name, runs, budget_s, trace, extras)


def _version(dist: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001
        return None


TOOLS: dict[str, Callable[[str, int, float], dict[str, Any]]] = {
    "plain": plain,
    "torchscope": torchscope,
    "torchscope-off": torchscope_off,
    "torchview": torchview,
    "torchlens": torchlens,
    "torchvista": torchvista,
}
PEERS = ("torchview", "torchlens", "torchvista")
