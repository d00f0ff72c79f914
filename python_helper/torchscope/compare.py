"""One graph to draw a comparison with: b's graph with a's removed nodes put back as ghosts.

The compare page (and the text diff) read this instead of two graphs. Its wire form is a
`torchscope.graph` v1 map, so the viewer decodes, folds and lays it out as any graph, plus
one added top-level field, `compare` (docs/graph-format.md, "Compare view"):
- `status` per node: "same" | "added" | "removed" | "changed";
- `side` per node: "b", or "a" for the removed nodes (their `site` is a's line);
- `a_ids`/`b_ids` per node: its id in a and in b, or nil;
- `details` per node: before → after lines (changed), what it is (added/removed);
- `inside` per node: changes in its subtree, each added or removed subtree counted once;
- `edges` per edge: "same" | "added" | "removed";
- `changes`: the ids of the changes in drawing order (for next/previous change);
- `a`, `b`: what each side was read from, its model, counts and error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional

import msgpack

from .diff import FORMAT as DIFF_FORMAT
from .diff import Diff, no_gc, side_summary
from .folding import fold_repeated_blocks, group_name
from .graph import TEXT_ERRORS, Edge, Graph, Group, Node, Recorded, group_costs

ADDED_OR_REMOVED = ("added", "removed")


@dataclass
class CompareView:
    graph: Graph
    status: list[str]
    side: list[str]
    a_ids: list[Optional[int]]
    b_ids: list[Optional[int]]
    details: list[list[str]]
    inside: list[int]
    edge_status: list[str]
    changes: list[int]
    a: dict[str, Any]
    b: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        wire = self.graph.to_wire()
        wire["stats"] = dict(self.b["stats"])  # b's own counts: the ghosts are a's nodes
        wire["compare"] = {
            "format": DIFF_FORMAT,
            "a": self.a,
            "b": self.b,
            "status": self.status,
            "side": self.side,
            "a_ids": self.a_ids,
            "b_ids": self.b_ids,
            "details": self.details,
            "inside": self.inside,
            "edges": self.edge_status,
            "changes": self.changes,
        }
        return wire

    def to_msgpack(self) -> bytes:
        packed = msgpack.packb(self.to_wire(), use_bin_type=True, unicode_errors=TEXT_ERRORS)
        assert isinstance(packed, bytes)
        return packed


def compare_view(diff: Diff, a_source: str = "", b_source: str = "") -> CompareView:
    with no_gc():
        return _compare_view(diff, a_source, b_source)


def _compare_view(diff: Diff, a_source: str, b_source: str) -> CompareView:
    a, b = diff.a, diff.b
    nodes: list[Node] = []
    origin: list[tuple[str, int]] = []
    a_new: list[int] = [-1] * len(a.nodes)
    b_new: list[int] = [-1] * len(b.nodes)

    # each node after its parent, children in order: depth first, with a stack (modules
    # nest as deep as a trace goes, deeper than Python's recursion limit)
    todo: list[tuple[str, int, Optional[int]]] = [
        (side, old, None) for side, old in reversed(list(_merged_children(diff, None, None)))
    ]
    while todo:
        side, old, parent = todo.pop()
        node = (a if side == "a" else b).nodes[old]
        nid = len(nodes)
        nodes.append(dataclasses.replace(node, id=nid, parent=parent))
        origin.append((side, old))
        if side == "a":
            a_new[old] = nid
            kids: Iterator[tuple[str, int]] = (("a", i) for i in diff.children_a(old))
        else:
            b_new[old] = nid
            partner = diff.b_to_a[old]
            if partner >= 0:
                a_new[partner] = nid
                kids = _merged_children(diff, partner, old)
            else:
                kids = (("b", j) for j in diff.children_b(old))
        todo.extend((kid_side, kid, nid) for kid_side, kid in reversed(list(kids)))

    status = [diff.status_a(i) if s == "a" else diff.status_b(i) for s, i in origin]
    details = [_details(diff, s, i, st) for (s, i), st in zip(origin, status)]
    edges: list[Edge] = []
    edge_status: list[str] = []
    for k, e in enumerate(b.edges):
        edges.append(dataclasses.replace(e, src=b_new[e.src], dst=b_new[e.dst]))
        edge_status.append("same" if diff.edge_b_to_a[k] >= 0 else "added")
    for k, e in enumerate(a.edges):
        if diff.edge_a_to_b[k] < 0:
            edges.append(dataclasses.replace(e, src=a_new[e.src], dst=a_new[e.dst]))
            edge_status.append("removed")

    # A change site: a changed node, or the top of an added or removed subtree.
    site = [
        st == "changed" or (st in ADDED_OR_REMOVED and (n.parent is None or status[n.parent] != st))
        for n, st in zip(nodes, status)
    ]
    inside = [0] * len(nodes)
    for n in reversed(nodes):
        if n.parent is not None:
            inside[n.parent] += inside[n.id] + site[n.id]

    # b's own fields, built field by field: one that names node ids must be mapped to the
    # merged ids (as the error's node is), so none is copied blindly
    # what either trace recorded: a node of the side without it simply has none
    recorded = Recorded(a.values.stats or b.values.stats, a.values.costs or b.values.costs)
    graph = Graph(
        b.model, nodes, edges, [], b.error, b.trace_ms, warnings=list(b.warnings), values=recorded
    )
    if b.error is not None:
        graph.error = dataclasses.replace(b.error, node=b_new[b.error.node])
    if b.nan_origin is not None:  # the version the page is of: b, its ghosts beside it
        graph.nan_origin = b_new[b.nan_origin]
    graph.groups = _unchanged_groups(graph, status, inside)
    group_costs(graph)  # (as a trace's folds: what their members cost together)
    return CompareView(
        graph=graph,
        status=status,
        side=[s for s, _ in origin],
        a_ids=[i if s == "a" else _or_none(diff.b_to_a[i]) for s, i in origin],
        b_ids=[i if s == "b" else None for s, i in origin],
        details=details,
        inside=inside,
        edge_status=edge_status,
        changes=[n.id for n in nodes if site[n.id]],
        a=side_summary(a, a_source),
        b=side_summary(b, b_source),
    )


def _details(diff: Diff, side: str, old: int, status: str) -> list[str]:
    if status == "removed":
        return diff.describe_a(old)
    if status == "added":
        return diff.describe_b(old)
    return diff.details.get(old, []) if side == "b" else []


def _or_none(i: int) -> Optional[int]:
    return i if i >= 0 else None


def _merged_children(diff: Diff, pa: Optional[int], pb: Optional[int]) -> Iterator[tuple[str, int]]:
    """b's children of pb in order, with a's removed children of pa put back where they
    were: between the same two matched neighbours, before b's nodes added there."""
    xs = diff.children_a(pa)
    where = {i: x for x, i in enumerate(xs)}
    at = 0
    waiting: list[int] = []  # b nodes since the last matched one in a's order
    for j in diff.children_b(pb):
        x = where.get(diff.b_to_a[j], -1)
        if x < at:
            waiting.append(j)
            continue
        yield from (("a", i) for i in xs[at:x] if diff.a_to_b[i] < 0)
        yield from (("b", w) for w in waiting)
        yield "b", j
        waiting = []
        at = x + 1
    yield from (("a", i) for i in xs[at:] if diff.a_to_b[i] < 0)
    yield from (("b", w) for w in waiting)


def _unchanged_groups(graph: Graph, status: list[str], inside: list[int]) -> list[Group]:
    """The ×N folds of the merged graph, cut around members with a change: one changed block
    of twelve shows as ×5, the block, ×6."""
    out: list[Group] = []
    for g in fold_repeated_blocks(graph):
        run: list[int] = []
        for m in [*g.members, -1]:
            if m >= 0 and status[m] == "same" and inside[m] == 0:
                run.append(m)
                continue
            if len(run) >= 2:
                out.append(Group(g.parent, run, group_name(graph.nodes[run[0]].name, len(run))))
            run = []
    return out
