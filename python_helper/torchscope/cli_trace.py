"""Trace a `FILE.py:NAME` target for the command line (`trace`, `summary`, `diff`): build it,
choose its input, trace, and turn every way that can fail into one line and an exit code.

Exit codes (README, "Command line"): 1 the forward raised (the partial graph exists);
2 bad input (a missing file or name, an import or syntax error, an input expression that
fails, `sys.exit` in the user's code while loading, no torch, an unwritable output);
3 the time budget ran out. The budget holds for any code: a loop in pure Python at import or
in the forward is stopped by a timer signal where the platform has one (POSIX).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from .cli_say import say
from .failure import exit_text, message_of, one_line
from .hard_stop import OutOfTime, hard_stop

if TYPE_CHECKING:  # the graph module needs msgpack: imported once torch is known to be there
    from .graph import Graph


class CliError(Exception):
    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass
class Traced:
    graph: Graph
    input: str  # where the input came from, for the summary line
    timed_out: bool = False  # the tracer stopped the forward at its budget: a partial graph
    # top-level statements that did not run and that the forward's error points at
    suspects: list[Any] = field(default_factory=list[Any])
    guessed: Optional[str] = None  # the guessed input's expression (None: not a guess)


def torch_missing() -> Optional[str]:
    """What to say when this interpreter has no torch (a trace needs it); None: it has."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return (
            f"torch is not installed in this Python ({sys.executable}); "
            "install it or pick an interpreter that has it"
        )
    return None


def trace_target(
    spec: str,
    device: str = "cpu",
    input_expr: Optional[str] = None,
    time_budget: Optional[float] = None,
    run_top_level: bool = False,
    train: Optional[bool] = None,
    values: bool = True,
    costs: bool = True,
    seed: Optional[int] = 0,
    before_trace: Optional[Callable[[], None]] = None,
) -> Traced:
    """Build `spec`, choose its input as the editor does, trace. CliError on every failure but
    a forward that raised (that is a graph with `error`) or ran out of time (code 3).
    `before_trace`: called once the model and its input are made, just before the trace."""
    missing = torch_missing()
    if missing:
        raise CliError(missing)
    from .build_target import TargetError, complete_target

    try:
        spec, took = complete_target(spec)
    except TargetError as exc:
        raise CliError(str(exc)) from None
    if took:
        say(took)

    try:
        with hard_stop(time_budget, outside_forward=True) as over:
            return _trace(
                spec,
                device,
                input_expr,
                time_budget,
                run_top_level,
                train,
                values,
                costs,
                seed,
                before_trace,
                over,
            )
    except OutOfTime:  # outside the forward (importing, building): no graph
        raise CliError(f"the trace ran past {time_budget:g} s and was stopped", 3) from None
    except RecursionError:
        raise CliError(
            f"{spec} recursed too deep (modules nested thousands of levels, or a forward "
            "that calls itself): Python's stack ran out"
        ) from None


def _trace(
    spec: str,
    device: str,
    input_expr: Optional[str],
    time_budget: Optional[float],
    run_top_level: bool,
    train: Optional[bool],
    values: bool,
    costs: bool,
    seed: Optional[int],
    before_trace: Optional[Callable[[], None]],
    budget_over: Callable[[], None],
) -> Traced:
    import torch

    from .build_target import (
        ChosenInput,
        RunsCode,
        TargetError,
        another_guess,
        as_call,
        build,
        choose_input,
        input_call_in_file,
        is_model_class,
        split_target,
    )
    from .definitions import defining, suspects
    from .inputs import NoInputError, on_the_command_line
    from .tracer import ModelTooDeep, TraceTimeout, trace_call

    if seed is not None:  # the same code gets the same random weights every time
        torch.manual_seed(seed)
    try:
        built = build(spec, device=device, run_top_level=run_top_level)
    except RunsCode as exc:
        raise CliError(f"{exc} (pass --run-top-level to run it)") from None
    except TargetError as exc:
        raise CliError(str(exc)) from None
    except SyntaxError as exc:
        raise CliError(f"syntax error in {exc.filename}:{exc.lineno}: {exc.msg}") from None
    except SystemExit as exc:
        raise CliError(f"loading {spec} {exit_text(exc)}") from None
    except Exception as exc:  # importing or building the user's model raised
        hint = ""
        if device != "meta" and _out_of_memory(exc):
            hint = (
                "; it does not fit in memory here: --device meta builds and traces it without any"
            )
        raise CliError(f"building {spec} failed: {one_line(exc)}{_where(exc)}{hint}") from None
    if train is not None:
        built.model.train(train)
    try:
        path, name = split_target(spec)
        imported_class = is_model_class(getattr(built.module, name, None))
        call = None if input_expr else input_call_in_file(path, name, None, imported_class)
        if seed is not None:  # as the editor's runner does: the input from the seed too
            torch.manual_seed(seed)
        chosen = choose_input(built, device, input_expr, call)
    except TargetError as exc:  # (a name the file's left-out top-level code would make?)
        blamed = defining(built.skipped, exc.__cause__)
        raise CliError(f"{exc}; {suspects_hint(blamed)}" if blamed else str(exc)) from None
    except NoInputError as exc:
        raise CliError(f"{on_the_command_line(str(exc))}{_skipped_hint(built.skipped)}") from None
    except SystemExit as exc:
        raise CliError(f"the input called sys.exit({exc.code!r})") from None

    def traced(chosen: ChosenInput) -> Any:
        args, kwargs = as_call(chosen.value, built.model)
        try:
            return trace_call(
                built.model,
                args,
                kwargs,
                time_budget=time_budget,
                raise_errors=False,
                values=values,
                costs=costs,
            )
        except ModelTooDeep as exc:
            raise CliError(str(exc)) from None
        except SystemExit as exc:
            raise CliError(f"the forward called sys.exit({exc.code!r})", 1) from None

    if before_trace is not None:
        before_trace()
    graph = traced(chosen)
    if graph.error is not None and graph.error.type != TraceTimeout.__name__:
        other = another_guess(built, chosen, device, seed)  # as the editor's runner does
        if other is not None:
            chosen = other
            graph = traced(chosen)
    budget_over()  # the user's code is done: what follows looks at the graph
    timed_out = graph.error is not None and graph.error.type == TraceTimeout.__name__
    error = graph.error
    blamed = suspects(built.skipped, f"{error.type}: {error.message}") if error else []
    described = chosen.described
    if built.built_as:
        described += f"; model built as {built.built_as}"
    guessed = chosen.expr if chosen.kind == "guess" else None
    return Traced(graph, described, timed_out, blamed, guessed)


def _skipped_hint(skipped: list[Any]) -> str:
    """A guess can't tell what the file's top-level code would have made (a vocabulary a loop
    fills): offer to run it."""
    from .build_target import describe_skipped

    if not skipped:
        return ""
    return (
        "; or run the file's top-level code that did not run "
        f"({describe_skipped(skipped)}) with --run-top-level"
    )


def _where(exc: BaseException) -> str:
    import traceback

    from .usercode import is_user_file

    frames: list[Any] = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if is_user_file(f.filename)]
    where = (user or frames)[-1] if frames else None
    return f" ({where.filename}:{where.lineno})" if where else ""


def _out_of_memory(exc: BaseException) -> bool:
    """torch's allocator refused, or Python ran out (the system's killer leaves no message)."""
    return isinstance(exc, MemoryError) or _ALLOCATOR_REFUSED in message_of(exc)


def ran_out_of_memory(graph: Graph) -> bool:
    """The forward raised as _out_of_memory says (a graph's error keeps its type's name)."""
    e = graph.error
    return e is not None and (e.type == "MemoryError" or _ALLOCATOR_REFUSED in e.message)


_ALLOCATOR_REFUSED = "can't allocate memory"  # (torch's CPU allocator's words)


def read_values_on_meta(graph: Graph) -> bool:
    """The forward raised reading a meta tensor's values (`.item()`, `if x.sum() > 0`,
    `.tolist()`, `.numpy()`, a mask `x[x > 0]`): torch says "… cannot be called on meta
    tensors", "Cannot copy out of meta tensor; no data!", "can't convert meta device type
    tensor", "… data-independent implementation does not exist", "… with Meta tensors"."""
    e = graph.error
    return e is not None and _META_READ.search(e.message) is not None


_META_READ = re.compile(r"meta (tensor|device)|data-independent", re.IGNORECASE)


def suspects_hint(suspects: list[Any]) -> str:
    """The line saying which left-out top-level code may make what a forward lacked (the
    first three, each once)."""
    from .definitions import skipped_lines

    return (
        f"the file's top-level code that did not run may make what it lacks "
        f"({skipped_lines(suspects)}): "
        "--run-top-level runs it"
    )


def error_line(graph: Graph) -> str:
    """Where a forward raised, for people: the user's line, and the library line inside it."""
    e = graph.error
    if e is None:
        return ""
    from .summary import at, in_module  # (msgpack's importers: not before torch is found)

    node = graph.nodes[e.node]
    inside = f" (inside {node.inside.file}:{node.inside.line})" if node.inside else ""
    return (
        f"the forward raised {e.type}: {e.message}{in_module(graph, node)}{at(node.site)}{inside}"
    )
