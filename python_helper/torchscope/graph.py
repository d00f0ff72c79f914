"""The traced graph: dataclasses and the `torchscope.graph` v1 wire format."""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Optional

import msgpack

from .graph_file import SUFFIX_FORMATS

FORMAT = "torchscope.graph"
VERSION = 1

NODE_KINDS = ("input", "output", "op", "module", "constant", "error")


# ops whose output values are whatever the memory held (FSDP's buffers, `out` tensors): no
# NaN origin, nothing to compare between two traces
UNINITIALIZED = frozenset(
    ("empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided")
)


@dataclass(slots=True)
class Site:
    file: str
    line: int
    func: str = ""
    # where on the line the call's expression starts (0-based, in UTF-8 bytes, as Python's
    # code positions count): a loop runs one expression again, a statement calling two
    # layers runs two (None: not known, as in a file written before sites had it)
    col: Optional[int] = None

    def to_wire(self) -> dict[str, Any]:
        if self.col is None:
            return {"file": self.file, "line": self.line, "func": self.func}
        return {"file": self.file, "line": self.line, "func": self.func, "col": self.col}


@dataclass(slots=True)
class Cost:
    """FLOPs, output bytes and wall time of a call; inclusive for module calls and groups."""

    flops: int
    bytes: int
    time_ns: int

    def to_wire(self) -> dict[str, Any]:
        return {"flops": self.flops, "bytes": self.bytes, "time_ns": self.time_ns}


def group_costs(graph: Graph) -> None:
    """A ×N group costs what its members cost together (a trace's folds, a comparison's)."""
    for g in graph.groups:
        g.cost = _sum(graph.nodes[m].cost for m in g.members)


def _sum(costs: Iterable[Optional[Cost]]) -> Optional[Cost]:
    total: Optional[Cost] = None
    for c in costs:
        if c is None:
            continue
        if total is None:
            total = Cost(0, 0, 0)
        total.flops += c.flops
        total.bytes += c.bytes
        total.time_ns += c.time_ns
    return total


@dataclass(slots=True)
class Recorded:
    """What a trace recorded besides the structure: `graph.values` on the wire."""

    stats: bool = False
    costs: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {"stats": self.stats, "costs": self.costs}


@dataclass(slots=True)
class Node:
    id: int
    kind: str
    name: str
    parent: Optional[int] = None
    target: str = ""
    path: str = ""
    call: int = 0
    site: Optional[Site] = None
    defn: Optional[Site] = None
    params: int = 0
    attrs: dict[str, Any] = field(default_factory=dict)
    # the library line behind `site` (a torch helper the user's line called, the layer that
    # raised); on the wire only when set
    inside: Optional[Site] = None
    cost: Optional[Cost] = None


@dataclass(slots=True)
class Edge:
    src: int
    dst: int
    shape: Optional[list[int]]
    dtype: str
    # {min, max, mean, std, absmax, zeros, nan, inf, numel}; shared by the edges of one tensor
    stats: Optional[dict[str, Any]] = None
    hist: Optional[dict[str, Any]] = None  # {lo, hi, counts: [16 ints]}
    # a DTensor's layout beside its local `shape`; on the wire only for DTensor edges
    layout: Optional[Layout] = None
    # which of `src`'s output tensors this is (0-based), when `src` made several; else None
    output: Optional[int] = None

    def to_wire(self) -> dict[str, Any]:
        wire = {"src": self.src, "dst": self.dst, "shape": self.shape, "dtype": self.dtype}
        if self.stats is not None:
            wire["stats"] = self.stats
        if self.hist is not None:
            wire["hist"] = self.hist
        if self.layout is not None:
            wire.update(self.layout.to_wire())
        if self.output is not None:
            wire["output"] = self.output
        return wire


@dataclass(slots=True)
class Layout:
    """How a DTensor is spread over its device mesh: `global_shape`, `placements` ("Shard(0)",
    "Replicate()", one per mesh dimension, joined by ", ") and `mesh` ("cpu[2]", "cuda[dp=2,
    tp=4]")."""

    global_shape: list[int]
    placements: str
    mesh: str

    def to_wire(self) -> dict[str, Any]:
        return {"global_shape": self.global_shape, "placements": self.placements, "mesh": self.mesh}


@dataclass(slots=True)
class Group:
    """Consecutive sibling module calls of identical structure, drawn as one "×N" box."""

    parent: Optional[int]
    members: list[int]
    name: str
    cost: Optional[Cost] = None  # the members' costs summed

    def to_wire(self) -> dict[str, Any]:
        wire = {"parent": self.parent, "members": self.members, "name": self.name}
        if self.cost is not None:
            wire["cost"] = self.cost.to_wire()
        return wire


@dataclass(slots=True)
class ErrorInfo:
    type: str
    message: str
    node: int
    traceback: list[Site]

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "node": self.node,
            "traceback": [s.to_wire() for s in self.traceback],
        }


@dataclass(slots=True)
class ModelInfo:
    name: str
    qualname: str
    params: int
    device: str
    dtype: str
    # this process's place in torch.distributed, when it was initialised for the trace
    rank: Optional[int] = None
    world_size: Optional[int] = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "name": self.name,
            "qualname": self.qualname,
            "params": self.params,
            "device": self.device,
            "dtype": self.dtype,
        }
        if self.rank is not None:
            wire["rank"] = self.rank
            wire["world_size"] = self.world_size
        return wire

    def rank_text(self) -> str:
        """ "rank 1 of 2", or "" outside torch.distributed."""
        return "" if self.rank is None else f"rank {self.rank} of {self.world_size}"

    def title(self) -> str:
        """A page's title: "MLP", "MLP (rank 1 of 2)" (each rank's tab told apart)."""
        name = self.name or "torchscope"
        return f"{name} ({self.rank_text()})" if self.rank is not None else name


@dataclass
class Graph:
    model: ModelInfo
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)
    error: Optional[ErrorInfo] = None
    trace_ms: float = 0.0
    # what the trace could not undo (a parameter written behind torch's back): said, never silent
    warnings: list[str] = field(default_factory=list[str])
    values: Recorded = field(default_factory=Recorded)
    # first op whose output is non-finite while its inputs are finite; None also when
    # statistics were off (values.stats tells the two apart)
    nan_origin: Optional[int] = None

    # -- queries -----------------------------------------------------------
    def children(self, node_id: Optional[int]) -> list[Node]:
        return [n for n in self.nodes if n.parent == node_id]

    def find(self, kind: str, name: str) -> list[Node]:
        return [n for n in self.nodes if n.kind == kind and n.name == name]

    def module_call(self, path: str, call: int = 0) -> Node:
        for n in self.nodes:
            if n.kind == "module" and n.path == path and n.call == call:
                return n
        raise KeyError(f"no call {call} of module {path!r}")

    # -- wire format -------------------------------------------------------
    def to_wire(self) -> dict[str, Any]:
        wire = {
            "format": FORMAT,
            "version": VERSION,
            "model": self.model.to_wire(),
            "nodes": _nodes_to_wire(self.nodes),
            "edges": [e.to_wire() for e in self.edges],
            "groups": [g.to_wire() for g in self.groups],
            "error": self.error.to_wire() if self.error else None,
            "stats": self.stats(),
            "warnings": list(self.warnings),
            "values": self.values.to_wire(),
        }
        if self.values.stats:
            wire["nan_origin"] = self.nan_origin
        return wire

    def __repr__(self) -> str:
        # one line: a notebook shows a cell's last value (the fields were megabytes of text);
        # summary() has the rest
        s = self.stats()
        rank = f" ({self.model.rank_text()})" if self.model.rank is not None else ""
        error = f", raised {self.error.type}" if self.error is not None else ""
        return (
            f"<torchscope.Graph {self.model.name or 'model'}{rank}: {s['modules']} module "
            f"calls, {s['ops']} ops{error}>"
        )

    def stats(self) -> dict[str, Any]:
        """`{trace_ms, ops, modules}` as on the wire, and `collectives` when there are any."""
        stats: dict[str, Any] = {
            "trace_ms": round(self.trace_ms, 3),
            "ops": sum(1 for n in self.nodes if n.kind == "op"),
            "modules": sum(1 for n in self.nodes if n.kind == "module"),
        }
        collectives = self.collectives()
        if collectives:
            stats["collectives"] = len(collectives)
        return stats

    def collectives(self) -> list[Node]:
        """The op nodes of collective communication (`attrs.collective`)."""
        return [n for n in self.nodes if n.kind == "op" and n.attrs.get("collective") is True]

    def error_location(self, *prefer: Callable[[str], bool]) -> tuple[Optional[str], Optional[int]]:
        """Where to show the error: the innermost traceback frame whose file the first of
        `prefer` accepts (else the next one's), else the error node's site, else (a call
        into the model itself failed: its arguments refused) the line that called the module
        it failed in, or its class, else the innermost frame."""
        if self.error is None:
            return None, None
        frames = self.error.traceback
        for accept in prefer:
            for site in reversed(frames):
                if accept(site.file):
                    return site.file, site.line
        i = self.error.node
        node = self.nodes[i] if 0 <= i < len(self.nodes) else None
        if node is not None and node.site is not None:
            return node.site.file, node.site.line
        parent = self.nodes[node.parent] if node is not None and node.parent is not None else None
        where = parent and (parent.site or parent.defn)  # (the editor's runner: no call site)
        if where is not None:
            return where.file, where.line
        if frames:
            return frames[-1].file, frames[-1].line
        return None, None

    def result_summary(self, described: str, *prefer: Callable[[str], bool]) -> dict[str, Any]:
        """A trace result's `summary` (docs/protocol.md), the same from the editor's runner
        and from the paused-debugger entry; `described`: where the input came from;
        `prefer`: as in `error_location`."""
        error = None
        if self.error is not None:
            file, line = self.error_location(*prefer)
            error = {
                "type": self.error.type,
                "message": self.error.message,
                "file": file,
                "line": line,
            }
        stats = self.stats()
        return {
            "model": self.model.name,
            "qualname": self.model.qualname,
            "nodes": len(self.nodes),
            "edges": len(self.edges),
            "ops": stats["ops"],
            "modules": stats["modules"],
            "params": self.model.params,
            "trace_ms": stats["trace_ms"],
            "input": described,
            "error": error,
            "warnings": list(self.warnings),
            "rank": self.model.rank,
            "worldSize": self.model.world_size,
            "collectives": stats.get("collectives", 0),
        }

    def to_msgpack(self) -> bytes:
        return pack_wire(self.to_wire())

    def to_json(self, indent: Optional[int] = None) -> str:
        return json.dumps(self.to_wire(), indent=indent, allow_nan=False)

    def save(self, path: str | Path, fmt: Optional[str] = None) -> Path:
        """Write the graph as `fmt` ("msgpack", "json", "html"); by default the suffix picks it."""
        path = Path(path)
        if fmt is None:
            fmt = SUFFIX_FORMATS.get(path.suffix.lower())
            if fmt is None:
                raise ValueError(
                    f"unknown graph file suffix {path.suffix!r}: use .msgpack, .json or .html"
                )
        if fmt == "json":
            data = self.to_json().encode("utf-8")
        elif fmt == "msgpack":
            data = self.to_msgpack()
        elif fmt == "html":
            from .html import render_html

            data = render_html(self.to_msgpack(), title=self.model.title()).encode("utf-8")
        else:
            raise ValueError(f"unknown graph format {fmt!r}: use msgpack, json or html")
        write_atomic(path, data)
        return path

    def summary(self) -> str:
        from .summary import summarize

        return summarize(self)

    # -- reading -----------------------------------------------------------
    @staticmethod
    def from_wire(data: Any) -> Graph:
        return from_wire(data)

    @staticmethod
    def load(path: str | Path) -> Graph:
        return from_wire(load_wire(path))


def load_wire(path: str | Path) -> Any:
    """A graph file's wire map, not yet checked (`.json` by its suffix, else msgpack)."""
    path = Path(path)
    raw = path.read_bytes()
    try:
        return _json(raw) if path.suffix.lower() == ".json" else unpack(raw)
    except RecursionError:
        raise GraphFormatError("nested too deeply to be a graph") from None


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:  # (UnicodeDecodeError too)
        if raw[:1] and (0x80 <= raw[0] <= 0x8F or raw[0] in (0xDE, 0xDF)):  # a msgpack map
            raise GraphFormatError("not JSON: it is msgpack: name it .msgpack") from exc
        raise GraphFormatError(f"not JSON: {exc}") from exc


def write_atomic(path: str | Path, data: bytes) -> None:
    """Write to a temporary file beside `path`, then rename: a reader (the extension
    watching for a paused program's graph, a panel reloading) never sees half a file, and a
    write that fails leaves what was there. The temporary has a name of its own
    (`.3f9a1c2e.g.json.part`), never a file of the user's (`g.json.part`). A link is written
    through (the file it names is replaced, as an in-place write would), a file keeps its
    mode, and only a regular file is replaced (a link to /dev/null stays one). An error
    names `path`, not the temporary."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not path.is_file():  # (a folder, a device, a named pipe)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    try:
        tmp, file = _temporary_beside(path)
    except OSError as exc:
        raise _about(path, exc) from None
    try:
        with file:
            file.write(data)
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _about(path, exc) from None
        raise


def _temporary_beside(path: Path) -> tuple[Path, BinaryIO]:
    """A new file in `path`'s folder, opened for writing, under a name no other file has
    (made with the umask's mode, as an in-place write would be: mkstemp's is 0600)."""
    name = _fitting(path.name, _NAME_MAX - _TEMPORARY_EXTRA)
    for _ in range(100):
        # (os.urandom, not the secrets module: a project's own secrets.py would be shadowed)
        tmp = path.with_name(f".{os.urandom(4).hex()}.{name}.part")
        try:
            return tmp, open(tmp, "xb")  # (the caller closes it)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", str(path))


_NAME_MAX = 255  # bytes in a file name (Linux, macOS; Windows counts 255 characters)
_TEMPORARY_EXTRA = len(".01234567..part")


def _fitting(name: str, limit: int) -> str:
    """`name`, or its end, in at most `limit` bytes: a name near the system's limit keeps a
    temporary that fits (its suffix, `.msgpack`, stays at the end)."""
    while len(os.fsencode(name)) > limit:
        name = name[1:]
    return name


def _about(path: Path, exc: OSError) -> OSError:
    """`exc` as an error of writing `path` (the user's name, not the temporary's)."""
    if exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror, str(path))


def _nodes_to_wire(nodes: list[Node]) -> list[dict[str, Any]]:
    """Node maps, reusing one map per shared Site object (the tracer shares them)."""
    sites: dict[int, Any] = {}
    defns: dict[int, Any] = {}
    out = []
    for n in nodes:
        site = n.site
        if site is None:
            s = None
        else:
            s = sites.get(id(site))
            if s is None:
                s = sites[id(site)] = site.to_wire()
        defn = n.defn
        if defn is None:
            d = None
        else:
            d = defns.get(id(defn))
            if d is None:
                d = defns[id(defn)] = {"file": defn.file, "line": defn.line}
        wire = {
            "id": n.id,
            "kind": n.kind,
            "name": n.name,
            "parent": n.parent,
            "target": n.target,
            "path": n.path,
            "call": n.call,
            "site": s,
            "defn": d,
            "params": n.params,
            "attrs": n.attrs,
        }
        if n.inside is not None:
            wire["inside"] = n.inside.to_wire()
        if n.cost is not None:
            wire["cost"] = n.cost.to_wire()
        out.append(wire)
    return out


class GraphFormatError(ValueError):
    """The bytes are not a torchscope graph this version can read."""


class NewerGraphError(GraphFormatError):
    """A torchscope graph in a newer format than this version reads."""


def pack_wire(wire: dict[str, Any]) -> bytes:
    """A wire map (`Graph.to_wire`, perhaps edited) as the msgpack bytes of a graph file."""
    packed = msgpack.packb(wire, use_bin_type=True, unicode_errors=TEXT_ERRORS)
    assert isinstance(packed, bytes)
    return packed


# Text no UTF-8 can hold (a lone surrogate: os.fsdecode of a name in another encoding, in an
# error message or a layer's description) written as its escape, `\udce9`, not refused
TEXT_ERRORS = "backslashreplace"


def unpack(raw: bytes) -> Any:
    try:
        return msgpack.unpackb(raw, raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises several unrelated types
        head = raw[:512].lstrip().lower()
        if head.startswith((b"<!doctype html", b"<html")):
            raise GraphFormatError(
                "an HTML page, not a graph file (the graph is saved as .msgpack or .json)"
            ) from exc
        if head.startswith(b"{"):
            raise GraphFormatError("not msgpack: it is JSON: name it .json") from exc
        # (msgpack's own words are empty for some bytes, its internals' for others)
        raise GraphFormatError(
            "not a msgpack document (its bytes are not msgpack, or the file is cut short)"
        ) from exc


def _site(d: Any) -> Optional[Site]:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise TypeError("a site is no map")  # (from_wire says where)
    col = d.get("col")
    if col is not None and (type(col) is not int or col < 0):  # (as the viewer reads it)
        raise ValueError(f"a site's col should be a whole number from 0, not {col!r}")
    return Site(str(d["file"]), int(d["line"]), str(d.get("func", "")), col)


def check_version(version: Any) -> None:
    """A graph file's `version`, as this torchscope reads it: NewerGraphError for a newer
    format (update torchscope), GraphFormatError for none or one that never was."""
    if version is None:
        raise GraphFormatError(f"malformed graph: no version (this reads version {VERSION})")
    if type(version) is int and version > VERSION:
        raise NewerGraphError(
            f"graph format version {version} is newer than this torchscope reads (version "
            f"{VERSION}): update torchscope (pip install -U torchscope)"
        )
    if type(version) is not int or version < 1:
        raise GraphFormatError(f"graph version {version!r} is not supported (this reads {VERSION})")


def from_wire(data: Any) -> Graph:
    """Validate and decode a wire map; raises GraphFormatError with one clear line."""
    if not isinstance(data, dict):
        raise GraphFormatError("a torchscope graph is a map at the top level")
    if data.get("format") != FORMAT:
        raise GraphFormatError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
    check_version(data.get("version"))
    for key, kind in (("model", dict), ("nodes", list), ("edges", list)):
        if not isinstance(data.get(key), kind):
            what = "missing" if key not in data else f"a {type(data[key]).__name__}"
            raise GraphFormatError(f"malformed graph: '{key}' is {what}, not a {kind.__name__}")
    try:
        m = data["model"]
        model = ModelInfo(
            m["name"],
            m["qualname"],
            m["params"],
            m["device"],
            m["dtype"],
            _optional_int(m.get("rank")),
            _optional_int(m.get("world_size")),
        )
        nodes = [
            Node(
                id=n["id"],
                kind=n["kind"],
                name=n["name"],
                parent=n["parent"],
                target=n["target"],
                path=n["path"],
                call=n["call"],
                site=_site(n["site"]),
                defn=_site(n["defn"]),
                params=n["params"],
                attrs=_map(n.get("attrs")) or {},  # (a decoration: a bad one is dropped)
                inside=_site(n.get("inside")),
                cost=_cost(n.get("cost")),
            )
            for n in data["nodes"]
        ]
        edges = [
            Edge(
                e["src"],
                e["dst"],
                e["shape"],
                e["dtype"],
                _stats(e.get("stats")),
                _hist(e.get("hist")),
                _layout(e),
                _output_index(e.get("output")),
            )
            for e in data["edges"]
        ]
        groups = [
            Group(g["parent"], list(g["members"]), g["name"], _cost(g.get("cost")))
            for g in data.get("groups", [])
        ]
        v = _map(data.get("values")) or {}  # (decorations, as the viewer reads them)
        values = Recorded(bool(v.get("stats", False)), bool(v.get("costs", False)))
        nan_origin = data.get("nan_origin")
        err = data["error"]
        error = (
            ErrorInfo(
                err["type"],
                err["message"],
                err["node"],
                [s for s in (_site(t) for t in err["traceback"]) if s is not None],
            )
            if err
            else None
        )
        trace_ms = _number((_map(data.get("stats")) or {}).get("trace_ms"), 0.0)
        said = data.get("warnings")
        warnings = [str(w) for w in said] if isinstance(said, list) else []
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        said = _first_bad(data) or f"missing or bad field {exc}"
        raise GraphFormatError(f"malformed graph: {said}") from exc
    _check_model(model)
    _check_references(nodes, edges, groups, error)
    if not (type(nan_origin) is int and 0 <= nan_origin < len(nodes)):
        nan_origin = None  # a decoration, as in the viewer: a bad one is dropped, not fatal
    return Graph(
        model,
        nodes,
        edges,
        groups,
        error,
        trace_ms,
        warnings,
        values=values,
        nan_origin=nan_origin,
    )


def _first_bad(data: dict[str, Any]) -> Optional[str]:
    """Where a wire map that failed to decode goes wrong, in the viewer's words (format.ts):
    the first element that is no map, or a field it lacks; None if nothing here says."""
    for name in ("name", "qualname", "params", "device", "dtype"):
        if name not in data["model"]:
            return f"model: no field '{name}'"
    for part, table in (("node", "nodes"), ("edge", "edges"), ("group", "groups")):
        items = data.get(table, [])
        if not isinstance(items, list):
            return f"'{table}' should be a list"
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                return f"{part} {i} is not a map"
            for name in _REQUIRED[table]:
                if name not in item:
                    return f"{part} {i}: no field '{name}'"
            for name in ("site", "defn", "inside"):
                if item.get(name) is not None and not isinstance(item[name], dict):
                    return f"{part} {i}: its {name} should be a map or nil"
    err = data.get("error")
    if err is not None and not isinstance(err, dict):
        return "'error' should be a map or nil"
    if isinstance(err, dict):
        for name in ("type", "message", "node", "traceback"):
            if name not in err:
                return f"error: no field '{name}'"
        if not isinstance(err["traceback"], list) or not all(
            t is None or isinstance(t, dict) for t in err["traceback"]
        ):
            return "error: field 'traceback' should be a list of sites"
    if "error" not in data:
        return "no field 'error'"
    return None


_REQUIRED = {
    "nodes": ("id", "kind", "name", "parent", "target", "path", "call", "site", "defn", "params"),
    "edges": ("src", "dst", "shape", "dtype"),
    "groups": ("parent", "members", "name"),
}


def _is_number(v: Any) -> bool:
    return (type(v) is int) or (type(v) is float and math.isfinite(v))


def _number(v: Any, default: float) -> float:
    return float(v) if _is_number(v) else default


def _check_model(m: ModelInfo) -> None:
    for what in ("name", "qualname", "device", "dtype"):
        if type(getattr(m, what)) is not str:
            raise GraphFormatError(f"model: field '{what}' should be a string")
    if not _is_number(m.params):
        raise GraphFormatError("model: field 'params' should be a number")


def _cost(d: Any) -> Optional[Cost]:
    """A node's or group's cost; a malformed one is dropped (the viewer does the same)."""
    try:
        return Cost(int(d["flops"]), int(d["bytes"]), int(d["time_ns"]))
    except (KeyError, TypeError, ValueError):
        return None


def _map(d: Any) -> Optional[dict[str, Any]]:
    return d if isinstance(d, dict) else None


def _stats(d: Any) -> Optional[dict[str, Any]]:
    """An edge's statistics as the viewer reads them (format.ts): a field that is no finite
    number is nil (min, max, mean, std, absmax) or left out (zeros, nan, inf); no numel, or
    not a map: none. (A decoration: never refused, and never a number nothing can use.)"""
    if not isinstance(d, dict) or _finite(d.get("numel")) is None:
        return None
    if _as_written(d):
        return d
    out: dict[str, Any] = {}
    for key in _STAT_FIELDS:
        if key in d:
            v = _finite(d[key])
            if v is not None or key in _NIL_STATS:
                out[key] = v
    return out


def _hist(d: Any) -> Optional[dict[str, Any]]:
    """An edge's histogram as the viewer reads it: lo and hi finite numbers, counts a list
    (a count that is no number: 0); else none."""
    if not isinstance(d, dict):
        return None
    lo, hi, counts = _finite(d.get("lo")), _finite(d.get("hi")), d.get("counts")
    if lo is None or hi is None or not isinstance(counts, list) or not counts:
        return None
    if set(map(type, counts)) == {int} and _INT_MIN <= min(counts) and max(counts) < _INT_END:
        return d if len(d) == 3 else {"lo": lo, "hi": hi, "counts": counts}
    return {"lo": lo, "hi": hi, "counts": [_finite(c) or 0 for c in counts]}


def _as_written(d: dict[str, Any]) -> bool:
    """Statistics as torchscope writes them (known fields, finite numbers of 64 bits, nil only
    for min, max, mean, std, absmax): the common case, checked in few calls (a graph holds
    one map per edge)."""
    if not d.keys() <= _KNOWN_STATS or not set(map(type, d.values())) <= _STAT_TYPES:
        return False
    if (d.get("zeros", 0), d.get("nan", 0), d.get("inf", 0)).count(None):
        return False
    values = d.values()
    numbers = [v for v in values if v is not None] if None in values else values
    try:
        return (
            math.isfinite(math.fsum(numbers))
            and _INT_MIN <= min(numbers)
            and max(numbers) < _INT_END
        )
    except (OverflowError, ValueError):  # (finite values too large to add; inf and -inf)
        return False


def _finite(v: Any) -> Any:
    """`v` if it is a finite number msgpack can write (an int of 64 bits), else None."""
    if type(v) is float:
        return v if math.isfinite(v) else None
    if type(v) is int:
        return v if _INT_MIN <= v < _INT_END else None
    return None


_INT_MIN, _INT_END = -(2**63), 2**64  # the ints msgpack writes: int64's least to uint64's most


_STAT_FIELDS = ("min", "max", "mean", "std", "absmax", "zeros", "nan", "inf", "numel")
_NIL_STATS = frozenset(("min", "max", "mean", "std", "absmax"))  # nil: no finite value
_KNOWN_STATS = frozenset(_STAT_FIELDS)
_STAT_TYPES = frozenset((float, int, type(None)))


def _optional_int(v: Any) -> Optional[int]:
    return v if type(v) is int else None


def _output_index(v: Any) -> Optional[int]:
    """An edge's `output` (a decoration: anything but a whole number of 0 or more is dropped)."""
    return v if type(v) is int and v >= 0 else None


def _layout(e: dict[str, Any]) -> Optional[Layout]:
    """A DTensor edge's layout; absent or malformed: none (a decoration, as in the viewer)."""
    shape, placements = e.get("global_shape"), e.get("placements")
    if not isinstance(shape, list) or not isinstance(placements, str):
        return None
    if not all(type(d) is int for d in shape):
        return None
    mesh = e.get("mesh")
    return Layout(list(shape), placements, mesh if isinstance(mesh, str) else "")


def _check_references(
    nodes: list[Node], edges: list[Edge], groups: list[Group], error: Optional[ErrorInfo]
) -> None:
    count = len(nodes)

    def valid(i: Any) -> bool:
        return isinstance(i, int) and not isinstance(i, bool) and 0 <= i < count

    sibling_pos: list[int] = []  # position of each node among its parent's children
    sibling_count: dict[Optional[int], int] = {}
    for i, n in enumerate(nodes):
        if n.id != i:
            raise GraphFormatError(f"node {i} has id {n.id}")
        if type(n.kind) is not str:
            raise GraphFormatError(f"node {i}: field 'kind' should be a string")
        if type(n.call) is not int or not _is_number(n.params):
            what = "call" if type(n.call) is not int else "params"
            raise GraphFormatError(f"node {i}: field '{what}' should be a number")
        if n.kind not in NODE_KINDS:
            raise GraphFormatError(f"node {i} has unknown kind {n.kind!r}")
        for what, value in (("name", n.name), ("target", n.target), ("path", n.path)):
            if type(value) is not str:
                raise GraphFormatError(f"node {i} has a {what} that is not text: {value!r}")
        if n.parent is not None and not (valid(n.parent) and n.parent < i):
            raise GraphFormatError(f"node {i} has parent {n.parent!r}, not an earlier node")
        if n.parent is not None and nodes[n.parent].kind != "module":
            raise GraphFormatError(
                f"node {i} has parent {n.parent}, a {nodes[n.parent].kind}, not a module call"
            )
        sibling_pos.append(sibling_count.get(n.parent, 0))
        sibling_count[n.parent] = sibling_pos[-1] + 1
    for i, e in enumerate(edges):
        for what, end in (("src", e.src), ("dst", e.dst)):
            if type(end) is not int:
                raise GraphFormatError(f"edge {i}: field '{what}' should be a number")
        if not (valid(e.src) and valid(e.dst)):
            raise GraphFormatError(f"edge {e.src!r} → {e.dst!r} names a missing node")
        shape = e.shape
        if shape is not None and (
            type(shape) is not list or not all(type(d) is int and d >= 0 for d in shape)
        ):
            raise GraphFormatError(f"edge {e.src} → {e.dst} has a bad shape {shape!r}")
        if type(e.dtype) is not str:
            raise GraphFormatError(f"edge {e.src} → {e.dst} has a dtype that is not text")
    _check_groups(nodes, groups, sibling_pos, valid)
    if error is not None and not valid(error.node):
        raise GraphFormatError(f"error names missing node {error.node!r}")


def _check_groups(
    nodes: list[Node], groups: list[Group], sibling_pos: list[int], valid: Callable[[Any], bool]
) -> None:
    """A group folds consecutive sibling module calls; anything else would hide nodes."""
    group_of: dict[int, int] = {}
    for gi, g in enumerate(groups):
        where = f"group {gi} ({g.name!r})"
        if len(g.members) < 2:
            raise GraphFormatError(f"{where} needs at least 2 members, it has {len(g.members)}")
        for j, m in enumerate(g.members):
            if not valid(m):
                raise GraphFormatError(f"{where} names a missing node {m!r}")
            if nodes[m].kind != "module":
                raise GraphFormatError(
                    f"{where}: member {m} is a {nodes[m].kind}, not a module call"
                )
            if nodes[m].parent != g.parent:
                raise GraphFormatError(
                    f"{where}: member {m} is not a child of the group's parent {g.parent}"
                )
            if m in group_of:
                raise GraphFormatError(f"{where}: node {m} is already in group {group_of[m]}")
            group_of[m] = gi
            if j and sibling_pos[m] != sibling_pos[g.members[j - 1]] + 1:
                raise GraphFormatError(
                    f"{where}: members {g.members[j - 1]} and {m} are not consecutive siblings"
                )
