"""`torchscope diff A B`: compare two forward passes, each a target or a saved graph."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import json
import math
import os
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from . import cli_args
from .cli_args import add_run_top_level, add_time_budget
from .cli_say import say, show
from .diff import STATS_TOLERANCE, Diff, diff_graphs
from .graph_file import GraphFileError, is_graph_file, page_error, read_graph_file
from .html import BundleNotBuiltError
from .side_imports import own_imports

if TYPE_CHECKING:
    from .graph import Graph

DIFF_FORMATS = ("text", "json", "html")


class SideError(Exception):
    """One side cannot be read, built or traced; the message is one line for the user."""


def add_diff_parser(sub: Any) -> None:
    c = sub.add_parser(
        "diff",
        help="compare two forward passes",
        description="Compare two forward passes. A and B are targets (FILE.py:NAME) or saved "
        "graphs (.msgpack, .json). Exit codes: 0 compared (with --check: the same), 1 with "
        "--check: they differ, or B's forward raised, 2 an error.",
    )
    c.add_argument("a", metavar="A", help="FILE.py:NAME or a graph file: the pass before")
    c.add_argument("b", metavar="B", help="FILE.py:NAME or a graph file: the pass after")
    c.add_argument(
        "--input",
        dest="input_expr",
        type=cli_args.expression,
        metavar="EXPR",
        help="input expression for targets, as for trace",
    )
    c.add_argument(
        "--input-b",
        dest="input_b",
        type=cli_args.expression,
        metavar="EXPR",
        help="another input expression for B",
    )
    c.add_argument(
        "--device",
        choices=("cpu", "meta"),
        default="cpu",
        help="trace targets on the meta device (shapes only: no values are compared)",
    )
    c.add_argument(
        "--train-b",
        action="store_true",
        help="trace A in eval mode and B in training mode (model.eval() / model.train())",
    )
    add_time_budget(
        c, "stop a side's trace (import and build included) that runs longer than this (exit 2)"
    )
    add_run_top_level(c)
    c.add_argument(
        "--no-values",
        dest="values",
        action="store_false",
        help="leave tensor statistics out: targets are traced without them, and saved "
        "graphs' are not compared",
    )
    c.add_argument(
        "--no-costs",
        dest="costs",
        action="store_false",
        help="trace targets without FLOPs, output bytes and times",
    )
    c.add_argument(
        "--stats-tolerance",
        type=float,
        default=None,  # (None: not given, so refused where no values are compared)
        metavar="FRACTION",
        help="with recorded values: statistics further apart than this fraction of the "
        f"tensor's absolute maximum differ (default {STATS_TOLERANCE})",
    )
    c.add_argument(
        "--format",
        choices=DIFF_FORMATS,
        default=None,
        help="text (the default), json or html; with -o, the name's suffix says it already",
    )
    c.add_argument(
        "-o",
        "--output",
        help="file to write, NAME.txt, NAME.json or NAME.html, in a folder that exists "
        "(default: standard output)",
    )
    c.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the passes differ, 0 when they are the same",
    )


# what an output file's suffix says it holds
OUTPUT_SUFFIXES = {".txt": "text", ".json": "json", ".html": "html"}


def run_diff(args: argparse.Namespace) -> int:
    if args.format == "html" and not args.output:
        return _fail("--format html writes a page: give the file with -o FILE.html")
    refused = _tolerance_refused(args)
    if refused:
        return _fail(refused)
    if args.stats_tolerance is None:
        args.stats_tolerance = STATS_TOLERANCE
    if args.output:
        try:
            args.format = _output_format(Path(args.output), args.format)
        except SideError as exc:
            return _fail(str(exc))
        side = _compared_file(Path(args.output), args.a, args.b)
        if side:
            return _fail(
                f"-o {args.output} is the graph file {side} compares: the comparison would "
                "replace it; give another name"
            )
    args.format = args.format or "text"
    if not (is_graph_file(args.a) and is_graph_file(args.b)):
        from .cli_trace import torch_missing
        from .launch import launched_rank

        missing = torch_missing()
        if missing:  # (a side to trace: before its file's imports)
            return _fail(missing)

        if launched_rank() is not None:  # every rank would trace both sides, one -o file
            return _fail(
                "diff traces its sides in one process, not under torchrun: trace each side "
                "there (`torchrun … -m torchscope trace FILE.py:NAME -o a.msgpack` writes "
                "a.rank0.msgpack, a.rank1.msgpack …), then compare one rank's files: "
                "`torchscope diff a.rank0.msgpack b.rank0.msgpack`"
            )
    if is_graph_file(args.b) and (args.input_b or args.train_b):
        return _fail("--input-b and --train-b apply to a target B (FILE.py:NAME), not a graph file")
    if is_graph_file(args.a) and args.input_b is not None and args.input_expr is not None:
        # (--input is B's when --input-b is not given; with it, it would be A's, which is read)
        return _fail(
            "--input applies to a target side (FILE.py:NAME) and A is a graph file: "
            "B's input is --input-b's"
        )
    if is_graph_file(args.a) and args.train_b:
        return _fail(
            "--train-b traces A in eval mode and B in training mode: A must be a target "
            "(FILE.py:NAME), not a graph file (traced in whatever mode it was)"
        )
    if is_graph_file(args.a) and is_graph_file(args.b):
        # (options that shape a trace: refused rather than ignored, as summary does; but
        # --no-values leaves saved graphs' statistics uncompared)
        given = cli_args.given(args, [o for o in cli_args.TRACE_ONLY if o[2] != "--no-values"])
        if given:
            return _fail(
                f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to targets "
                "(FILE.py:NAME); A and B are graph files"
            )
    train_a = False if args.train_b else None
    try:
        with _prints_aside(args):
            a, a_suspects, b, b_suspects = _load_sides(args, train_a)
    except (SideError, GraphFileError) as exc:
        return _fail(str(exc))
    a_source = _source(args.a, args.input_expr, train_a)
    b_source = _source(args.b, args.input_b or args.input_expr, True if args.train_b else None)
    for name, graph in (("A", a), ("B", b)):
        if graph.error is not None:
            e = graph.error
            say(
                f"{name}: the forward raised {e.type}: {e.message} (compared up to the failing call)"
            )
    if a_suspects or b_suspects:  # (as trace says it)
        from .cli_trace import suspects_hint

        say(suspects_hint(a_suspects + b_suspects))
    if not args.values:  # saved graphs hold values too: left out of the comparison alike
        for graph in (a, b):
            _without_values(graph)
    diff = diff_graphs(a, b, stats_tolerance=args.stats_tolerance)
    if args.format == "json":
        # (on a stdout that can't show every character, JSON's own escapes: the stream's
        # `\xe9` would be no JSON)
        plain = bool(args.output) or _shows_unicode(sys.stdout)
        text = json.dumps(diff.to_wire(a_source, b_source), indent=1, ensure_ascii=not plain)
    elif args.format == "html":
        try:
            text = compare_page(diff, a_source, b_source)
        except BundleNotBuiltError as exc:
            return _fail(str(exc))
    else:
        from .compare import compare_view
        from .diff_text import render_text

        text = render_text(compare_view(diff, a_source, b_source))
    if args.output:
        from .graph import write_atomic

        out = Path(args.output)
        try:  # (beside it, then renamed: a write that fails leaves what was there)
            write_atomic(out, (text + "\n").encode("utf-8"))
        except OSError as exc:
            return _fail(f"cannot write {out}: {exc.strerror or exc}")
        show(
            f"{out}: {len(diff.added())} added, {len(diff.removed())} removed, "
            f"{len(diff.details)} changed, {diff.same} same"
        )
    else:
        show(text)
    if args.check:  # a guard: the code under test must still run, whatever A did
        return 0 if diff.identical and b.error is None else 1
    return 0


def _prints_aside(args: argparse.Namespace) -> AbstractContextManager[Any]:
    """While the sides are imported, built and traced: what the user's code prints goes to
    stderr when the document goes to stdout as JSON, which it would break."""
    if args.format == "json" and not args.output:
        return _stdout_to_stderr()
    return contextlib.nullcontext()


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Python's sys.stdout, and file descriptor 1 under it (what a C library or a
    subprocess writes), both to stderr for the block."""
    real = sys.__stdout__
    if real is not None:
        real.flush()
    try:
        saved: Optional[int] = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # (no descriptor 2 to point it at: Python's prints only)
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            if real is not None:
                real.flush()  # (what went to sys.__stdout__ meanwhile: still stderr's)
            os.dup2(saved, 1)
            os.close(saved)


def _load_sides(
    args: argparse.Namespace, train_a: Optional[bool]
) -> tuple[Graph, list[Any], Graph, list[Any]]:
    """A's graph and left-out code that may make what its forward lacks, then B's."""
    with own_imports(args.a, args.b):
        a, a_guess, a_suspects = load_side(args.a, args.device, args.input_expr, train_a, args)
    with own_imports(args.b, args.a):
        b, b_guess, b_suspects = load_side(
            args.b,
            args.device,
            args.input_b or args.input_expr,
            True if args.train_b else None,
            args,
            "--input-b" if args.input_b else "--input",
        )
    if a_guess and b_guess and a_guess != b_guess:
        # one input on both sides: B's guess had to differ (batch norm in training mode
        # refuses a batch of one), and every node would differ by it; unless A can't take
        # it (B's first layer wants another size)
        try:
            with own_imports(args.a, args.b):
                again, _, again_suspects = load_side(args.a, args.device, b_guess, train_a, args)
        except (SideError, GraphFileError):
            pass  # A can't be traced with it (past the time budget): its own input stays
        else:
            # (A kept if B's got it less far: fewer ops ran before its error)
            if again.error is None or (
                a.error is not None and again.stats()["ops"] >= a.stats()["ops"]
            ):
                a, a_suspects = again, again_suspects
    return a, a_suspects, b, b_suspects


def _tolerance_refused(args: argparse.Namespace) -> Optional[str]:
    """Why `--stats-tolerance` is refused: not a fraction of 0 or more, or given where no
    values are compared (rather than ignored); None: it is not."""
    tolerance = args.stats_tolerance
    if tolerance is None:
        return None
    if not (math.isfinite(tolerance) and tolerance >= 0):
        return (
            f"--stats-tolerance {tolerance:g}: a fraction of 0 or more "
            "(statistics further apart than it, relative to the tensor's largest |value|, differ)"
        )
    if not args.values:
        return "--stats-tolerance compares recorded values, which --no-values leaves out"
    if args.device == "meta":
        return "--stats-tolerance compares recorded values, and --device meta records none"
    return None


def _shows_unicode(stream: Any) -> bool:
    """The stream's encoding is a UTF (any character can be written)."""
    try:
        return codecs.lookup(stream.encoding).name.startswith("utf")
    except (AttributeError, LookupError, TypeError):
        return False


def _output_format(out: Path, fmt: Optional[str]) -> str:
    """The format `-o out` names, checked before anything is traced (output_file.py)."""
    from .output_file import OutputNameError, checked_output

    try:
        _, known = checked_output(
            str(out),
            fmt,
            OUTPUT_SUFFIXES,
            "torchscope diff writes .txt, .json or .html files",
            "diff.txt",
        )
    except OutputNameError as exc:
        raise SideError(str(exc)) from None
    return known


def _compared_file(out: Path, a: str, b: str) -> Optional[str]:
    """ "A" or "B" when `out` is that side's graph file (None: neither is)."""
    for name, spec in (("A", a), ("B", b)):
        if is_graph_file(spec):
            try:
                # (the same file however named: `./a.json`, a link, another case on a
                # case-blind disk)
                if out.exists() and os.path.samefile(out, spec):
                    return name
            except OSError:  # (a path that can't be resolved is no file of ours)
                continue
    return None


def _without_values(graph: Graph) -> None:
    """The graph as if traced with --no-values: no statistics on its edges, no NaN origin."""
    for edge in graph.edges:
        edge.stats = edge.hist = None
    graph.values.stats = False
    graph.nan_origin = None


def compare_page(diff: Diff, a_source: str, b_source: str) -> str:
    """One standalone page drawing the comparison: the viewer's compare view."""
    from .compare import compare_view
    from .html import render_html

    view = compare_view(diff, a_source, b_source)
    name = diff.b.model.name or diff.a.model.name or "model"
    return render_html(
        view.to_msgpack(), f"{name}: {a_source or 'a'} → {b_source or 'b'} · torchscope"
    )


def load_side(
    spec: str,
    device: str,
    input_expr: Optional[str],
    train: Optional[bool],
    args: argparse.Namespace,
    option: str = "--input",
) -> tuple[Graph, Optional[str], list[Any]]:
    """A saved graph, or the graph of one traced forward of a target; the expression of the
    input it guessed (None: a graph file, or an input it did not guess); and the top-level
    code left out that may make what a forward that raised lacks. `option`: the input's
    option as the user gave it (`--input-b`), for its errors."""
    if is_graph_file(spec):
        return read_graph_file(spec), None, []
    page = page_error(spec)
    if page:
        raise SideError(page)
    from .cli_trace import CliError, trace_target

    try:
        # the same seed for both sides: the same code gets the same random weights and input,
        # so values differ only where the code does
        traced = trace_target(
            spec,
            device,
            input_expr,
            args.time_budget,
            args.run_top_level,
            train=train,
            values=args.values,
            costs=args.costs,
            seed=0,
        )
    except CliError as exc:
        message = exc.message
        if message.startswith("--input ") and option != "--input":
            message = option + message[len("--input") :]
        raise SideError(message) from None
    if traced.timed_out:  # a pass stopped part way is no pass to compare
        raise SideError(f"{spec}: the trace ran past {args.time_budget:g} s and was stopped")
    return traced.graph, traced.guessed, traced.suspects


def _source(spec: str, input_expr: Optional[str], train: Optional[bool]) -> str:
    """What a side was read from, as the documents name it."""
    if is_graph_file(spec):
        return spec
    text = spec + (f" --input {input_expr}" if input_expr else "")
    return text + ("" if train is None else (" (training mode)" if train else " (eval mode)"))


def _fail(message: str) -> int:
    say(message)
    return 2
