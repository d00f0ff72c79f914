"""The compare view (b's graph with a's removed nodes as ghosts) and the text diff built on it."""

from __future__ import annotations

import msgpack
import torch
from test_diff import Net, Tower, trace, x16

import torchscope
from torchscope.compare import compare_view
from torchscope.diff import diff_graphs
from torchscope.diff_text import render_text
from torchscope.graph import Graph


def net_view():
    x = x16()
    d = diff_graphs(trace(Net(extra=True), x), trace(Net(width=64, head="head"), x))
    return d, compare_view(d, "a.py:Net", "b.py:Net")


def test_merged_graph_puts_removed_nodes_back_where_they_were() -> None:
    d, v = net_view()
    rows = [
        (n.kind, n.name, v.graph.nodes[n.parent].path if n.parent is not None else None, s)
        for n, s in zip(v.graph.nodes, v.status)
    ]
    assert rows == [
        ("input", "x", None, "same"),
        ("module", "Net", None, "same"),
        ("module", "Linear", "", "changed"),  # fc1
        ("op", "linear", "fc1", "changed"),
        ("op", "relu", "", "changed"),
        ("module", "Linear", "", "removed"),  # extra
        ("op", "linear", "extra", "removed"),
        ("op", "relu", "", "removed"),
        ("module", "Linear", "", "removed"),  # fc2
        ("op", "linear", "fc2", "removed"),
        ("module", "Linear", "", "added"),  # head
        ("op", "linear", "head", "added"),
        ("output", "output", None, "same"),
    ]
    assert [n.path for n in v.graph.nodes if n.kind == "module"] == [
        "",
        "fc1",
        "extra",
        "fc2",
        "head",
    ]
    # removed nodes come from a (their sites are a's lines), the rest from b
    assert v.side == ["a" if s == "removed" else "b" for s in v.status]
    for k, n in enumerate(v.graph.nodes):
        a_id, b_id = v.a_ids[k], v.b_ids[k]
        if v.status[k] != "added":
            assert a_id is not None and d.a.nodes[a_id].name == n.name
        if v.status[k] != "removed":
            assert b_id is not None and d.b.nodes[b_id].name == n.name
            assert n.site is d.b.nodes[b_id].site
        else:
            assert b_id is None and n.site is d.a.nodes[a_id].site
    # the counts agree with the diff
    assert v.status.count("removed") == len(d.removed())
    assert v.status.count("added") == len(d.added())
    assert v.status.count("changed") == len(d.changed())
    assert v.status.count("same") == d.same


def test_merged_graph_is_a_valid_graph_with_a_compare_field() -> None:
    d, v = net_view()
    wire = msgpack.unpackb(v.to_msgpack(), raw=False, strict_map_key=False)
    g = Graph.from_wire(wire)  # ids, parents before children, edge ends: all checked
    assert len(g.nodes) == len(d.b.nodes) + len(d.removed())
    c = wire["compare"]
    assert c["format"] == "torchscope.diff"
    assert c["a"]["source"] == "a.py:Net" and c["b"]["source"] == "b.py:Net"
    for key in ("status", "side", "a_ids", "b_ids", "details", "inside"):
        assert len(c[key]) == len(g.nodes), key
    assert len(c["edges"]) == len(g.edges)
    # changed nodes carry before → after lines; added and removed ones what they are
    fc1 = [n.id for n in g.nodes if n.kind == "module" and n.path == "fc1"][0]
    assert c["details"][fc1][0] == "out_features: 32 → 64"
    head = [n.id for n in g.nodes if n.path == "head"][0]
    assert "params 520" in c["details"][head]
    assert all(c["details"][k] == [] for k, s in enumerate(c["status"]) if s == "same")


def test_the_view_counts_b_s_ops_and_module_calls_not_the_ghosts() -> None:
    # (QA: the compare page's status line said b's parameters beside op and module counts
    # of b and a's removed nodes together: counts of neither pass)
    d, v = net_view()
    wire = msgpack.unpackb(v.to_msgpack(), raw=False, strict_map_key=False)
    b = d.b.stats()
    assert (wire["stats"]["ops"], wire["stats"]["modules"]) == (b["ops"], b["modules"])
    assert wire["stats"] == wire["compare"]["b"]["stats"]
    assert sum(1 for n in v.graph.nodes if n.kind == "module") > b["modules"]  # ghosts there


def test_edges_of_removed_nodes_are_kept_as_removed_edges() -> None:
    d, v = net_view()
    g = v.graph
    removed_ids = {k for k, s in enumerate(v.status) if s == "removed"}
    added_ids = {k for k, s in enumerate(v.status) if s == "added"}
    for e, s in zip(g.edges, v.edge_status):
        if e.src in removed_ids or e.dst in removed_ids:
            assert s == "removed"
        if e.src in added_ids or e.dst in added_ids:
            assert s == "added"
    assert v.edge_status.count("same") == sum(1 for k in d.edge_b_to_a if k >= 0)
    assert v.edge_status.count("removed") == sum(1 for k in d.edge_a_to_b if k < 0)


def test_inside_counts_each_added_or_removed_subtree_once() -> None:
    _, v = net_view()
    root = [n.id for n in v.graph.nodes if n.kind == "module" and n.path == ""][0]
    # fc1, its linear, relu (changed); extra, relu #2, fc2 (removed); head (added)
    assert v.inside[root] == 7
    assert [v.graph.nodes[k].name for k in v.changes] == [
        "Linear",
        "linear",
        "relu",
        "Linear",
        "relu",
        "Linear",
        "Linear",
    ]


def test_one_changed_block_of_twelve_splits_the_fold_around_it() -> None:
    x = torch.randn(2, 8)
    d = diff_graphs(trace(Tower(12, gelu_at=7), x), trace(Tower(12, gelu_at=5), x))
    v = compare_view(d)
    nodes = v.graph.nodes
    blocks = [
        [nodes[m].path for m in g.members] for g in v.graph.groups if g.name.startswith("Block")
    ]
    # blocks 5 and 7 changed; block 6 alone is no fold
    assert blocks == [[f"blocks.{i}" for i in range(5)], [f"blocks.{i}" for i in range(8, 12)]]
    root = [n.id for n in nodes if n.kind == "module" and n.path == ""][0]
    changed_blocks = {nodes[k].path: v.inside[k] for k in range(len(nodes)) if v.inside[k]}
    assert changed_blocks == {
        "": 4,
        "blocks.5": 2,
        "blocks.5.act": 1,
        "blocks.7": 2,
        "blocks.7.act": 1,
    }
    assert v.inside[root] == 4


def test_a_fold_around_a_change_costs_what_its_members_cost() -> None:
    # QA: the compare page's ×N boxes had no FLOPs, bytes or time in their hover, and a
    # long run's segment summed only the loose blocks beside them
    x = torch.randn(2, 8)
    torch.manual_seed(0)
    a = torchscope.trace(Tower(12, gelu_at=7).eval(), x)
    torch.manual_seed(0)
    b = torchscope.trace(Tower(12, gelu_at=5).eval(), x)
    v = compare_view(diff_graphs(a, b))
    nodes = v.graph.nodes
    folds = [g for g in v.graph.groups if g.name.startswith("Block")]
    assert folds  # (blocks 0-4; those after the change differ in their values too)
    for g in folds:
        assert g.cost is not None
        assert g.cost.flops == sum(nodes[m].cost.flops for m in g.members) > 0
        assert g.cost.time_ns == sum(nodes[m].cost.time_ns for m in g.members)


def test_text_diff() -> None:
    _, v = net_view()
    assert render_text(v) == "\n".join(
        [
            "--- a: a.py:Net  (Net, 1,864 params, 5 ops, 4 module calls)",
            "+++ b: b.py:Net  (Net, 1,608 params, 3 ops, 3 module calls)",
            "  (root): Net  (7 changes inside)",
            "    ~ relu: input: [2, 32] → [2, 64]; output: [2, 32] → [2, 64]",
            "    - relu #2: torch.relu; inputs [2, 32]; outputs [2, 32]",
            "~ fc1: Linear  (1 change inside)",
            "      out_features: 32 → 64",
            "      params: 544 → 1,088",
            "      output: [2, 32] → [2, 64]",
            "    ~ linear: output: [2, 32] → [2, 64]",
            "- extra: Linear  torch.nn.modules.linear.Linear; in_features=32, out_features=32, "
            "bias=True; params 1,056; inputs [2, 32]; outputs [2, 32]  (1 node inside)",
            "- fc2: Linear  torch.nn.modules.linear.Linear; in_features=32, out_features=8, "
            "bias=True; params 264; inputs [2, 32]; outputs [2, 8]  (1 node inside)",
            "+ head: Linear  torch.nn.modules.linear.Linear; in_features=64, out_features=8, "
            "bias=True; params 520; inputs [2, 64]; outputs [2, 8]  (1 node inside)",
            "2 added, 5 removed, 3 changed, 3 same",
        ]
    )


def test_text_diff_of_identical_passes() -> None:
    x = x16()
    v = compare_view(diff_graphs(trace(Net(), x), trace(Net(), x)), "a.py:Net", "b.py:Net")
    lines = render_text(v).splitlines()
    assert lines[2:] == ["no differences: 8 nodes the same"]


def test_text_diff_of_inputs_and_later_calls() -> None:
    class Twice(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)

        def forward(self, x):
            return self.fc(self.fc(x)).sum(0) + self.fc(x).sum(0)

    v = compare_view(diff_graphs(trace(Twice(), x16()), trace(Twice(), torch.randn(3, 16))))
    text = render_text(v)
    assert "~ input x: output: [2, 16] → [3, 16]" in text.splitlines()
    assert "~ fc (call 2)" in text and "~ fc (call 3)" in text
    assert "    ~ sum #2: input: [2, 16] → [3, 16]" in text.splitlines()


def test_the_view_keeps_b_s_warnings_and_error() -> None:
    x = x16()
    a, b = trace(Net(), x), trace(Net(width=64), x)
    b.warnings = ["fc1.weight was written during the forward"]
    v = compare_view(diff_graphs(a, b))
    assert v.graph.warnings == b.warnings and v.graph.error is None
    assert Graph.from_wire(v.to_wire()).warnings == b.warnings


def test_the_view_points_b_s_error_at_its_merged_node() -> None:
    class Breaks(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.fc(x) @ torch.ones(3, 3)

    x = x16()
    broken = torchscope.trace_call(Breaks(), (x,), raise_errors=False, values=False)
    v = compare_view(diff_graphs(trace(Net(), x), broken))
    assert v.graph.error is not None
    node = v.graph.error.node
    assert v.graph.nodes[node].kind == "error" and v.status[node] == "added"
    assert v.b_ids[node] == broken.error.node


def test_the_view_says_what_its_traces_recorded_and_points_at_b_s_nan_origin() -> None:
    """The compare page greyed out every measure but params: the view said nothing was
    recorded, though its nodes carry the traces' costs and its edges their statistics."""

    class Logs(torch.nn.Module):
        def __init__(self, shift: float) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(16, 16)
            self.shift = shift

        def forward(self, x):
            return torch.log(self.fc(x) - self.shift)

    x = x16()
    a = torchscope.trace_call(Logs(-100.0), (x,))  # log of positives: finite
    b = torchscope.trace_call(Logs(100.0), (x,))  # log of negatives: NaN
    assert a.nan_origin is None and b.nan_origin is not None
    v = compare_view(diff_graphs(a, b))
    assert (v.graph.values.stats, v.graph.values.costs) == (True, True)
    origin = v.graph.nan_origin
    assert origin is not None and v.b_ids[origin] == b.nan_origin
    assert v.graph.nodes[origin].name == "log"
    again = Graph.from_wire(v.to_wire())
    assert (again.values.stats, again.values.costs, again.nan_origin) == (True, True, origin)
    plain = compare_view(diff_graphs(trace(Net(), x), trace(Net(width=64), x)))
    assert (plain.graph.values.stats, plain.graph.values.costs) == (False, False)


class _Block(torch.nn.Module):
    def __init__(self, act: type) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.act = act()

    def forward(self, x):
        return x + self.act(self.fc(x))


class _Stack(torch.nn.Module):
    def __init__(self, act: type = torch.nn.GELU, last: type = torch.nn.GELU) -> None:
        super().__init__()
        self.h = torch.nn.ModuleList([_Block(act) for _ in range(3)] + [_Block(last)])

    def forward(self, x):
        for block in self.h:
            x = block(x)
        return x


def test_text_diff_says_a_change_repeated_in_numbered_siblings_once() -> None:
    """An activation swapped in every block printed the same lines once per block (12 times
    for GPT-2's): the first block in full, then where else the same change is."""
    x = x16()
    before = trace(_Stack(), x)
    after = trace(_Stack(torch.nn.ReLU, torch.nn.ReLU), x)
    text = render_text(compare_view(diff_graphs(before, after)))
    lines = text.splitlines()
    assert sum(line.startswith("~ h.") for line in lines) == 1, text
    assert "~ h.0.act: ReLU  (1 change inside)" in lines
    assert "  the same change in h.1 … h.3 (3 more)" in lines
    assert lines[-1] == "0 added, 0 removed, 8 changed, 19 same"
    # the last block changed otherwise: the run stops before it
    other = trace(_Stack(torch.nn.ReLU, torch.nn.Tanh), x)
    lines = render_text(compare_view(diff_graphs(before, other))).splitlines()
    assert "  the same change in h.1 … h.2 (2 more)" in lines
    assert "~ h.3.act: Tanh  (1 change inside)" in lines


def test_passes_nested_as_deep_as_a_trace_goes_compare_and_read_as_text() -> None:
    # (QA: a 700-deep nn.Sequential traced, but its text diff ended in a RecursionError
    # stack, and `diff --check` said 1, "the passes differ")
    from torch import nn

    from torchscope.summary import summarize
    from torchscope.tracer import MAX_NESTING

    deep: nn.Module = nn.Linear(2, 2)
    for _ in range(MAX_NESTING - 2):
        deep = nn.Sequential(deep)
    g = torchscope.trace(deep, torch.randn(1, 2))
    assert g.error is None
    text = render_text(compare_view(diff_graphs(g, g), "a", "b"))
    assert text.endswith(f"no differences: {len(g.nodes)} nodes the same")
    assert summarize(g).count(": Sequential ") == MAX_NESTING - 2


class _Skips(torch.nn.Module):
    """Runs only blocks 0, 2 and 5 of six."""

    def __init__(self, act: type) -> None:
        super().__init__()
        self.h = torch.nn.ModuleList(_Block(act) for _ in range(6))

    def forward(self, x):
        for i in (0, 2, 5):
            x = self.h[i](x)
        return x


def test_text_diff_names_the_blocks_that_ran_not_a_range() -> None:
    # QA: "the same change in h.2 … h.5 (2 more)" read as blocks 2 to 5; 3 and 4 never ran
    x = x16()
    lines = render_text(
        compare_view(diff_graphs(trace(_Skips(torch.nn.GELU), x), trace(_Skips(torch.nn.ReLU), x)))
    ).splitlines()
    assert "  the same change in h.2, h.5 (2 more)" in lines, lines


class _Swaps(torch.nn.Module):
    """Two inputs of one call from producers of one name: two relus, two calls of a layer."""

    def __init__(self, swapped: bool) -> None:
        super().__init__()
        self.swapped = swapped
        self.shared = torch.nn.Linear(16, 16)

    def forward(self, x):
        a, b = torch.relu(x), torch.relu(-x)
        y1, y2 = self.shared(x), self.shared(-x)
        if self.swapped:
            return torch.cat([b, a]), y2 - y1
        return torch.cat([a, b]), y1 - y2


def test_inputs_swapped_between_producers_of_one_name_are_told_apart() -> None:
    # QA: "inputs from: relu, relu → relu, relu" and "shared/linear, shared/linear → …":
    # the node was changed and the line showed no difference
    x = x16()
    text = render_text(compare_view(diff_graphs(trace(_Swaps(False), x), trace(_Swaps(True), x))))
    assert "inputs from: relu #1, relu #2 → relu #2, relu #1" in text, text
    assert (
        "inputs from: shared/linear, shared (call 2)/linear → shared (call 2)/linear, shared/linear"
        in text
    ), text


class _Tied(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(100, width)
        self.fc = torch.nn.Linear(width, width)
        self.head = torch.nn.Linear(width, 100, bias=False)
        self.head.weight = self.emb.weight  # tied, as GPT-2's

    def forward(self, ids):
        return self.head(self.fc(self.emb(ids)))


def test_tied_weights_widened_are_the_layers_change_not_the_roots() -> None:
    # QA: "~ (root): Net (6 changes inside) / params: 4,256 → 7,152", though the layers
    # accounted for it all (their counts hold the tied weight twice)
    ids = torch.randint(0, 100, (1, 8))
    view = compare_view(diff_graphs(trace(_Tied(32), ids), trace(_Tied(48), ids)))
    text = render_text(view)
    assert "~ (root)" not in text, text
    assert "~ emb: Embedding" in text and "~ head: Linear" in text, text


class _Body(torch.nn.Module):
    def __init__(self, *layers: torch.nn.Module) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


def test_a_layer_inserted_in_a_sequential_is_the_one_added() -> None:
    # QA: Linear(32, 32) inserted before the last Linear(32, 8) was read as body.2 changed
    # (out_features 8 → 32) and body.3 added; the docs say the inserted one is added and
    # those after it, renumbered, stay matched
    relu = torch.nn.ReLU
    torch.manual_seed(0)
    before = _Body(torch.nn.Linear(16, 32), relu(), torch.nn.Linear(32, 8))
    torch.manual_seed(0)
    after = _Body(torch.nn.Linear(16, 32), relu(), torch.nn.Linear(32, 32), torch.nn.Linear(32, 8))
    x = x16()
    lines = render_text(compare_view(diff_graphs(trace(before, x), trace(after, x)))).splitlines()
    assert any(line.startswith("+ body.2: Linear") for line in lines), lines
    assert not any(line.startswith(("~ body.2", "+ body.3", "~ body.3")) for line in lines), lines
