"""A readable text tree of module calls with shapes, parameter counts and costs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from .folding import group_name
from .graph import Cost, Graph, Group, Node, Site
from .notebook import file_names

_UNITS = (("K", 10**3), ("M", 10**6), ("B", 10**9), ("T", 10**12))


def format_count(n: int) -> str:
    """A parameter count as every part of torchscope writes it (the CLI, the editor's lists,
    the viewer: webview/src/count.ts does the same): "512", "1K", "1.5K", "124.4M", "70.6B".
    One decimal, rounded half up in integers (so both languages agree), ".0" dropped."""
    if n < 1000:
        return str(n)
    for unit, size in _UNITS:
        tenths = (n * 10 + size // 2) // size
        if tenths < 10_000 or unit == "T":
            whole, tenth = divmod(tenths, 10)
            return f"{whole}.{tenth}{unit}" if tenth else f"{whole}{unit}"
    raise AssertionError("unreachable")


def _scaled(value: float, units: tuple[str, ...], base: float) -> str:
    """1234567 with ("B", "KB", "MB" …) and 1000 → "1.2 MB"; small values stay whole."""
    i = 0
    while True:
        # one decimal below 100, as rounded (99.96 → "100", not "100.0"); whole in units[0]
        decimals = 0 if i == 0 or abs(round(value, 1)) >= 100 else 1
        text = f"{value:.{decimals}f}"
        if abs(float(text)) < base or i == len(units) - 1:
            return f"{text} {units[i]}"
        value /= base  # (999.96 KB rounds to 1000: "1.0 MB")
        i += 1


def human_flops(n: int) -> str:
    """FLOPs for people: "1.2 GFLOP" (a multiply-add counts 2)."""
    return _scaled(float(n), ("FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"), 1000.0)


def human_bytes(n: int) -> str:
    """Bytes for people, in decimal units: "3.1 MB"."""
    return _scaled(float(n), ("B", "KB", "MB", "GB", "TB"), 1000.0)


def human_time(ns: int) -> str:
    """A duration for people: "850 µs", "4.2 ms", "1.3 s" (the unit of the rounded value:
    999.6 µs is "1.0 ms")."""
    if round(ns / 1000) < 1000:
        return f"{ns / 1000:.0f} µs"
    ms = ns / 1e6
    if round(ms) < 1000:
        return f"{ms:.1f} ms" if round(ms, 1) < 100 else f"{ms:.0f} ms"
    return f"{ns / 1e9:.1f} s"


def _cost(cost: Optional[Cost]) -> str:
    if cost is None:
        return ""
    return (
        f"  flops {human_flops(cost.flops)}  out {human_bytes(cost.bytes)}"
        f"  time {human_time(cost.time_ns)}"
    )


def _shapes(shapes: list[Optional[list[int]]]) -> str:
    if not shapes:
        return "-"
    text = ", ".join("?" if s is None else "[" + ", ".join(map(str, s)) + "]" for s in shapes[:3])
    return text + (f" +{len(shapes) - 3}" if len(shapes) > 3 else "")


def boundary_shapes(graph: Graph) -> dict[int, tuple[list, list]]:
    """For each module call: shapes of the tensors entering it and leaving it."""
    ancestors: list[frozenset[int]] = []
    for n in graph.nodes:
        own = frozenset([n.id]) if n.kind == "module" else frozenset()
        ancestors.append(own | (ancestors[n.parent] if n.parent is not None else frozenset()))
    result: dict[int, tuple[list, list]] = {
        n.id: ([], []) for n in graph.nodes if n.kind == "module"
    }
    # A tensor is (producer, which of its outputs) where the edge says (`output`: a call
    # that made several, split or chunk); one tensor feeding several consumers counts once.
    # A file from before `output` had only (producer, shape, dtype, k): a call gets one edge
    # per distinct tensor, so its k-th edge from a producer with that shape and dtype is the
    # k-th such tensor (alike outputs read by separate consumers show once there).
    alike: dict[tuple, int] = {}
    seen: set[tuple] = set()
    for e in graph.edges:
        shape = tuple(e.shape) if e.shape is not None else None
        if e.output is not None:
            tensor: tuple = (e.src, e.output)
        else:
            k = alike.get((e.src, e.dst, shape, e.dtype), 0)
            alike[(e.src, e.dst, shape, e.dtype)] = k + 1
            tensor = (e.src, shape, e.dtype, k)
        src, dst = ancestors[e.src], ancestors[e.dst]
        for m in dst - src:
            if (m, 0, tensor) not in seen:
                seen.add((m, 0, tensor))
                result[m][0].append(e.shape)
        for m in src - dst:
            if (m, 1, tensor) not in seen:
                seen.add((m, 1, tensor))
                result[m][1].append(e.shape)
    return result


def format_bytes(n: int) -> str:
    """ "512 B", "1.5 KB", "3.2 MB": decimal units, one decimal."""
    if n < 1000:
        return f"{n} B"
    for unit, size in (("KB", 10**3), ("MB", 10**6), ("GB", 10**9), ("TB", 10**12)):
        if round(n / size, 1) < 1000 or unit == "TB":  # (999.96 KB: "1.0 MB")
            return f"{n / size:.1f} {unit}"
    raise AssertionError("unreachable")


def collectives_line(nodes: list[Node]) -> str:
    """ "3 collectives: 2 all_gather_into_tensor, 1 all_reduce; 1.2 MB moved by this rank" """
    counts: dict[str, int] = {}
    for n in nodes:
        counts[n.name] = counts.get(n.name, 0) + 1
    kinds = ", ".join(f"{c} {name}" for name, c in counts.items())
    moved = sum(int(n.attrs.get("bytes", 0) or 0) for n in nodes)
    local = sum(1 for n in nodes if n.attrs.get("local") is True)
    note = f" ({local} done on this rank alone)" if local else ""
    plural = "s" if len(nodes) != 1 else ""
    return (
        f"{len(nodes)} collective{plural}: {kinds}; {format_bytes(moved)} moved by this rank{note}"
    )


def _wrapper_mark(graph: Graph, members: list[int]) -> str:
    """ " [fully_shard]" when every module of the line is wrapped alike; for a folded run
    wrapped in part, how many of it each wrapper holds (" [CheckpointWrapper: 2 of 4]")."""
    marks = [graph.nodes[i].attrs.get("wrapped_by") for i in members]
    kinds = list(dict.fromkeys(m for m in marks if m))
    if not kinds:
        return ""
    if len(kinds) == 1 and all(marks):
        return f" [{kinds[0]}]"
    return " [" + "; ".join(f"{k}: {marks.count(k)} of {len(marks)}" for k in kinds) + "]"


def summarize(graph: Graph) -> str:
    shapes = boundary_shapes(graph)
    children: dict[Optional[int], list[Node]] = {}
    for n in graph.nodes:
        children.setdefault(n.parent, []).append(n)
    ops_inside = _ops_inside(graph)
    folded = {g.members[0]: g for g in graph.groups}
    hidden = {m for g in graph.groups for m in g.members[1:]}
    m = graph.model
    rank = f"  {m.rank_text()}" if m.rank is not None else ""
    lines = [
        f"{m.name} ({m.qualname})  params {format_count(m.params)}  device {m.device or '-'}  dtype {m.dtype or '-'}{rank}"
    ]

    def line_of(node: Node, prefix: str, last: bool) -> list[Any]:
        """node's line; returns what comes below it, in order: lines of its errors, and
        (module, prefix, last) for its modules (a stack, not recursion: modules nest
        deeper than Python's recursion limit)."""
        ins, outs = shapes.get(node.id, ([], []))
        label = node.path or "(root)"
        group = folded.get(node.id)
        last_path = graph.nodes[group.members[-1]].path if group is not None else ""
        if group is not None and last_path != node.path:  # (one module called again: one path)
            label = f"{label} … {last_path}"
        name = group_name(node.name, len(group.members)) if group else node.name
        name += _wrapper_mark(graph, group.members if group else [node.id])
        # every op inside the call, at all depths (a ×N line: inside its N blocks), as the
        # flops, out and time beside it sum everything inside
        ops = sum(ops_inside[i] for i in group.members) if group else ops_inside[node.id]
        branch = "" if node.parent is None else ("└─ " if last else "├─ ")
        params = group_params(graph, group) if group else node.params
        lines.append(
            f"{prefix}{branch}{label}: {name}  {_shapes(ins)} → {_shapes(outs)}"
            f"  params {format_count(params)}"
            + (f"  ops {ops}" if ops else "")
            + _cost(group.cost if group else node.cost)
        )
        subs = [
            c
            for c in children.get(node.id, [])
            if c.kind in ("module", "error") and c.id not in hidden
        ]
        if group is not None:
            return []
        ext = "" if node.parent is None else ("   " if last else "│  ")
        below: list[Any] = []
        for i, c in enumerate(subs):
            if c.kind == "error":
                below.append(
                    f"{prefix}{ext}{'└─ ' if i == len(subs) - 1 else '├─ '}✗ {c.name}: {c.attrs.get('message', '')}"
                )
            else:
                below.append((c, prefix + ext, i == len(subs) - 1))
        return below

    todo: list[Any] = [
        (top, "", True) for top in reversed(children.get(None, [])) if top.kind == "module"
    ]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            lines.append(item)
        else:
            todo.extend(reversed(line_of(*item)))
    ins = [n.name for n in graph.nodes if n.kind == "input"]
    outs = [n.name for n in graph.nodes if n.kind == "output"]
    lines.append(f"inputs: {', '.join(ins) or '-'}   outputs: {', '.join(outs) or '-'}")
    s = graph.stats()
    lines.append(f"{s['modules']} module calls, {s['ops']} ops, traced in {s['trace_ms']:.0f} ms")
    collectives = graph.collectives()
    if collectives:
        lines.append(collectives_line(collectives))
    named = file_names()  # (printed in a notebook: its cells as IPython names them)
    origin = nan_origin_line(graph, named)
    if origin:
        lines.append(origin)
    if graph.error is not None:
        e = graph.error
        lines.append(f"ERROR {e.type}: {e.message}{at(graph.nodes[e.node].site, named)}")
    return "\n".join(map(one_line_text, lines))


def one_line_text(line: str) -> str:
    """A line of text made of a graph's names, kept one line: a line break in a name (an
    error's message, a crafted graph file's) written as `\\n`, so that nothing a graph holds
    reads as a line of its own."""
    return line.replace("\r", "\\r").replace("\n", "\\n")


def _ops_inside(graph: Graph) -> list[int]:
    """For each node: how many op nodes are inside it, at all depths."""
    inside = [0] * len(graph.nodes)
    for i in range(len(graph.nodes) - 1, -1, -1):  # children always come after their parent
        parent = graph.nodes[i].parent
        if parent is not None and 0 <= parent < i:  # (a graph file's, checked for no cycle)
            inside[parent] += inside[i] + (graph.nodes[i].kind == "op")
    return inside


def nan_origin_line(graph: Graph, named: Callable[[str], str] = str) -> str:
    """Where non-finite values first appeared, for people; "" when they did not. `named`:
    how a file is named to them (see at)."""
    i = graph.nan_origin
    if i is None or not 0 <= i < len(graph.nodes):
        return ""
    node = graph.nodes[i]
    where = at(node.site, named)
    return f"NaN/Inf origin: {node.name} (node {i}, {node.target}){in_module(graph, node, named)}{where}"


def in_module(graph: Graph, node: Node, named: Callable[[str], str] = str) -> str:
    """` in encoder.conv1 (Conv1d)`: the module call a node is in; where a library called
    it, that line too (the node's own line is then inside torch's layer)."""
    if node.parent is None:
        return ""
    module = graph.nodes[node.parent]
    if not module.path:  # the model itself: its line is the node's
        return ""
    call = module.site
    here = node.site
    same = (
        here is not None and call is not None and (call.file, call.line) == (here.file, here.line)
    )
    called = f", called{at(call, named)}" if call and not same else ""
    return f" in {module.path} ({module.name}{called})"


def at(site: Optional[Site], named: Callable[[str], str] = str) -> str:
    """` at model.py:12`, its file as `named` names it (a notebook cell: `Cell In[3]`); ""
    for no site."""
    return f" at {named(site.file)}:{site.line}" if site else ""


def group_params(graph: Graph, group: Group) -> int:
    """The parameters of a group's modules, each module once (one module called again and
    again folds into a group of its calls)."""
    return sum({graph.nodes[m].path: graph.nodes[m].params for m in group.members}.values())
