"""Command line: `python -m torchscope trace|summary FILE.py:NAME`, `diff A B`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from .diff_cli import add_diff_parser, run_diff
from .graph_file import GraphFileError, is_graph_file, read_graph_file

FORMATS = ("msgpack", "json", "html")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torchscope", description="Trace a PyTorch model's forward pass."
    )
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
        c.add_argument(
            "--time-budget",
            type=float,
            default=None,
            metavar="SECONDS",
            help="stop a trace (import and build included) that runs longer than this (exit 3)",
        )
        c.add_argument(
            "--run-top-level",
            action="store_true",
            help="run the file's top-level code too (by default only its definitions are "
            "loaded: a training loop at top level does not run)",
        )
        c.add_argument(
            "--rank",
            type=int,
            default=None,
            metavar="N",
            help="under torchrun: only rank N "
            + ("writes the graph (to -o as given)" if name == "trace" else "prints")
            + "; the other ranks still run the forward, so its collectives complete "
            "(default: every rank"
            + (" writes its own file, NAME.rankR.msgpack)" if name == "trace" else " prints)"),
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
                help="output format (default: from the -o suffix, else msgpack)",
            )
            c.add_argument("-o", "--output", required=True, help="file to write")
    add_diff_parser(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "diff":
        return run_diff(args)
    if args.command == "summary" and is_graph_file(args.target):
        return _summarize_file(args.target)
    from .cli_trace import CliError, error_line, trace_target
    from .launch import end_process_group, launched_rank, rank_file

    launched = launched_rank()
    rank = launched[0] if launched else 0
    shows = args.rank is None or args.rank == rank  # this rank writes or prints
    out: Optional[Path] = None
    if args.command == "trace" and shows:
        try:
            # each rank probes only its own file: two ranks probing one name race (one's
            # probe file removed under the other's feet)
            each = launched is not None and args.rank is None
            out = _output(str(rank_file(Path(args.output), rank)) if each else args.output)
        except CliError as exc:
            return _fail(exc)
    try:
        traced = trace_target(
            args.target,
            args.device,
            args.input_expr,
            args.time_budget,
            run_top_level=args.run_top_level,
            values=args.values,
            costs=args.costs,
        )
    except CliError as exc:
        return _fail(exc)
    finally:
        end_process_group()
    graph = traced.graph
    if not shows:  # another rank reports (--rank)
        return 3 if traced.timed_out else (1 if graph.error is not None else 0)
    if out is None:
        print(graph.summary())
    else:
        from .graph import SUFFIX_FORMATS

        try:
            graph.save(out, args.format or SUFFIX_FORMATS.get(out.suffix.lower(), "msgpack"))
        except OSError as exc:
            return _fail(CliError(f"cannot write {out}: {exc.strerror or exc}"))
        s = graph.stats()
        where = f" ({graph.model.rank_text()})" if graph.model.rank is not None else ""
        count = s.get("collectives", 0)
        collectives = f", {count} collective{'s' if count != 1 else ''}" if count else ""
        print(
            f"{out}{where}: {graph.model.name}, {s['modules']} module calls, {s['ops']} ops"
            f"{collectives}, {out.stat().st_size} bytes, traced in {s['trace_ms']:.0f} ms; "
            f"input {traced.input}"
        )
    for warning in graph.warnings:
        print(f"torchscope: warning: {warning}", file=sys.stderr)
    if traced.timed_out:
        written = " (the graph up to there was written)" if out is not None else ""
        return _fail(
            CliError(f"the trace ran past {args.time_budget:g} s and was stopped{written}", 3)
        )
    if graph.error is not None:
        written = " (the graph up to the failing call was written)" if out is not None else ""
        print(f"torchscope: {error_line(graph)}{written}", file=sys.stderr)
        if traced.suspects:
            lines = "; ".join(f"line {s.line}: {s.text}" for s in traced.suspects[:3])
            print(
                f"torchscope: the file's top-level code that did not run may make what it "
                f"lacks ({lines}): --run-top-level runs it",
                file=sys.stderr,
            )
        return 1
    return 0


def _output(name: str) -> Path:
    """The output path, checked before anything runs: a folder or an unwritable place is bad
    input (exit 2), found in a second rather than after the trace."""
    from .cli_trace import CliError

    out = Path(name)
    if out.is_dir():
        raise CliError(f"-o {name} is a folder: give a file name, e.g. {out / 'model.html'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        existed = out.exists()
        with open(out, "ab"):
            pass
        if not existed:
            out.unlink()  # nothing is left behind if the trace fails
    except OSError as exc:
        raise CliError(f"cannot write {name}: {exc.strerror or exc}") from None
    return out


def _fail(exc: Any) -> int:
    print(f"torchscope: {exc.message}", file=sys.stderr)
    return int(exc.code)


def _summarize_file(path: str) -> int:
    """`summary` of a saved graph: no torch needed."""
    try:
        graph = read_graph_file(path)
    except GraphFileError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return 2
    print(graph.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
