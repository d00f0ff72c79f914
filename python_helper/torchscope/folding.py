"""Repeated-block folding: runs of consecutive sibling module calls with the same structure."""

from __future__ import annotations

from typing import Optional

from .graph import Graph, Group

MIN_RUN = 2


def structure_signatures(graph: Graph) -> list[int]:
    """A hash per node of what it is and what it contains (class, ops, output shapes)."""
    out_shapes: dict[int, list[tuple[int, ...]]] = {}
    for e in graph.edges:
        out_shapes.setdefault(e.src, []).append(tuple(e.shape) if e.shape is not None else ())
    children: dict[int, list[int]] = {}
    for n in graph.nodes:
        if n.parent is not None:
            children.setdefault(n.parent, []).append(n.id)
    sigs = [0] * len(graph.nodes)
    for n in reversed(graph.nodes):  # children always come after their parent
        if n.kind == "module":
            own = (n.target, n.params, tuple(sigs[c] for c in children.get(n.id, ())))
            sigs[n.id] = hash((own, tuple(out_shapes.get(n.id, ()))))
        else:
            what = n.name if n.kind == "constant" else n.target
            sigs[n.id] = hash((n.kind, what, tuple(sorted(set(out_shapes.get(n.id, ()))))))
    return sigs


def fold_repeated_blocks(graph: Graph) -> list[Group]:
    sigs = structure_signatures(graph)
    siblings: dict[Optional[int], list[int]] = {}
    for n in graph.nodes:
        siblings.setdefault(n.parent, []).append(n.id)
    groups: list[Group] = []
    for parent, ids in siblings.items():
        run: list[int] = []
        for nid in ids + [-1]:
            node = graph.nodes[nid] if nid >= 0 else None
            if node is not None and node.kind == "module" and run and sigs[run[0]] == sigs[nid]:
                run.append(nid)
                continue
            if len(run) >= MIN_RUN:
                first = graph.nodes[run[0]]
                groups.append(Group(parent, list(run), f"{first.name} ×{len(run)}"))
            run = [nid] if node is not None and node.kind == "module" else []
    groups.sort(key=lambda g: g.members[0])
    return groups
