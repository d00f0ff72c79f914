"""Repeated-block folding: runs of consecutive sibling module calls with the same structure."""

from __future__ import annotations

from typing import Any, Optional

from .graph import Graph, Group

MIN_RUN = 2


def structure_signatures(graph: Graph) -> list[int]:
    """A small int per node naming what it is and what it contains (class, ops, output shapes).

    Equal ints mean equal structure: keys are interned bottom-up, so a module's key holds
    its children's ints rather than their whole subtrees."""
    nodes = graph.nodes
    out_shape: list[Any] = [None] * len(nodes)
    for e in graph.edges:
        if out_shape[e.src] is None and e.shape is not None:
            out_shape[e.src] = tuple(e.shape)
    children: dict[int, list[int]] = {}
    table: dict[tuple, int] = {}
    sigs = [0] * len(nodes)
    for n in reversed(nodes):  # children always come after their parent
        if n.kind == "module":
            inner = children.get(n.id)
            key: tuple = (
                n.target,
                n.params,
                tuple(reversed(inner)) if inner else (),
                out_shape[n.id],
            )
        else:
            key = (n.kind, n.name if n.kind == "constant" else n.target, out_shape[n.id])
        sig = table.get(key)
        if sig is None:
            sig = table[key] = len(table)
        sigs[n.id] = sig
        if n.parent is not None:
            children.setdefault(n.parent, []).append(sig)
    return sigs


def fold_repeated_blocks(graph: Graph) -> list[Group]:
    sigs = structure_signatures(graph)
    runs: dict[Optional[int], list[int]] = {}  # the open run of module calls under each parent
    groups: list[Group] = []

    def close(parent: Optional[int]) -> None:
        run = runs.pop(parent, None)
        if run is not None and len(run) >= MIN_RUN:
            first = graph.nodes[run[0]]
            groups.append(Group(parent, run, f"{first.name} ×{len(run)}"))

    for n in graph.nodes:
        run = runs.get(n.parent)
        if n.kind == "module" and run is not None and sigs[run[0]] == sigs[n.id]:
            run.append(n.id)
            continue
        close(n.parent)
        if n.kind == "module":
            runs[n.parent] = [n.id]
    for parent in list(runs):
        close(parent)
    groups.sort(key=lambda g: g.members[0])
    return groups
