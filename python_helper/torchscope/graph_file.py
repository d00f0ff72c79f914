"""Reading a saved graph file (`.msgpack`, `.json`) for the command line, with one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .failure import shown_name

if TYPE_CHECKING:
    from .graph import Graph

# a graph file's name ends with its format
SUFFIX_FORMATS = {
    ".msgpack": "msgpack",
    ".mpk": "msgpack",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
}
GRAPH_SUFFIXES = tuple(s for s, fmt in SUFFIX_FORMATS.items() if fmt != "html")  # readable back


class GraphFileError(Exception):
    """A graph file that cannot be read; the message is one line for the user."""


def is_graph_file(spec: str) -> bool:
    """A saved graph rather than a `FILE.py:NAME` target (decided by the suffix)."""
    return Path(spec).suffix.lower() in GRAPH_SUFFIXES


def page_error(spec: str) -> Optional[str]:
    """What to say when `spec` is a viewer page (`trace -o g.html`) given where a graph file
    or a target goes; None for anything else."""
    if Path(spec).suffix.lower() not in (".html", ".htm"):
        return None
    return (
        f"{spec} is a viewer page, not a graph file: give a graph file (.msgpack, .json, as "
        "`trace -o` saves it) or a target FILE.py:NAME"
    )


def read_graph_file(spec: str) -> Graph:
    from .graph import (  # msgpack: once a file is read
        GraphFormatError,
        NewerGraphError,
        from_wire,
        load_wire,
    )

    try:
        data = load_wire(spec)
        if isinstance(data, dict) and "compare" in data:  # what `diff --format html` draws
            raise GraphFileError(
                f"{spec} is a comparison (both passes merged), not one forward pass: give "
                "the graphs it was made of"
            )
        return from_wire(data)
    except FileNotFoundError:
        raise GraphFileError(f"no such file: {shown_name(spec)}") from None
    except NewerGraphError as exc:  # (a graph still: only this torchscope is too old)
        raise GraphFileError(f"{spec}: {exc}") from None
    except GraphFormatError as exc:
        raise GraphFileError(f"{spec} is not a torchscope graph: {exc}") from None
    except (OSError, ValueError) as exc:  # a folder, no permission, broken JSON
        raise GraphFileError(f"cannot read {spec}: {exc}") from None
