"""The requests of a paused debug session (docs/protocol.md, "Debug entry"): candidates,
warm, trace, trace_next_call/poll/disarm (the loader in debug.py answers read_chunk and
remove itself). Runs in the debuggee, called by
the loader in `debug.py`; every request returns a reply dict or raises Failure.

Nothing here starts a thread: a new thread in a paused debuggee hits breakpoints and
deadlocks the evaluate. The graph goes through a file (any DAP message over 16 MiB kills
the session)."""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import os
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from typing import Any, Optional

import torch
from torch import nn

from . import frames, inputs
from .build_target import as_call
from .failure import Failure, one_line, traceback_text
from .hard_stop import hard_stop
from .state import rng_kept
from .threads import core_spared

MAX_OUTPUT = 4000  # characters of captured stdout/stderr returned with a trace
DEFAULT_BUDGET = 60.0

_active = [False]  # one of our traces is running: armed hooks ignore the calls it makes
_armed: dict[str, Any] = {}  # out path → hook handle of trace_next_call
_results: dict[str, dict[str, Any]] = {}  # out path → the reply of a fired hook


class Session:
    """How the debuggee is reached: `remote` when the extension sent the package's sources
    (its files are not on this machine: graphs go to this machine's temp folder)."""

    def __init__(self, start: Optional[types.FrameType], remote: bool) -> None:
        self.start = start
        self.remote = remote

    def frame(self) -> types.FrameType:
        return frames.paused_frame(self.start)

    def out_path(self, out: str) -> str:
        """The extension's file, or (remote) the same name in this machine's temp folder,
        which the extension reads back with `read_chunk`."""
        if not self.remote:
            return os.path.abspath(out)
        name = out.replace("\\", "/").rsplit("/", 1)[-1]
        return os.path.join(tempfile.gettempdir(), "torchscope-debug", name)


def handle(op: str, req: dict[str, Any], session: Session) -> dict[str, Any]:
    if op == "candidates":
        return _candidates(session.frame())
    if op == "warm":
        return _warm(session, req.get("expr"))
    if op == "trace":
        return _trace(
            session,
            str(req["expr"]),
            str(req["out"]),
            req.get("input"),
            req.get("timeBudget", DEFAULT_BUDGET),
            req.get("cancelFile"),
        )
    if op == "trace_next_call":
        return _arm(
            session, str(req["expr"]), str(req["out"]), req.get("timeBudget", DEFAULT_BUDGET)
        )
    if op == "poll":
        return _poll(session.out_path(str(req["out"])))
    if op == "disarm":
        return _disarm(session.out_path(str(req["out"])))
    raise Failure("bad-request", f"unknown op {op!r}")


# -- candidates and warm ---------------------------------------------------------------------


def _candidates(frame: types.FrameType) -> dict[str, Any]:
    ordered, calls = frames.candidates(frame)
    values = frames.frame_values(frame)
    modules = []
    for c in ordered[: frames.MAX_CANDIDATES]:
        if c.stack is not None:
            call = calls[c.stack]
            known, how = True, f"paused call {inputs.describe_call(call.args, call.kwargs)}"
        else:
            found = None
            with contextlib.suppress(Exception), torch.no_grad():
                found = _in_frame(c.module, frame, values)
            known, how = found is not None, (found[2] if found else None)
        cls = type(c.module)
        expr = c.expr or ""
        modules.append(
            {
                "expr": expr,
                "name": expr if not expr.startswith("@") else cls.__name__,
                "cls": cls.__name__,
                "qualname": f"{cls.__module__}.{cls.__qualname__}",
                "params": c.params,
                "reason": c.reason,
                "inputs": known,
                "input": how,
                # what the editor would guess: an input box can start with it
                "guess": None if known else inputs.guess_expression(c.module),
            }
        )
    more = max(0, len(ordered) - frames.MAX_CANDIDATES)
    return {"ok": True, "modules": modules, "more": more}


def _warm(session: Session, expr: Optional[str]) -> dict[str, Any]:
    """The loader imports the tracer and msgpack for this request (and says how long that
    took); with `expr` (the model listed first), the tracer's read-ahead for it too. The
    extension asks while the user is still picking a model, so that the pick is not followed
    by that wait. A warm-up never fails: the trace itself reports what is wrong."""
    if not expr:
        return {"ok": True}
    from .tracer import read_ahead

    try:
        frame = session.frame()
        with rng_kept():  # (as the trace resolves it)
            model = frames.resolve(str(expr), frame, frames.module_calls(frame))
        with core_spared(), torch.no_grad():
            read = read_ahead(model)
    except Exception:  # noqa: BLE001
        return {"ok": True, "readAhead": 0}
    return {"ok": True, "readAhead": read}


# -- tracing ---------------------------------------------------------------------------------


def _choose_inputs(
    model: nn.Module,
    frame: types.FrameType,
    calls: list[frames.ModuleCall],
    input_expr: Optional[str],
) -> tuple[tuple[Any, ...], dict[str, Any], str, str, Optional[str]]:
    """`(args, kwargs, described, kind, expr)`: a typed expression; else the arguments of the
    module's call on the stack; else those of its call on the paused line
    (`frames.call_on_line`); else values in the frame that fit (`inputs.fitting_value`); else
    `needs-input`."""
    if input_expr:
        try:
            value = frames.eval_in_frame(input_expr, frame)
        except Exception as exc:
            raise Failure(
                "needs-input",
                f"the input {input_expr} failed: {one_line(exc)}",
                traceback_text(exc),
            ) from exc
        args, kwargs = as_call(value, model)
        return args, kwargs, input_expr, "typed", input_expr
    for call in calls:
        if call.module is model:
            return (
                call.args,
                call.kwargs,
                f"paused call {inputs.describe_call(call.args, call.kwargs)}",
                "paused-call",
                None,
            )
    found = _in_frame(model, frame, frames.frame_values(frame))
    if found is not None:
        return (*found, "frame", None)
    raise Failure(
        "needs-input",
        f"no input for {type(model).__name__} in this frame: give an input expression "
        '(e.g. torch.randn(1, 3, 224, 224)) or use "trace the next call"',
    )


def _in_frame(
    model: nn.Module, frame: types.FrameType, values: list[tuple[str, Any]]
) -> Optional[tuple[tuple[Any, ...], dict[str, Any], str]]:
    """`(args, kwargs, described)` the paused frame gives `model` (its call on the stack
    aside), in this order: none for a `forward(self)`; the arguments of its call on the
    paused line; values in the frame that fit. The candidates and the trace both ask here."""
    if inputs.takes_nothing(model):
        return (), {}, inputs.nothing_said(model)
    on_line = frames.call_on_line(frame, model)
    if on_line is not None:
        args, kwargs, what = on_line
        return args, kwargs, f"from {what} {inputs.describe_call(args, kwargs)}"
    found = inputs.fitting_value(model, values)
    if found is not None:
        args, kwargs, what = found
        return args, kwargs, f"from the frame: {what}"
    return None


def _trace(
    session: Session,
    expr: str,
    out: str,
    input_expr: Optional[str],
    time_budget: Optional[float],
    cancel_file: Optional[str],
) -> dict[str, Any]:
    frame = session.frame()
    with rng_kept():
        calls = frames.module_calls(frame)
        model = frames.resolve(expr, frame, calls)
        args, kwargs, described, kind, given = _choose_inputs(model, frame, calls, input_expr)
        del calls
        return _run(
            model,
            args,
            kwargs,
            (described, kind, given),
            session.out_path(out),
            time_budget,
            cancel_file,
        )


def _run(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    source: tuple[str, str, Optional[str]],
    out: str,
    time_budget: Optional[float],
    cancel_file: Optional[str] = None,
) -> dict[str, Any]:
    """Trace on private copies of the inputs, quietly, sparing the editor a core; no reference
    to the inputs or the graph is kept."""
    from .tracefile import trace_to_file  # imported by the loader (warm) before any trace

    cancel = (lambda: os.path.exists(cancel_file)) if cancel_file else None
    if cancel is not None and cancel():
        raise Failure("cancelled", "the trace was cancelled")
    started = time.perf_counter()
    args, kwargs, copied = _private_copy(model, args, kwargs)
    was_active, _active[0] = _active[0], True
    try:
        # (a forward looping in pure Python makes no torch call, where the tracer looks at
        # its budget and the cancel: the timer stops it, or the paused session would hang)
        with _quiet() as printed, core_spared(), hard_stop(time_budget, cancel):
            result = trace_to_file(
                model,
                args,
                kwargs,
                out=out,
                described=source[0],
                input_kind=source[1],
                input_expr=source[2],
                time_budget=time_budget or None,
                cancel=cancel,
                # the other ranks of a torchrun program are not in this forward: a collective
                # sent to them would hang, or feed their own pending collectives wrong data
                local_collectives=True,
            )
    except Failure:
        gc.collect()  # a stopped forward's frames (its tensors) sit in the exception's cycle
        raise
    finally:
        _active[0] = was_active
        args = kwargs = None  # type: ignore[assignment]
    if result["summary"]["error"] is not None:
        gc.collect()  # the exception's traceback holds the forward's frames (tensors) in a cycle
    # which live model this is: two traces of one expression (`self`) may be of two models
    reply: dict[str, Any] = {"ok": True, **result, "modelId": f"{os.getpid()}:{id(model)}"}
    text = printed.getvalue()
    if text:
        reply["output"] = text[-MAX_OUTPUT:]
    if not copied:
        reply["warning"] = "the inputs could not be copied: the trace ran on the live objects"
    reply["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return reply


@contextlib.contextmanager
def _quiet() -> Iterator[io.StringIO]:
    """Capture what the forward prints: it would change the program's output."""
    buf = io.StringIO()
    old_out, old_err = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = buf
    try:
        yield buf
    finally:
        sys.stdout, sys.stderr = old_out, old_err


def _private_copy(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any], bool]:
    """A deep copy of the call arguments for the trace, sharing the model's own modules,
    parameters and buffers: a forward that writes into its inputs (`x.mul_(2)`, a
    transformers cache it appends to, a list it logs into) must not change the live ones."""
    memo: dict[int, Any] = {}
    try:
        for m in model.modules():
            memo[id(m)] = m
        for t in model.parameters():
            memo[id(t)] = t
        for t in model.buffers():
            memo[id(t)] = t
        _seed_tensors((args, kwargs), memo, 0)  # autograd's non-leaf tensors refuse deepcopy
        copied = copy.deepcopy((args, kwargs), memo)
        return copied[0], copied[1], True
    except Exception:
        return args, kwargs, False
    finally:
        memo.clear()


def _seed_tensors(value: Any, memo: dict[int, Any], depth: int) -> None:
    """Detached clones of the tensors in nested tuples/lists/dicts, put in the deepcopy memo."""
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            c = value.detach().clone()
            if value.requires_grad and (c.is_floating_point() or c.is_complex()):
                c.requires_grad_(True)
            memo[id(value)] = c
    elif depth < 8 and isinstance(value, (tuple, list)):
        for v in value:
            _seed_tensors(v, memo, depth + 1)
    elif depth < 8 and isinstance(value, dict):
        for v in value.values():
            _seed_tensors(v, memo, depth + 1)


# -- the next call ---------------------------------------------------------------------------


def _inside_evaluate(frame: Optional[types.FrameType]) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_name == "evaluate_expression" and frames.is_debugger_file(code.co_filename):
            return True
        frame = frame.f_back
    return False


def _debugger_tracing_off() -> Callable[[], None]:
    """Stop the debugger tracing this thread (breakpoints in the traced forward would stop it
    mid-trace); returns the function that turns it back on. Used when a hook fires while the
    program runs; an evaluate already runs with tracing off."""
    dbg: Any = sys.modules.get("debugpy")
    if dbg is None or not hasattr(dbg, "trace_this_thread"):
        return lambda: None
    if sys.version_info < (3, 12) and sys.gettrace() is None:
        return lambda: None  # not traced now (inside an evaluate, or no client)
    if _inside_evaluate(sys._getframe(1)):
        return lambda: None  # the module ran from an evaluate: tracing is off and must stay off
    try:
        if not dbg.is_client_connected():
            return lambda: None
        dbg.trace_this_thread(False)
    except Exception:
        return lambda: None

    def back_on() -> None:
        with contextlib.suppress(Exception):
            dbg.trace_this_thread(True)

    return back_on


def _arm(session: Session, expr: str, out: str, time_budget: Optional[float]) -> dict[str, Any]:
    """A one-shot forward pre-hook on the module: its next call is traced with its real
    arguments and written to `out`; `poll` gives the result."""
    frame = session.frame()
    with rng_kept():
        model = frames.resolve(expr, frame, frames.module_calls(frame))
    out_path = session.out_path(out)
    old = _armed.pop(out_path, None)
    if old is not None:
        old.remove()
    _results.pop(out_path, None)
    handle_box: list[Any] = []

    def hook(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if _active[0]:
            return None  # a call inside one of our traces, not the program's: stay armed
        handle = handle_box[0] if handle_box else None
        if handle is not None:
            handle.remove()  # one shot, and the traced call below must not fire it again
        if _armed.get(out_path) is handle:
            _armed.pop(out_path, None)
        back_on = _debugger_tracing_off()
        try:
            described = f"next call {inputs.describe_call(args, kwargs)}"
            part = out_path + ".part"
            with rng_kept():
                reply = _hook_reply(
                    lambda: _run(
                        module, args, kwargs, (described, "next-call", None), part, time_budget
                    ),
                    out_path,
                )
            if reply.get("ok"):
                reply["path"] = out_path
                _publish(reply, part, out_path)
            _results[out_path] = reply
        finally:
            back_on()
        return None  # the real call goes on with its own arguments

    handle = model.register_forward_pre_hook(hook, with_kwargs=True, prepend=True)
    handle_box.append(handle)
    _armed[out_path] = handle
    return {"ok": True, "armed": True, "path": out_path, "model": type(model).__name__}


def _publish(reply: dict[str, Any], part: str, out_path: str) -> None:
    """A hook's graph where the extension watches for it, its reply (the summary: which input,
    which model) beside it first as `<out>.reply.json`: the program need not pause again
    for the extension to read it."""
    from .graph import write_atomic

    beside = out_path + ".reply.json"
    with contextlib.suppress(Exception):
        write_atomic(beside, json.dumps(reply, default=str).encode("utf-8"))
    try:
        os.replace(part, out_path)
    except OSError as exc:  # as a failed trace: its error where the extension watches
        reply.clear()
        reply.update(ok=False, kind="internal", error=f"the graph could not be written: {exc}")
        for leftover in (beside, part):
            with contextlib.suppress(OSError):
                os.remove(leftover)
        with contextlib.suppress(Exception):
            write_atomic(out_path + ".error.json", json.dumps(reply).encode("utf-8"))


def _hook_reply(fn: Callable[[], dict[str, Any]], out_path: str) -> dict[str, Any]:
    """The reply of a hook's trace; a failure (timeout, …) also goes to `<out>.error.json`, so
    an extension watching for the graph file learns of it without a paused frame to poll."""
    from .graph import write_atomic

    try:
        return fn()
    except BaseException as exc:  # noqa: BLE001 - runs inside the program's own call: never raise
        reply = (
            exc.debug_reply()
            if isinstance(exc, Failure)
            else {
                "ok": False,
                "kind": "internal",
                "error": one_line(exc),
                "traceback": traceback_text(exc),
            }
        )
        with contextlib.suppress(Exception):
            write_atomic(out_path + ".error.json", json.dumps(reply, default=str).encode("utf-8"))
        return reply


def _poll(out_path: str) -> dict[str, Any]:
    result = _results.get(out_path)
    if result is None:
        return {"ok": True, "done": False, "armed": out_path in _armed}
    return {**result, "done": True}


def _disarm(out_path: str) -> dict[str, Any]:
    handle = _armed.pop(out_path, None)
    _results.pop(out_path, None)
    if handle is not None:
        handle.remove()
    return {"ok": True, "disarmed": handle is not None}
