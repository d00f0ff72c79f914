"""Comparing two forward passes: two Graphs → a Diff (`torchscope.diff` version 1).

Pure: no torch, no files. Matching, in this order:
- module calls by (path, call index), anywhere in the graph. A renamed module (same
  structure at another path) is therefore one removed and one added module;
- every other node within its matched parent, by aligning the two child sequences
  (`align.common_pairs`): first on a full signature (kind, target, attrs, the shapes and
  dtypes in and out), then, between those anchors, on the callable alone (the pairs
  found there are "changed"); a leftover node whose full signature reappears elsewhere in
  the same module is the same node moved; what is still left in one gap, op for op in equal
  numbers on both sides, is a node whose callable changed (relu → gelu). The rest is
  added or removed;
- edges by their matched ends.
A matched node is "changed" when its own facts differ (see `_Compare._details`); a module
whose only difference is inside it is not changed itself: its descendants are. Folded ×N
groups need nothing special: their members are module calls like any other.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from .align import common_pairs

if TYPE_CHECKING:  # the CLI's parser imports this module where msgpack may be missing
    from .graph import Graph, Node

FORMAT = "torchscope.diff"
VERSION = 1

# Two statistics differ when they are further apart than this fraction of the larger
# tensor's absolute maximum (the scale of its values), so a mean near 0 is not flagged
# for float noise.
STATS_TOLERANCE = 1e-3
STAT_FIELDS = ("mean", "std", "min", "max", "absmax")

Tensor = tuple[Optional[tuple[int, ...]], str]  # (shape, dtype) of one tensor passed


@dataclass(slots=True)
class Change:
    """One added, removed or changed node. `path`/`call` name the module call: a module's
    own, or for any other node the module call it happened in ("" / 0 at top level)."""

    kind: str
    name: str
    path: str
    call: int
    details: list[str]

    def to_wire(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "call": self.call,
            "details": self.details,
        }


class _Facts:
    """What the diff reads about one graph, computed once per graph."""

    __slots__ = ("graph", "children", "ins", "outs", "in_edges", "out_edges", "child_params")

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        nodes, edges = graph.nodes, graph.edges
        count = len(nodes)
        self.children: dict[Optional[int], list[int]] = {}
        chain: list[tuple[int, ...]] = []  # enclosing module calls, outermost first
        for n in nodes:
            self.children.setdefault(n.parent, []).append(n.id)
            up = chain[n.parent] if n.parent is not None else ()
            chain.append(up + (n.id,) if n.kind == "module" else up)
        self.in_edges: list[list[int]] = [[] for _ in range(count)]
        self.out_edges: list[list[int]] = [[] for _ in range(count)]
        tensors: list[Tensor] = []
        # For each module call: the tensors entering and leaving it, in edge order (one tensor
        # feeding several nodes inside counts once).
        entering: dict[int, dict[tuple[int, Tensor], None]] = {}
        leaving: dict[int, dict[tuple[int, Tensor], None]] = {}
        for k, e in enumerate(edges):
            t = (tuple(e.shape) if e.shape is not None else None, e.dtype)
            tensors.append(t)
            self.out_edges[e.src].append(k)
            self.in_edges[e.dst].append(k)
            src, dst = chain[e.src], chain[e.dst]
            if src is dst:  # between two nodes of one module call: crosses no boundary
                continue
            common = 0
            while common < len(src) and common < len(dst) and src[common] == dst[common]:
                common += 1
            for m in dst[common:]:
                entering.setdefault(m, {})[(e.src, t)] = None
            for m in src[common:]:
                leaving.setdefault(m, {})[(e.src, t)] = None
        self.ins: list[tuple[Tensor, ...]] = [()] * count
        self.outs: list[tuple[Tensor, ...]] = [()] * count
        for n in nodes:
            if n.kind != "module":
                i = n.id
                self.ins[i] = tuple([tensors[k] for k in self.in_edges[i]])
                self.outs[i] = tuple(dict.fromkeys([tensors[k] for k in self.out_edges[i]]))
        for m, seen in entering.items():
            self.ins[m] = tuple([t for _, t in seen])
        for m, seen in leaving.items():
            self.outs[m] = tuple(dict.fromkeys([t for _, t in seen]))
        self.child_params: dict[int, int] = {}  # module call → params of the modules it called
        for n in nodes:
            if n.kind == "module":
                inner = {
                    nodes[c].path: nodes[c].params
                    for c in self.children.get(n.id, ())
                    if nodes[c].kind == "module"
                }
                self.child_params[n.id] = sum(inner.values())


@dataclass
class Diff:
    """Two graphs and how their nodes and edges correspond."""

    a: Graph
    b: Graph
    a_to_b: list[int]  # per node of a: the matched node of b, or -1 (removed)
    b_to_a: list[int]  # per node of b: the matched node of a, or -1 (added)
    details: dict[int, list[str]]  # node of b → what changed, for matched nodes that differ
    edge_a_to_b: list[int]  # per edge of a: the matched edge of b, or -1
    edge_b_to_a: list[int]
    _fa: _Facts = field(repr=False)
    _fb: _Facts = field(repr=False)

    # -- per node ----------------------------------------------------------------
    def status_a(self, i: int) -> str:
        j = self.a_to_b[i]
        return "removed" if j < 0 else ("changed" if j in self.details else "same")

    def status_b(self, j: int) -> str:
        return "added" if self.b_to_a[j] < 0 else ("changed" if j in self.details else "same")

    def describe_a(self, i: int) -> list[str]:
        return _describe(self._fa, i)

    def describe_b(self, j: int) -> list[str]:
        return _describe(self._fb, j)

    def children_a(self, i: Optional[int]) -> list[int]:
        """Children of node i of a in order (i None: the top level)."""
        return self._fa.children.get(i, [])

    def children_b(self, j: Optional[int]) -> list[int]:
        return self._fb.children.get(j, [])

    # -- the lists of the document ---------------------------------------------------
    @property
    def same(self) -> int:
        return sum(1 for j in self.a_to_b if j >= 0 and j not in self.details)

    def added(self) -> list[Change]:
        return [
            _change(self.b, j, self.describe_b(j))
            for j in range(len(self.b.nodes))
            if self.b_to_a[j] < 0
        ]

    def removed(self) -> list[Change]:
        return [
            _change(self.a, i, self.describe_a(i))
            for i in range(len(self.a.nodes))
            if self.a_to_b[i] < 0
        ]

    def changed(self) -> list[Change]:
        return [_change(self.b, j, self.details[j]) for j in sorted(self.details)]

    @property
    def identical(self) -> bool:
        """No node added, removed or changed (edges follow their nodes, except a rewiring
        between matched nodes, which changes the node it enters)."""
        return not self.details and -1 not in self.a_to_b and -1 not in self.b_to_a

    def to_wire(self, a_source: str = "", b_source: str = "") -> dict[str, Any]:
        """The `torchscope.diff` v1 document; `*_source`: what each side was read from."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "a": side_summary(self.a, a_source),
            "b": side_summary(self.b, b_source),
            "added": [c.to_wire() for c in self.added()],
            "removed": [c.to_wire() for c in self.removed()],
            "changed": [c.to_wire() for c in self.changed()],
            "same": self.same,
        }


def diff_graphs(a: Graph, b: Graph, *, stats_tolerance: float = STATS_TOLERANCE) -> Diff:
    """Compare the forward pass `a` (before) with `b` (after). `stats_tolerance`: statistics
    further apart than this fraction of the tensor's largest |value| differ (0 or more)."""
    from .graph import Graph  # (graphs exist, so it loads: see the import above)

    for side in (a, b):
        if not isinstance(side, Graph):
            raise TypeError(
                "diff_graphs compares two torchscope Graphs (torchscope.trace's results; "
                f"Graph.load(path) reads a graph file), not a {type(side).__name__}"
            )
    if not (math.isfinite(stats_tolerance) and stats_tolerance >= 0):
        raise ValueError(f"stats_tolerance must be a fraction of 0 or more, not {stats_tolerance}")
    with no_gc():
        return _Compare(a, b, stats_tolerance).run()


@contextmanager
def no_gc() -> Iterator[None]:
    """Collections off meanwhile: a diff allocates many small objects, and each full
    collection walks everything the process holds (two traced 70B models on meta: 0.4 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- matching ------------------------------------------------------------------------


class _Compare:
    def __init__(self, a: Graph, b: Graph, tolerance: float) -> None:
        self.a, self.b = a, b
        self.fa, self.fb = _Facts(a), _Facts(b)
        self.tolerance = tolerance
        self.a_to_b = [-1] * len(a.nodes)
        self.b_to_a = [-1] * len(b.nodes)
        self.moved: dict[int, tuple[int, int]] = {}  # node of b → (position in a, in b)
        self.keys: dict[Any, int] = {}  # signature → small int, shared by both graphs
        self.cached: dict[tuple[bool, bool, int], int] = {}  # (of a, full, node) → key
        # Two copies of one file (model.py, model_v2.py) name their classes after the file:
        # either file's name is read as one, on both sides, so `model.Block` and
        # `model_v2.Block` are one class, and so is the `model.Block` model_v2 imports.
        home_a = a.model.qualname.rpartition(".")[0]
        home_b = b.model.qualname.rpartition(".")[0]
        self.home = (home_a + ".", home_b + ".") if home_a and home_b and home_a != home_b else None

    def _target(self, target: str) -> str:
        """A target as compared: a class of either copy of the file (see `home`) named as
        b's copy names it. The longer home wins where one extends the other (`model.py`
        refactored into `model/core.py`: b's `model.core.Block` is b's own)."""
        if self.home is None:
            return target
        home_a, home_b = self.home
        if target.startswith(home_a) and not (
            len(home_b) > len(home_a) and target.startswith(home_b)
        ):
            return home_b + target[len(home_a) :]
        return target

    def run(self) -> Diff:
        self._match_modules()
        self._match_children(None, None)
        for n in self.a.nodes:
            j = self.a_to_b[n.id]
            if n.kind == "module" and j >= 0:
                self._match_children(n.id, j)
        edge_a_to_b, edge_b_to_a = self._match_edges()
        details: dict[int, list[str]] = {}
        for i, j in enumerate(self.a_to_b):
            if j >= 0:
                found = self._details(i, j)
                if found:
                    details[j] = found
        self._compare_values(edge_a_to_b, details)
        return Diff(
            self.a,
            self.b,
            self.a_to_b,
            self.b_to_a,
            details,
            edge_a_to_b,
            edge_b_to_a,
            self.fa,
            self.fb,
        )

    def _pair(self, i: int, j: int) -> None:
        self.a_to_b[i] = j
        self.b_to_a[j] = i

    def _match_modules(self) -> None:
        renames = self._item_renames()
        calls = {(n.path, n.call): n.id for n in self.b.nodes if n.kind == "module"}
        for n in self.a.nodes:  # (parents before their children)
            if n.kind != "module":
                continue
            if n.parent is not None and self.a_to_b[n.parent] < 0:
                # inside a module call of a's that b lacks: removed with it, whatever b
                # calls by that path elsewhere (a node is in one place, the removed one's
                # ghost holding what it held)
                continue
            j = calls.get((_renamed(n.path, renames), n.call))
            if j is not None:
                self._pair(n.id, j)

    def _item_renames(self) -> dict[str, str]:
        """Paths of a's numbered items (an nn.Sequential's, a ModuleList's: `body.2`) as b
        numbers them, where a layer inserted or removed shifted the ones after it: each
        container's items aligned by class (a longest common subsequence), shallow
        containers first; an item of a left unaligned gets a path no node of b has."""
        items_a, items_b = _items(self.a), _items(self.b)
        renames: dict[str, str] = {}
        for prefix in sorted(items_a, key=lambda p: p.count(".")):
            theirs_at = _renamed(prefix[:-1], renames) + "." if prefix else ""
            mine, theirs = items_a[prefix], items_b.get(theirs_at)
            if theirs is None:
                continue
            xs, ys = sorted(mine), sorted(theirs)
            if xs != list(range(len(xs))) or ys != list(range(len(ys))):
                continue  # items called in part (LayerDrop, experts): each keeps its index
            keys_a = [self._target(mine[k][0]) for k in xs]
            keys_b = [self._target(theirs[k][0]) for k in ys]
            if keys_a == keys_b:
                continue  # the same classes at the same indices: matched by path as ever
            # layers the same in every way first (a Linear(32, 32) inserted before a
            # Linear(32, 8) leaves that one matched), then by class between them
            pairs = common_pairs(
                [(k, mine[x][1]) for k, x in zip(keys_a, xs)],
                [(k, theirs[y][1]) for k, y in zip(keys_b, ys)],
            )
            for (x0, x1), (y0, y1) in _gaps(sorted(pairs), len(xs), len(ys)):
                inner = common_pairs(keys_a[x0:x1], keys_b[y0:y1])
                pairs.extend((x0 + x, y0 + y) for x, y in inner)
            # between aligned items, as many on both sides: the same places, other classes
            # (ReLU → GELU), paired in order as changed layers
            for (x0, x1), (y0, y1) in _gaps(sorted(pairs), len(xs), len(ys)):
                if x1 - x0 == y1 - y0:
                    pairs.extend(zip(range(x0, x1), range(y0, y1)))
            aligned = dict(pairs)
            for x, k in enumerate(xs):
                y = aligned.get(x)
                renames[prefix + str(k)] = theirs_at + str(ys[y]) if y is not None else _NOWHERE
        return renames

    def _key(self, facts: _Facts, i: int, full: bool) -> int:
        """A small int for what a child node is: with `full`, everything about it; else its
        callable (inputs and outputs: their name). A module call is keyed by its match."""
        n = facts.graph.nodes[i]
        of_a = facts is self.fa
        if n.kind == "module":
            j = self.a_to_b[i] if of_a else (i if self.b_to_a[i] >= 0 else -1)
            return self._intern(
                ("module", j) if j >= 0 else ("module a" if of_a else "module b", i)
            )
        key = self.cached.get((of_a, full, i))
        if key is None:
            target = self._target(n.target)
            if not full:
                sig = (n.kind, n.name) if n.kind in ("input", "output") else (n.kind, target)
            else:
                attrs = repr(n.attrs) if n.attrs else ""
                sig = (n.kind, target, n.name, attrs, facts.ins[i], facts.outs[i])
            key = self.cached[(of_a, full, i)] = self._intern(sig)
        return key

    def _intern(self, sig: tuple) -> int:
        key = self.keys.get(sig)
        if key is None:
            key = self.keys[sig] = len(self.keys)
        return key

    def _match_children(self, pa: Optional[int], pb: Optional[int]) -> None:
        xs = self.fa.children.get(pa, [])
        ys = self.fb.children.get(pb, [])
        if not xs or not ys:
            return
        chain = common_pairs(
            [self._key(self.fa, i, True) for i in xs], [self._key(self.fb, j, True) for j in ys]
        )
        # Between the anchors: the same callable with other shapes or attrs.
        refined: list[tuple[int, int]] = []
        for (x0, x1), (y0, y1) in _gaps(chain, len(xs), len(ys)):
            weak = common_pairs(
                [self._key(self.fa, xs[x], False) for x in range(x0, x1)],
                [self._key(self.fb, ys[y], False) for y in range(y0, y1)],
            )
            refined.extend((x0 + x, y0 + y) for x, y in weak)
        chain = sorted(chain + refined)
        for x, y in chain:
            i, j = xs[x], ys[y]
            if self.a_to_b[i] < 0 and self.b_to_a[j] < 0:
                self._pair(i, j)
        self._match_moved(xs, ys)
        self._match_substituted(xs, ys, chain)
        self._modules_moved(xs, ys)

    def _loose(self, xs: list[int], ys: list[int]) -> tuple[list[int], list[int]]:
        """Positions of the children not matched yet (module calls never match here)."""
        a_nodes, b_nodes = self.a.nodes, self.b.nodes
        return (
            [x for x, i in enumerate(xs) if self.a_to_b[i] < 0 and a_nodes[i].kind != "module"],
            [y for y, j in enumerate(ys) if self.b_to_a[j] < 0 and b_nodes[j].kind != "module"],
        )

    def _match_moved(self, xs: list[int], ys: list[int]) -> None:
        """A node left over in a with the same full signature as one left over in b."""
        loose_x, loose_y = self._loose(xs, ys)
        if not loose_x or not loose_y:
            return
        waiting: dict[int, list[int]] = {}
        for y in loose_y:
            waiting.setdefault(self._key(self.fb, ys[y], True), []).append(y)
        for x in loose_x:
            queue = waiting.get(self._key(self.fa, xs[x], True))
            if queue:
                y = queue.pop(0)
                self._pair(xs[x], ys[y])
                self.moved[ys[y]] = (x, y)

    def _modules_moved(self, xs: list[int], ys: list[int]) -> None:
        """Module calls matched by path that the forward makes in another order: those off
        the longest run kept in order moved (a call added between two moves neither)."""
        b_nodes = self.b.nodes
        at_y = {j: y for y, j in enumerate(ys) if b_nodes[j].kind == "module"}
        order_a = [(x, self.a_to_b[i]) for x, i in enumerate(xs) if self.a_to_b[i] in at_y]
        if len(order_a) < 2:
            return
        order_b = sorted((at_y[j], j) for _, j in order_a)
        kept = common_pairs([j for _, j in order_a], [j for _, j in order_b])
        in_order = {order_a[k][1] for k, _ in kept}
        for x, j in order_a:
            if j not in in_order:
                self.moved[j] = (x, at_y[j])

    def _match_substituted(
        self, xs: list[int], ys: list[int], chain: list[tuple[int, int]]
    ) -> None:
        """In a gap that still has as many loose nodes on each side, of the same kinds in
        the same order, those are the same nodes with another callable (relu → gelu)."""
        loose_x, loose_y = self._loose(xs, ys)
        if not loose_x or not loose_y:
            return
        set_x, set_y = set(loose_x), set(loose_y)
        for (x0, x1), (y0, y1) in _gaps(chain, len(xs), len(ys)):
            gx = [x for x in range(x0, x1) if x in set_x]
            gy = [y for y in range(y0, y1) if y in set_y]
            if gx and len(gx) == len(gy):
                kinds_x = [self.a.nodes[xs[x]].kind for x in gx]
                kinds_y = [self.b.nodes[ys[y]].kind for y in gy]
                if kinds_x == kinds_y:
                    for x, y in zip(gx, gy):
                        self._pair(xs[x], ys[y])

    def _match_edges(self) -> tuple[list[int], list[int]]:
        """Edges by their matched ends, and by which output of their source they carry
        (q, k and v of one split are three edges between the same two nodes); then, by
        their ends alone, those one side does not say it of (a file from before
        `Edge.output`)."""
        edge_a_to_b = [-1] * len(self.a.edges)
        edge_b_to_a = [-1] * len(self.b.edges)
        for exact in (True, False):
            waiting: dict[tuple[int, int, Optional[int]], list[int]] = {}
            for k, e in enumerate(self.b.edges):
                if edge_b_to_a[k] < 0:
                    waiting.setdefault((e.src, e.dst, e.output if exact else None), []).append(k)
            for k, e in enumerate(self.a.edges):
                if edge_a_to_b[k] >= 0:
                    continue
                ends = (self.a_to_b[e.src], self.a_to_b[e.dst], e.output if exact else None)
                queue = waiting.get(ends) if ends[0] >= 0 and ends[1] >= 0 else None
                if queue:
                    other = queue.pop(0)
                    edge_a_to_b[k] = other
                    edge_b_to_a[other] = k
        return edge_a_to_b, edge_b_to_a

    # -- what changed ----------------------------------------------------------------
    def _details(self, i: int, j: int) -> list[str]:
        """Before → after lines for the matched pair (i of a, j of b); empty when equal."""
        na, nb = self.a.nodes[i], self.b.nodes[j]
        out: list[str] = []
        key_a = self.cached.get((True, True, i))
        if key_a is not None and key_a == self.cached.get((False, True, j)):
            # one full signature: the same callable, attrs and tensors; only the wiring and
            # the place can differ
            return self._placement(i, j)
        if self._target(na.target) != self._target(nb.target):
            out.append(f"target: {na.target or '-'} → {nb.target or '-'}")
        elif na.name != nb.name:
            out.append(f"name: {na.name} → {nb.name}")
        if na.attrs != nb.attrs:
            for key in dict.fromkeys([*na.attrs, *nb.attrs]):
                va, vb = na.attrs.get(key, _MISSING), nb.attrs.get(key, _MISSING)
                if va != vb or type(va) is not type(vb):
                    out.append(f"{key}: {_value(va)} → {_value(vb)}")
        if na.kind == "module":
            out.extend(self._position(j))
        if na.kind == "module" and na.params != nb.params:
            # a count that moved only with the modules it called is their change, not its own;
            # so when they share weights (tied embeddings: they count one weight twice, more
            # than the module's own count), whose changes are theirs
            inner_a, inner_b = self.fa.child_params[i], self.fb.child_params[j]
            shared = inner_a > na.params and inner_b > nb.params
            if nb.params - na.params != inner_b - inner_a and not shared:
                out.append(f"params: {na.params:,} → {nb.params:,}")
        out.extend(_tensor_changes("input", self.fa.ins[i], self.fb.ins[j]))
        outs_a, outs_b = self.fa.outs[i], self.fb.outs[j]
        if outs_a and outs_b:
            # an output one side's forward never used is its consumer's change (added or
            # removed), or the error's that came before any: not this node's
            out.extend(_tensor_changes("output", outs_a, outs_b))
        if na.kind != "module":
            out.extend(self._placement(i, j))
        return out

    def _placement(self, i: int, j: int) -> list[str]:
        """Where a matched op sits: the producers of its inputs, its place in its module."""
        out: list[str] = []
        wiring = self._rewired(i, j)
        if wiring:
            out.append(wiring)
        out.extend(self._position(j))
        return out

    def _position(self, j: int) -> list[str]:
        """A node of b the forward reached in another order in its module than a's."""
        if j not in self.moved:
            return []
        x, y = self.moved[j]
        return [f"position in its module: {x + 1} → {y + 1}"]

    def _rewired(self, i: int, j: int) -> Optional[str]:
        """The producers of a node's inputs, when they are matched nodes on both sides and
        differ (an argument swapped or taken from another node, or another of one call's
        outputs: k for q). An input from an added or removed node is that node's change,
        not this one's."""
        edges_a, edges_b = self.a.edges, self.b.edges
        src_a = [(edges_a[k].src, edges_a[k].output) for k in self.fa.in_edges[i]]
        src_b = [(edges_b[k].src, edges_b[k].output) for k in self.fb.in_edges[j]]
        mapped = [(self.a_to_b[s], output) for s, output in src_a]
        if any(s < 0 for s, _ in mapped) or any(self.b_to_a[s] < 0 for s, _ in src_b):
            return None
        if len(mapped) == len(src_b) and all(
            x == y and (o is None or p is None or o == p)  # (a file from before Edge.output)
            for (x, o), (y, p) in zip(mapped, src_b)
        ):
            return None
        before = ", ".join(_source_label(self.fb, s, output) for s, output in mapped) or "-"
        after = ", ".join(_source_label(self.fb, s, output) for s, output in src_b) or "-"
        return f"inputs from: {before} → {after}"

    def _compare_values(self, edge_a_to_b: list[int], details: dict[int, list[str]]) -> None:
        """Edge statistics (`Edge.stats`, when both traces recorded values) beyond the
        tolerance, reported once per producing node. Without the field this does nothing."""
        from .graph import UNINITIALIZED  # (graphs are here: so is msgpack)

        done: set[int] = set()
        for k, other in enumerate(edge_a_to_b):
            if other < 0:
                continue
            sa = getattr(self.a.edges[k], "stats", None)
            sb = getattr(self.b.edges[other], "stats", None)
            j = self.b.edges[other].src
            if not isinstance(sa, dict) or not isinstance(sb, dict) or j in done:
                continue
            if self.b.nodes[j].name in UNINITIALIZED:  # (and a's: the edges match)
                continue
            line = _stats_change(sa, sb, self.tolerance)
            if line:
                done.add(j)
                details.setdefault(j, []).append(line)
        # a matched node none of whose outgoing edges has a match (its output now goes to
        # an op the edit added): its one output's statistics, compared all the same
        outgoing_a, outgoing_b = self.fa.out_edges, self.fb.out_edges
        for i, j in enumerate(self.a_to_b):
            if j < 0 or j in done or not outgoing_a[i] or not outgoing_b[j]:
                continue
            if any(edge_a_to_b[k] >= 0 for k in outgoing_a[i]):
                continue  # compared through that edge above
            if self.b.nodes[j].name in UNINITIALIZED or self.a.nodes[i].name in UNINITIALIZED:
                continue
            sa, sb = _one_tensor(self.a, outgoing_a[i]), _one_tensor(self.b, outgoing_b[j])
            line = _stats_change(sa, sb, self.tolerance) if sa and sb else None
            if line:
                done.add(j)
                details.setdefault(j, []).append(line)


_NOWHERE = "\0"  # a module path no node has: an item of a aligned with none of b's
_ITEM = re.compile(r"^(?:(.*)\.)?(\d+)$")


def _items(graph: Graph) -> dict[str, dict[int, tuple[str, Any]]]:
    """Each container's numbered items (`body.` → index → (class, what its description
    and parameter count say)), by the module calls made."""
    found: dict[str, dict[int, tuple[str, Any]]] = {}
    for n in graph.nodes:
        if n.kind != "module":
            continue
        m = _ITEM.match(n.path)
        if m is not None:
            prefix = m.group(1) + "." if m.group(1) is not None else ""
            made = (repr(sorted(n.attrs.items())), n.params)
            found.setdefault(prefix, {}).setdefault(int(m.group(2)), (n.target, made))
    return found


def _renamed(path: str, renames: dict[str, str]) -> str:
    """`path` of a as b names it: its longest renamed prefix replaced (see _item_renames)."""
    if not renames or not path:
        return path
    parts = path.split(".")
    for k in range(len(parts), 0, -1):
        head = ".".join(parts[:k])
        if head in renames:
            return renames[head] + "".join("." + p for p in parts[k:])
    return path


def _gaps(
    chain: list[tuple[int, int]], n: int, m: int
) -> Iterator[tuple[tuple[int, int], tuple[int, int]]]:
    """The unmatched ranges of both sequences between consecutive pairs of `chain`."""
    px, py = -1, -1
    for x, y in [*chain, (n, m)]:
        if x > px + 1 and y > py + 1:
            yield (px + 1, x), (py + 1, y)
        px, py = x, y


# -- text pieces -------------------------------------------------------------------

_MISSING = object()


def _value(v: Any) -> str:
    """An attribute value as the user wrote it (strings bare: extra_repr keeps its quotes)."""
    if v is _MISSING:
        return "(none)"
    return v if isinstance(v, str) else repr(v)


def _shape(t: Tensor) -> str:
    shape, _ = t
    return "?" if shape is None else "[" + ", ".join(map(str, shape)) + "]"


def _tensors(ts: tuple[Tensor, ...], limit: int = 6) -> str:
    text = ", ".join(_shape(t) for t in ts[:limit])
    return (text + (f" +{len(ts) - limit}" if len(ts) > limit else "")) or "-"


def _tensor_changes(side: str, before: tuple[Tensor, ...], after: tuple[Tensor, ...]) -> list[str]:
    """`output: [1, 64] → [1, 128]`; with several tensors only the positions that differ
    (`input 2: …`); when their number differs, both lists."""
    if before == after:
        return []
    if len(before) != len(after):
        return [f"{side}s: {_tensors(before)} → {_tensors(after)}"]
    out = []
    for k, (ta, tb) in enumerate(zip(before, after)):
        if ta == tb:
            continue
        name = side if len(before) == 1 else f"{side} {k + 1}"
        if ta[0] == tb[0]:
            out.append(f"{name}: {ta[1]} → {tb[1]}")
        elif ta[1] == tb[1]:
            out.append(f"{name}: {_shape(ta)} → {_shape(tb)}")
        else:
            out.append(f"{name}: {_shape(ta)} {ta[1]} → {_shape(tb)} {tb[1]}")
    return out


def _one_tensor(graph: Graph, edges: list[int]) -> Optional[dict[str, Any]]:
    """The statistics of the one tensor these edges carry; None when they carry several
    (a node with more outputs than one: which goes where is unknown) or none was read."""
    first = getattr(graph.edges[edges[0]], "stats", None)
    if not isinstance(first, dict):
        return None
    same = all(getattr(graph.edges[k], "stats", None) == first for k in edges[1:])
    return first if same else None


def _apart(va: float, vb: float) -> str:
    """`1 → 1.0005`: four significant digits, more where four would show the same."""
    for digits in (4, 6, 8, 12, 17):
        a, b = f"{va:.{digits}g}", f"{vb:.{digits}g}"
        if a != b:
            break
    return f"{a} → {b}"


def _number(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _stats_change(sa: dict[str, Any], sb: dict[str, Any], tolerance: float) -> Optional[str]:
    """`values: mean 0.01 → 0.5, nan 0 → 3` for statistics that differ, else None."""

    def num(s: dict[str, Any], key: str) -> Optional[float]:
        v = s.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def magnitude(s: dict[str, Any]) -> Optional[float]:
        """The tensor's largest magnitude: absmax (floats), else its min or max (integers)."""
        v = num(s, "absmax")
        if v is not None:
            return abs(v)
        ends = [abs(v) for v in (num(s, "min"), num(s, "max")) if v is not None]
        return max(ends) if ends else None

    scales = [v for v in (magnitude(sa), magnitude(sb)) if v is not None]
    scale = max(scales) if scales and all(math.isfinite(s) for s in scales) else None
    parts = []
    for key in STAT_FIELDS:
        va, vb = num(sa, key), num(sb, key)
        if va is None or vb is None or va == vb:
            continue
        if not (math.isfinite(va) and math.isfinite(vb)):
            parts.append(f"{key} {_number(va)} → {_number(vb)}")
            continue
        bound = tolerance * (scale if scale is not None else max(abs(va), abs(vb)))
        if abs(va - vb) > bound:
            parts.append(f"{key} {_apart(va, vb)}")
    for key in ("nan", "inf"):
        va, vb = num(sa, key), num(sb, key)
        if va is not None and vb is not None and va != vb:
            parts.append(f"{key} {int(va)} → {int(vb)}")
    za, zb = num(sa, "zeros"), num(sb, "zeros")  # fractions of the values (0.0 … 1.0)
    if za is not None and zb is not None and abs(za - zb) > tolerance:
        parts.append(f"zeros {za:.1%} → {zb:.1%}")
    return "values: " + ", ".join(parts) if parts else None


def _label(facts: _Facts, i: int) -> str:
    """A node as a reader finds it, told apart from its like: a module by its path and call
    (`shared (call 2)`), anything else by its name inside its module call, numbered when
    that call has several of the name (`fc1/linear`, `relu #2`)."""
    graph = facts.graph
    n = graph.nodes[i]
    if n.kind == "module":
        return call_label(n)
    if n.parent is None:
        return n.name
    same = [k for k in facts.children.get(n.parent, ()) if graph.nodes[k].name == n.name]
    name = f"{n.name} #{same.index(i) + 1}" if len(same) > 1 else n.name
    parent = graph.nodes[n.parent]
    return f"{call_label(parent)}/{name}" if parent.path else name


def call_label(m: Node) -> str:
    """A module call by its path, and which call of it when not the first (`h.0 (call 2)`)."""
    label = m.path or "(root)"
    return f"{label} (call {m.call + 1})" if m.call else label


def _source_label(facts: _Facts, i: int, output: Optional[int]) -> str:
    """An input's producer, and which of its outputs the input is when it made several."""
    label = _label(facts, i)
    return label if output is None else f"{label} (output {output})"


def _where(graph: Graph, i: int) -> tuple[str, int]:
    n = graph.nodes[i]
    if n.kind == "module":
        return n.path, n.call
    if n.parent is None:
        return "", 0
    p = graph.nodes[n.parent]
    return p.path, p.call


def _change(graph: Graph, i: int, details: list[str]) -> Change:
    n = graph.nodes[i]
    path, call = _where(graph, i)
    return Change(n.kind, n.name, path, call, details)


def _describe(facts: _Facts, i: int) -> list[str]:
    """What an added or removed node is: callable, attrs, params, tensors in and out."""
    n = facts.graph.nodes[i]
    out = []
    if n.target and n.target != n.name:
        out.append(n.target)
    if n.attrs:
        out.append(", ".join(f"{k}={_value(v)}" for k, v in n.attrs.items()))
    if n.kind == "module":
        out.append(f"params {n.params:,}")
    if facts.ins[i]:
        out.append(f"inputs {_tensors(facts.ins[i])}")
    if facts.outs[i]:
        out.append(f"outputs {_tensors(facts.outs[i])}")
    return out


def side_summary(graph: Graph, source: str) -> dict[str, Any]:
    """A side of the comparison as the documents carry it: what it was read from, the model,
    its counts, its error and where it first made NaN/Inf."""
    e = graph.error
    return {
        "source": source,
        "model": graph.model.to_wire(),
        "stats": graph.stats(),
        "error": {"type": e.type, "message": e.message} if e is not None else None,
        "nan_origin": _origin(graph),
    }


def _origin(graph: Graph) -> Optional[dict[str, Any]]:
    """The side's NaN/Inf origin as a Change names a node, with its line."""
    i = graph.nan_origin
    if i is None:
        return None
    n = graph.nodes[i]
    path, call = _where(graph, i)
    site = {"file": n.site.file, "line": n.site.line} if n.site else None
    return {"kind": n.kind, "name": n.name, "path": path, "call": call, "site": site}
