"""Reading a saved graph file (`.msgpack`, `.json`) for the command line, with one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

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


def read_graph_file(spec: str) -> Graph:
    import json

    from .graph import GraphFormatError, from_wire, unpack  # msgpack: only once a file is read

    path = Path(spec)
    try:
        raw = path.read_bytes()
        data = json.loads(raw) if path.suffix.lower() == ".json" else unpack(raw)
        if isinstance(data, dict) and "compare" in data:  # what `diff --format html` draws
            raise GraphFileError(
                f"{spec} is a comparison (both passes merged), not one forward pass: give "
                "the graphs it was made of"
            )
        return from_wire(data)
    except FileNotFoundError:
        raise GraphFileError(f"no such file: {spec}") from None
    except GraphFormatError as exc:
        raise GraphFileError(f"{spec} is not a torchscope graph: {exc}") from None
    except (OSError, ValueError) as exc:  # a folder, no permission, broken JSON
        raise GraphFileError(f"cannot read {spec}: {exc}") from None
