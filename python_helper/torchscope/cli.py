"""Command line: `python -m torchscope trace|summary FILE.py:NAME`, `diff A B`."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

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
            help="stop a trace that runs longer than this",
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
    try:
        import torch  # noqa: F401
    except ImportError:
        print(
            f"torchscope: torch is not installed in this Python ({sys.executable}); "
            "install it or pick an interpreter that has it",
            file=sys.stderr,
        )
        return 2
    from .build_target import TargetError, build, call_arguments
    from .graph import SUFFIX_FORMATS
    from .inputs import NoInputError
    from .tracer import trace_call

    try:
        built = build(args.target, device=args.device)
        call_args, call_kwargs = call_arguments(built, args.device, args.input_expr)
    except (TargetError, NoInputError) as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return 2
    except SyntaxError as exc:
        print(
            f"torchscope: syntax error in {exc.filename}:{exc.lineno}: {exc.msg}", file=sys.stderr
        )
        return 2
    except Exception as exc:  # an error while importing or building the user's model
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(
            f"torchscope: building {args.target} failed: {type(exc).__name__}: {exc} "
            f"({where.filename}:{where.lineno})",
            file=sys.stderr,
        )
        return 2
    graph = trace_call(
        built.model, call_args, call_kwargs, time_budget=args.time_budget, raise_errors=False
    )

    if args.command == "summary":
        print(graph.summary())
    else:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        graph.save(out, args.format or SUFFIX_FORMATS.get(out.suffix.lower(), "msgpack"))
        s = graph.stats()
        print(
            f"{out}: {graph.model.name}, {s['modules']} module calls, {s['ops']} ops, "
            f"{out.stat().st_size} bytes, traced in {s['trace_ms']:.0f} ms"
        )
    if graph.error is not None:
        e = graph.error
        site = graph.nodes[e.node].site
        at = f" at {site.file}:{site.line}" if site else ""
        print(
            f"torchscope: the forward raised {e.type}: {e.message}{at} "
            "(the graph up to the failing call was written)"
            if args.command == "trace"
            else f"torchscope: the forward raised {e.type}: {e.message}{at}",
            file=sys.stderr,
        )
        return 1
    return 0


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
