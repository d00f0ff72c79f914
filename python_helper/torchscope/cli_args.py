"""Command-line options that `trace`, `summary` and `diff` declare alike (a time budget and
its check, running the file's top-level code), declared once; the options whose help says
what they do in each command (`--input`, `--device`, `--no-values` …) are each command's.
Which of those shape a trace, for the commands that refuse them on saved graphs."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

LONGEST_BUDGET = 1e7  # seconds (~4 months): beyond it the platform's timer overflows


def seconds(text: str) -> float:
    """A time budget: a number of seconds above 0 (argparse's type)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 < value <= LONGEST_BUDGET):  # (NaN fails every comparison)
        raise argparse.ArgumentTypeError(
            f"{text} is no time budget: give a number of seconds above 0, at most {LONGEST_BUDGET:g}"
        )
    return value


def expression(text: str) -> str:
    """An input expression (argparse's type): an empty one is refused, not taken as no
    `--input` at all (the guess) nor as a SyntaxError."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "an empty expression: give the input (e.g. 'torch.randn(1, 8)') or leave the option out"
        )
    return text


def add_time_budget(parser: Any, help_text: str) -> None:
    parser.add_argument(
        "--time-budget", type=seconds, default=None, metavar="SECONDS", help=help_text
    )


def add_run_top_level(parser: Any) -> None:
    parser.add_argument(
        "--run-top-level",
        action="store_true",
        help="run the file's top-level code too (by default only its definitions are "
        "loaded: a training loop at top level does not run)",
    )


# the options that shape a trace, as (attribute, default, flag): `summary` of a saved graph
# and `diff` of two refuse them rather than ignore them
TRACE_ONLY: tuple[tuple[str, Any, str], ...] = (
    ("input_expr", None, "--input"),
    ("device", "cpu", "--device"),
    ("time_budget", None, "--time-budget"),
    ("run_top_level", False, "--run-top-level"),
    ("rank", None, "--rank"),
    ("values", True, "--no-values"),
    ("costs", True, "--no-costs"),
)


def given(args: argparse.Namespace, options: Sequence[tuple[str, Any, str]]) -> list[str]:
    """The flags among `options` given other than as their defaults."""
    return [flag for attr, default, flag in options if getattr(args, attr, default) != default]
