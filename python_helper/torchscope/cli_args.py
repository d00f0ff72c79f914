"""Command-line options that `trace`, `summary` and `diff` declare alike (a time budget and
its check, running the file's top-level code), declared once; the options whose help says
what they do in each command (`--input`, `--device`, `--no-values` …) are each command's."""

from __future__ import annotations

import argparse
import math
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
