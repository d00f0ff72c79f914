"""Command line: `python -m torchscope trace|summary FILE.py:NAME`, `diff A B`."""

from __future__ import annotations

import argparse
import io
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, Optional

from . import cli_args
from .cli_args import add_run_top_level, add_time_budget
from .cli_say import StdoutError, flush_stdout, say, show
from .diff_cli import add_diff_parser, run_diff
from .graph_file import (
    SUFFIX_FORMATS,
    GraphFileError,
    is_graph_file,
    page_error,
    read_graph_file,
)
from .launch import exit_cli, launched_rank

FORMATS = ("msgpack", "json", "html")


class _Parser(argparse.ArgumentParser):
    """argparse's own, with a bad command line as one line on stderr (README: "Always one
    line on stderr, no stack"), pointing at --help for the usage."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"torchscope: {message} (python -m {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="torchscope", description="Trace a PyTorch model's forward pass.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("trace", "write the graph of one forward pass"),
        ("summary", "print a text tree of module calls"),
    ):
        c = sub.add_parser(name, help=help_text)
        c.add_argument(
            "target",
            help="FILE.py:NAME — an nn.Module class, a model instance, "
            "or a zero-argument function returning a model or (model, example_input)"
            + ("; or a saved graph (.msgpack, .json)" if name == "summary" else ""),
        )
        c.add_argument(
            "--input",
            dest="input_expr",
            type=cli_args.expression,
            metavar="EXPR",
            help="input expression, e.g. 'torch.randn(1, 3, 224, 224)'; a tuple gives "
            "positional arguments, a dict keyword arguments",
        )
        c.add_argument(
            "--device",
            choices=("cpu", "meta"),
            default="cpu",
            help="meta: build and trace without memory or compute",
        )
        add_time_budget(
            c, "stop a trace (import and build included) that runs longer than this (exit 3)"
        )
        add_run_top_level(c)
        c.add_argument(
            "--rank",
            type=int,
            default=None,
            metavar="N",
            help="under torchrun: only rank N "
            + ("writes the graph (to -o as given)" if name == "trace" else "prints")
            + "; the other ranks still run the forward, so its collectives complete "
            "(default: every rank"
            + (" writes its own file, NAME.rankR.SUFFIX)" if name == "trace" else " prints)"),
        )
        c.add_argument(
            "--no-values",
            dest="values",
            action="store_false",
            help="leave out tensor statistics (Edge.stats, Edge.hist) and the NaN origin",
        )
        c.add_argument(
            "--no-costs",
            dest="costs",
            action="store_false",
            help="leave out FLOPs, output bytes and times (Node.cost)",
        )
        if name == "trace":
            c.add_argument(
                "--format",
                choices=FORMATS,
                default=None,
                help="output format (the -o name's suffix says it already; if given, it "
                "must agree)",
            )
            c.add_argument(
                "-o",
                "--output",
                required=True,
                help="file to write: NAME.msgpack, NAME.json or NAME.html, in a folder that exists",
            )
    add_diff_parser(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "diff":
        return run_diff(args)
    if args.command == "summary" and is_graph_file(args.target):
        return _summarize_file(args)
    from .cli_trace import CliError, trace_target

    page = page_error(args.target) if args.command == "summary" else None
    if page:
        return _fail(CliError(page))
    from .launch import end_process_group, rank_file, sigterm_as_before, stop_on_sigterm

    launched = launched_rank()
    rank, size = launched if launched else (0, 1)
    if args.rank is not None and not 0 <= args.rank < size:
        ranks = (
            f"ranks 0-{size - 1}" if launched else "one rank, 0 (it was not started by torchrun)"
        )
        return _fail(CliError(f"--rank {args.rank}: this program runs {ranks}"))
    shows = args.rank is None or args.rank == rank  # this rank writes or prints
    out: Optional[Path] = None
    if args.command == "trace" and shows:
        try:
            # each rank probes only its own file: two ranks probing one name race (one's
            # probe file removed under the other's feet)
            each = launched is not None and args.rank is None
            name = str(rank_file(Path(args.output), rank)) if each else args.output
            out = _output(name, args.format)
        except CliError as exc:
            return _fail(exc)
    watch = None
    if launched:  # a rank may wait in C++ for good, where no signal handler runs (stuck.py)
        from .hard_stop import budget_end
        from .stuck import StuckWatch

        watch = StuckWatch(rank, args.time_budget, budget_end)
        watch.start()
    try:
        try:
            traced = trace_target(
                args.target,
                args.device,
                args.input_expr,
                args.time_budget,
                run_top_level=args.run_top_level,
                values=args.values,
                costs=args.costs,
                # (not before: building, joining the group, a rank waits in C++, where a
                # Python handler can't run and torchrun's SIGTERM would wait for its SIGKILL)
                before_trace=stop_on_sigterm if launched else None,
            )
        except CliError as exc:
            if launched:  # every rank says it: which one (`rank 1: the forward called sys.exit(3)`)
                exc.message = f"rank {rank}: {exc.message}"
            return _fail(exc)
        finally:
            if watch is not None:
                watch.stop()
        # every rank of a torchrun program writes and says: which one it is (one terminal)
        who = f"rank {rank}: " if launched and size > 1 else ""
        return _report(args, traced, out, shows, who)
    finally:
        # Only now, the graph written and the failure said: the other ranks may be waiting
        # for this one in a collective, which ending the group fails at once; torchrun then
        # ends this rank (until here, the trace's SIGTERM handler lets it finish: a big
        # graph takes seconds to write)
        if launched:
            sigterm_as_before()
        end_process_group()


def _report(
    args: argparse.Namespace, traced: Any, out: Optional[Path], shows: bool, who: str
) -> int:
    """Write or print a traced graph (`out`: where; None: print it) and say how the trace
    went; the exit code. `shows`: this rank reports (not another, `--rank`); `who`: which
    rank says it ("rank 1: ", "" outside torchrun)."""
    from .cli_trace import (
        CliError,
        error_line,
        ran_out_of_memory,
        read_values_on_meta,
        suspects_hint,
    )

    graph = traced.graph
    if not shows:  # another rank reports (--rank); this one still says why it failed
        if graph.error is not None and not traced.timed_out:
            say(f"{who}{error_line(graph)}")
        return 3 if traced.timed_out else (1 if graph.error is not None else 0)
    if out is None:
        show(graph.summary())
        show(f"input {traced.input}")
    else:
        try:
            graph.save(out)  # (the format: from the suffix _output checked)
        except OSError as exc:
            return _fail(CliError(f"cannot write {out}: {exc.strerror or exc}"))
        s = graph.stats()
        where = f" ({graph.model.rank_text()})" if graph.model.rank is not None else ""
        count = s.get("collectives", 0)
        collectives = f", {count} collective{'s' if count != 1 else ''}" if count else ""
        show(
            f"{out}{where}: {graph.model.name}, {s['modules']} module calls, {s['ops']} ops"
            f"{collectives}, {out.stat().st_size} bytes, traced in {s['trace_ms']:.0f} ms; "
            f"input {traced.input}"
        )
    for warning in graph.warnings:
        say(f"warning: {warning}")
    if traced.timed_out:
        written = " (the graph up to there was written)" if out is not None else ""
        return _fail(
            CliError(f"{who}the trace ran past {args.time_budget:g} s and was stopped{written}", 3)
        )
    if graph.error is not None:
        written = " (the graph up to the failing call was written)" if out is not None else ""
        say(f"{who}{error_line(graph)}{written}")
        if args.device == "meta" and read_values_on_meta(graph):  # (whatever the input)
            say(
                "the forward reads the tensors' values, which the meta device has none of: "
                "trace it on cpu (without --device meta)"
            )
        elif traced.guessed:
            say(
                f"the input was a guess ({traced.guessed}) and may be what is wrong: give the "
                "one the model takes with --input"
            )
        if args.device != "meta" and ran_out_of_memory(graph):
            say("it does not fit in memory here: --device meta traces it without any")
        if traced.suspects:
            say(suspects_hint(traced.suspects))
        return 1
    return 0


def _output(name: str, fmt: Optional[str]) -> Path:
    """The output path of `trace -o`, checked before the trace (output_file.py)."""
    from .cli_trace import CliError
    from .output_file import OutputNameError, checked_output

    try:
        out, _ = checked_output(
            name,
            fmt,
            SUFFIX_FORMATS,
            "torchscope writes .msgpack, .json or .html files",
            "model.html",
        )
    except OutputNameError as exc:
        raise CliError(str(exc)) from None
    return out


def _fail(exc: Any) -> int:
    say(exc.message)
    return int(exc.code)


def _summarize_file(args: argparse.Namespace) -> int:
    """`summary` of a saved graph: no torch needed."""
    given = cli_args.given(args, cli_args.TRACE_ONLY)
    if given:
        say(
            f"{', '.join(given)}: {args.target} is a saved graph; "
            f"{'these options shape' if len(given) > 1 else 'this option shapes'} a trace of "
            "FILE.py:NAME"
        )
        return 2
    try:
        graph = read_graph_file(args.target)
    except GraphFileError as exc:
        say(str(exc))
        return 2
    show(graph.summary())
    return 0


def _escape_unshowable() -> None:
    """A character the terminal's encoding can't show is written escaped (`\\u2192`), not an
    error: a Windows console or redirect in cp1252, `PYTHONIOENCODING=ascii`."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def run() -> NoReturn:
    """The command (`python -m torchscope`, the installed `torchscope`): main, and the ways
    it ends without a stack — a reader that went away, Ctrl-C."""
    _escape_unshowable()
    try:
        if sys.stdout is None:  # (before anything runs: nothing it prints would be seen)
            raise StdoutError("standard output is closed: give the command somewhere to print")
        code = main()
        flush_stdout()  # (a closed pipe shows here, not in the interpreter's teardown)
    except BrokenPipeError:
        # the reader went away (`summary g.json | head`): no stack, and nothing more to flush
        if sys.stdout is not None:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 128 + 13  # as the shell reports a writer stopped by SIGPIPE
    except StdoutError as exc:  # (a full disk, a closed stdout: the user's to fix)
        say(str(exc))
        if sys.stdout is not None:  # what is still buffered can't be written at exit either
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 2
    except KeyboardInterrupt:  # Ctrl-C: one line, as every other way this command ends
        launched = launched_rank()  # under torchrun every rank says it: which one
        rank = f"rank {launched[0]}: " if launched else ""
        sys.stderr.write(f"torchscope: {rank}interrupted\n")  # one write: ranks share a terminal
        code = 128 + 2  # as the shell reports a command stopped by SIGINT
    except Exception:
        # a bug of ours: its stack, for the report, and 2 as for any error (Python's own 1
        # would tell `diff --check` the passes differ, and `trace` that the forward raised)
        traceback.print_exc()
        sys.stderr.write(
            "torchscope: internal error (a bug: the stack above says where), exit 2; "
            "please report it\n"
        )
        code = 2
    exit_cli(code)


if __name__ == "__main__":  # (`python -m torchscope.cli`: as `python -m torchscope`)
    run()
