"""Repeated-block folding: runs of consecutive sibling module calls with the same structure."""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Optional

from .graph import Graph, Group, Node


def group_name(name: str, count: int) -> str:
    """A fold's name: `Block ×12`, `Block ×2,000` (thousands separated, as the viewer writes
    counts)."""
    return f"{name} ×{count:,}"


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
    children: list[Optional[list[int]]] = [None] * len(nodes)  # a list: cheaper than a dict
    table: dict[tuple, int] = {}
    sigs = [0] * len(nodes)
    for n in reversed(nodes):  # children always come after their parent
        nid = n.id
        if n.kind == "module":
            inner = children[nid]
            key: tuple = (
                n.target,
                n.params,
                tuple(reversed(inner)) if inner else (),
                out_shape[nid],
            )
        else:
            key = (n.kind, n.name if n.kind == "constant" else n.target, out_shape[nid])
        sig = table.get(key)
        if sig is None:
            sig = table[key] = len(table)
        sigs[nid] = sig
        p = n.parent
        if p is not None:
            kids = children[p]
            if kids is None:
                children[p] = [sig]
            else:
                kids.append(sig)
    return sigs


def fold_repeated_blocks(graph: Graph) -> list[Group]:
    sigs = structure_signatures(graph)
    nodes = graph.nodes
    runs: dict[Optional[int], list[int]] = {}  # the open run of module calls under each parent
    # (parent, run, where its last member's subtree ends)
    done: list[tuple[Optional[int], list[int], int]] = []
    for n in nodes:
        run = runs.get(n.parent)
        if run is not None:
            if n.kind == "module" and sigs[run[0]] == sigs[n.id]:
                run.append(n.id)
                continue
            del runs[n.parent]
            if len(run) >= MIN_RUN:  # n is a sibling: the last member ended right before it
                done.append((n.parent, run, n.id))
        if n.kind == "module":
            runs[n.parent] = [n.id]
    for parent, run in runs.items():
        if len(run) >= MIN_RUN:
            done.append((parent, run, _subtree_end(nodes, run[-1])))
    groups = _chained(graph, done) if done else []
    groups.sort(key=lambda g: g.members[0])
    return groups


def _subtree_end(nodes: list[Node], nid: int) -> int:
    """The first id after `nid`'s descendants: the first node whose parent comes before it."""
    end = nid + 1
    while end < len(nodes) and (p := nodes[end].parent) is not None and p >= nid:
        end += 1
    return end


def _chained(graph: Graph, runs: list[tuple[Optional[int], list[int], int]]) -> list[Group]:
    """The stretches of each run where every member reads something the one before made
    (its output, or any node inside it), of at least MIN_RUN members. Blocks side by side
    (q, k, v projections, two towers, experts on one input) are no chain: as one box, the
    first one's inputs and the last one's outputs would read as the whole group's."""
    # A subtree is a range of ids (descendants come right after their node), so with the
    # edges as sorted ints `dst * size + src` the edges into one member are one slice.
    size = len(graph.nodes)
    keys = sorted([e.dst * size + e.src for e in graph.edges])
    keys.append(size * size)  # above every key: the scans below need no bounds check
    groups: list[Group] = []

    def add(parent: Optional[int], chain: list[int]) -> None:
        if len(chain) >= MIN_RUN:
            groups.append(Group(parent, chain, group_name(graph.nodes[chain[0]].name, len(chain))))

    for parent, run, end in runs:
        chain = run[:1]
        # prev's subtree is [prev, cur): nothing but its descendants lies between the two
        for prev, cur, stop in zip(run, run[1:], [*run[2:], end]):
            i = bisect_left(keys, cur * size)
            k, stop = keys[i], stop * size
            # a chained member's first input is mostly the previous one's output: one step
            while k < stop:
                if prev <= k % size < cur:
                    chain.append(cur)
                    break
                i += 1
                k = keys[i]
            else:
                add(parent, chain)
                chain = [cur]
        add(parent, chain)
    return groups
