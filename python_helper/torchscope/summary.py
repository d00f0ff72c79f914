"""A readable text tree of module calls with shapes and parameter counts."""

from __future__ import annotations

from typing import Optional

from .graph import Graph, Node

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
    seen: set[tuple[int, int, int]] = set()  # one tensor feeding several consumers counts once
    for e in graph.edges:
        src, dst = ancestors[e.src], ancestors[e.dst]
        for m in dst - src:
            if (m, 0, e.src) not in seen:
                seen.add((m, 0, e.src))
                result[m][0].append(e.shape)
        for m in src - dst:
            if (m, 1, e.src) not in seen:
                seen.add((m, 1, e.src))
                result[m][1].append(e.shape)
    return result


def format_bytes(n: int) -> str:
    """ "512 B", "1.5 KB", "3.2 MB": decimal units, one decimal."""
    if n < 1000:
        return f"{n} B"
    for unit, size in (("KB", 10**3), ("MB", 10**6), ("GB", 10**9), ("TB", 10**12)):
        if n < size * 1000 or unit == "TB":
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


def summarize(graph: Graph) -> str:
    shapes = boundary_shapes(graph)
    children: dict[Optional[int], list[Node]] = {}
    for n in graph.nodes:
        children.setdefault(n.parent, []).append(n)
    folded = {g.members[0]: g for g in graph.groups}
    hidden = {m for g in graph.groups for m in g.members[1:]}
    m = graph.model
    rank = f"  {m.rank_text()}" if m.rank is not None else ""
    lines = [
        f"{m.name} ({m.qualname})  params {format_count(m.params)}  device {m.device or '-'}  dtype {m.dtype or '-'}{rank}"
    ]

    def walk(node: Node, prefix: str, last: bool) -> None:
        ins, outs = shapes.get(node.id, ([], []))
        label = node.path or "(root)"
        group = folded.get(node.id)
        if group is not None:
            label = f"{label} … {graph.nodes[group.members[-1]].path}"
        name = f"{node.name} ×{len(group.members)}" if group else node.name
        wrapped = node.attrs.get("wrapped_by")
        if wrapped:
            name += f" [{wrapped}]"
        ops = sum(1 for c in children.get(node.id, []) if c.kind == "op")
        branch = "" if node.parent is None else ("└─ " if last else "├─ ")
        lines.append(
            f"{prefix}{branch}{label}: {name}  {_shapes(ins)} → {_shapes(outs)}"
            f"  params {format_count(node.params)}" + (f"  ops {ops}" if ops else "")
        )
        subs = [
            c
            for c in children.get(node.id, [])
            if c.kind in ("module", "error") and c.id not in hidden
        ]
        if group is not None:
            return
        ext = "" if node.parent is None else ("   " if last else "│  ")
        for i, c in enumerate(subs):
            if c.kind == "error":
                lines.append(
                    f"{prefix}{ext}{'└─ ' if i == len(subs) - 1 else '├─ '}✗ {c.name}: {c.attrs.get('message', '')}"
                )
            else:
                walk(c, prefix + ext, i == len(subs) - 1)

    for top in children.get(None, []):
        if top.kind == "module":
            walk(top, "", True)
    ins = [n.name for n in graph.nodes if n.kind == "input"]
    outs = [n.name for n in graph.nodes if n.kind == "output"]
    lines.append(f"inputs: {', '.join(ins) or '-'}   outputs: {', '.join(outs) or '-'}")
    s = graph.stats()
    lines.append(f"{s['modules']} module calls, {s['ops']} ops, traced in {s['trace_ms']:.0f} ms")
    collectives = graph.collectives()
    if collectives:
        lines.append(collectives_line(collectives))
    if graph.error is not None:
        e = graph.error
        where = graph.nodes[e.node].site
        at = f" at {where.file}:{where.line}" if where else ""
        lines.append(f"ERROR {e.type}: {e.message}{at}")
    return "\n".join(lines)
