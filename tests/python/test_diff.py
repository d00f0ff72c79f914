"""The diff of two forward passes, on small real traced models (torchscope.diff)."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, replace
from typing import Any, Optional

import pytest
import torch
import zoo
from torch import nn

import torchscope
from torchscope.align import MAX_EDITS, common_pairs
from torchscope.compare import compare_view
from torchscope.diff import Diff, diff_graphs
from torchscope.diff_text import render_text
from torchscope.graph import Edge, Graph


def trace(model: nn.Module, *args: Any) -> Graph:
    """The structure only: two models built one after the other have different random
    weights, so their values differ; tests of values put statistics on themselves."""
    torch.manual_seed(0)
    return torchscope.trace(model.eval(), *args, values=False, costs=False)


def x16() -> torch.Tensor:
    return torch.randn(2, 16)


class Net(nn.Module):
    def __init__(self, width: int = 32, extra: bool = False, head: str = "fc2") -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, width)
        self.extra = nn.Linear(width, width) if extra else None
        self.head_name = head
        setattr(self, head, nn.Linear(width, 8))

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        if self.extra is not None:
            h = torch.relu(self.extra(h))
        return getattr(self, self.head_name)(h)


class Block(nn.Module):
    def __init__(self, gelu: bool = False) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.GELU() if gelu else nn.ReLU()

    def forward(self, x):
        return x + self.act(self.fc(x))


class Tower(nn.Module):
    def __init__(self, blocks: int = 12, gelu_at: Optional[int] = None) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(gelu=i == gelu_at) for i in range(blocks))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


class Gate(nn.Module):
    """Two independent ops whose order the forward chooses."""

    def __init__(self, swapped: bool = False, functional: str = "relu") -> None:
        super().__init__()
        self.swapped = swapped
        self.functional = functional

    def forward(self, x):
        if self.swapped:
            s = torch.sigmoid(x)
            r = getattr(torch, self.functional)(x)
        else:
            r = getattr(torch, self.functional)(x)
            s = torch.sigmoid(x)
        return r * s


class Sub(nn.Module):
    def __init__(self, flipped: bool = False) -> None:
        super().__init__()
        self.flipped = flipped

    def forward(self, x):
        a, b = x.exp(), x.cos()
        return torch.sub(b, a) if self.flipped else torch.sub(a, b)


def names(changes) -> list[tuple[str, str, str]]:
    return [(c.kind, c.name, c.path) for c in changes]


def check_partition(d: Diff) -> None:
    """Every node of a is removed or matched, every node of b added or matched, one to one;
    `same` + changed = matched."""
    matched = [j for j in d.a_to_b if j >= 0]
    assert len(set(matched)) == len(matched)
    assert all(d.b_to_a[j] == i for i, j in enumerate(d.a_to_b) if j >= 0)
    assert sum(1 for i in d.b_to_a if i >= 0) == len(matched)
    assert d.same + len(d.changed()) == len(matched)
    assert len(d.removed()) + len(matched) == len(d.a.nodes)
    assert len(d.added()) + len(matched) == len(d.b.nodes)


# -- identical passes ---------------------------------------------------------------


def test_identical_passes_have_no_changes() -> None:
    x = x16()
    d = diff_graphs(trace(Net(), x), trace(Net(), x))
    check_partition(d)
    assert d.identical
    assert (d.added(), d.removed(), d.changed()) == ([], [], [])
    assert d.same == len(d.a.nodes) == len(d.b.nodes)
    wire = d.to_wire()
    assert (wire["added"], wire["removed"], wire["changed"], wire["same"]) == (
        [],
        [],
        [],
        len(d.a.nodes),
    )


def test_identical_transformer_passes() -> None:
    model, args, kwargs = zoo.gpt2(n_layer=2)
    a = torchscope.trace(model, *args, **kwargs)
    b = torchscope.trace(model, *args, **kwargs)
    d = diff_graphs(a, b)
    check_partition(d)
    assert d.identical and d.same == len(a.nodes) > 100


# -- the cases of issue 12 ---------------------------------------------------------------


def test_inserted_layer_is_added_and_nothing_after_it_shifts() -> None:
    x = x16()
    d = diff_graphs(trace(Net(), x), trace(Net(extra=True), x))
    check_partition(d)
    assert names(d.added()) == [("module", "Linear", "extra"), ("op", "linear", "extra")] + [
        ("op", "relu", "")
    ]
    assert d.removed() == [] and d.changed() == []
    extra = d.added()[0]
    assert "params 1,056" in extra.details and "inputs [2, 32]" in extra.details


def test_removed_block_is_removed_with_everything_inside() -> None:
    x = torch.randn(2, 8)
    d = diff_graphs(trace(Tower(4), x), trace(Tower(3), x))
    check_partition(d)
    removed = d.removed()
    assert {c.path for c in removed} == {"blocks.3", "blocks.3.fc", "blocks.3.act"}
    assert names(removed)[0] == ("module", "Block", "blocks.3")
    block = d.a.module_call("blocks.3").id
    assert sorted(i for i, j in enumerate(d.a_to_b) if j < 0) == sorted(zoo.subtree(d.a, block))
    assert d.added() == [] and d.changed() == []


def test_changed_width_changes_the_layer_and_the_shapes_after_it() -> None:
    x = x16()
    d = diff_graphs(trace(Net(width=32), x), trace(Net(width=64), x))
    check_partition(d)
    assert d.added() == [] and d.removed() == []
    changed = {(c.kind, c.name, c.path): c.details for c in d.changed()}
    assert changed == {
        ("module", "Linear", "fc1"): [
            "out_features: 32 → 64",
            "params: 544 → 1,088",
            "output: [2, 32] → [2, 64]",
        ],
        ("op", "linear", "fc1"): ["output: [2, 32] → [2, 64]"],
        ("op", "relu", ""): ["input: [2, 32] → [2, 64]", "output: [2, 32] → [2, 64]"],
        ("module", "Linear", "fc2"): [
            "in_features: 32 → 64",
            "params: 264 → 520",
            "input: [2, 32] → [2, 64]",
        ],
        ("op", "linear", "fc2"): ["input: [2, 32] → [2, 64]"],
    }
    # the root's parameter count changed only through its children: not a change of its own
    assert d.status_b(d.b.module_call("").id) == "same"


def test_reordered_ops_are_one_moved_op() -> None:
    x = x16()
    d = diff_graphs(trace(Gate(), x), trace(Gate(swapped=True), x))
    check_partition(d)
    assert d.added() == [] and d.removed() == []
    [moved] = d.changed()
    assert moved.kind == "op" and moved.name in ("relu", "sigmoid")
    assert len(moved.details) == 1 and moved.details[0].startswith("position in its module: ")
    assert d.same == len(d.a.nodes) - 1


def test_renamed_module_is_removed_and_added() -> None:
    x = x16()
    d = diff_graphs(trace(Net(), x), trace(Net(head="head"), x))
    check_partition(d)
    assert names(d.removed()) == [("module", "Linear", "fc2"), ("op", "linear", "fc2")]
    assert names(d.added()) == [("module", "Linear", "head"), ("op", "linear", "head")]
    assert d.changed() == []


def test_one_changed_block_of_a_folded_twelve() -> None:
    x = torch.randn(2, 8)
    a, b = trace(Tower(12), x), trace(Tower(12, gelu_at=5), x)
    assert [len(g.members) for g in a.groups if a.nodes[g.members[0]].name == "Block"] == [12]
    assert sorted(len(g.members) for g in b.groups if b.nodes[g.members[0]].name == "Block") == [
        5,
        6,
    ]
    d = diff_graphs(a, b)
    check_partition(d)
    assert d.added() == [] and d.removed() == []
    changed = d.changed()
    assert names(changed) == [("module", "GELU", "blocks.5.act"), ("op", "gelu", "blocks.5.act")]
    assert changed[0].details == [
        "target: torch.nn.modules.activation.ReLU → torch.nn.modules.activation.GELU",
        "approximate: (none) → 'none'",
    ]
    assert changed[1].details[0] == "target: torch.nn.functional.relu → torch.nn.functional.gelu"


# -- finer points ----------------------------------------------------------------------


def test_a_different_function_in_place_is_a_changed_op() -> None:
    x = x16()
    d = diff_graphs(trace(Gate(), x), trace(Gate(functional="tanh"), x))
    check_partition(d)
    assert d.added() == [] and d.removed() == []
    [c] = d.changed()
    assert c.name == "tanh" and c.details == ["target: torch.relu → torch.tanh"]


def test_swapped_arguments_are_a_rewired_op() -> None:
    x = x16()
    d = diff_graphs(trace(Sub(), x), trace(Sub(flipped=True), x))
    check_partition(d)
    [c] = d.changed()
    assert c.name == "sub" and c.details == ["inputs from: exp, cos → cos, exp"]


class Split(nn.Module):
    """q, k, v of one split, of one shape: which is which only `Edge.output` tells."""

    def __init__(self, swapped: bool = False) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 24)
        self.swapped = swapped

    def forward(self, x):
        q, k, v = self.qkv(x).split(8, dim=-1)
        if self.swapped:
            q, k = k, q
        return torch.sub(q, k) * v


def test_swapped_outputs_of_one_call_are_a_rewired_op() -> None:
    x = x16()
    d = diff_graphs(trace(Split(), x), trace(Split(swapped=True), x))
    check_partition(d)
    assert d.added() == [] and d.removed() == []
    [c] = d.changed()
    assert c.name == "sub"
    assert c.details == [
        "inputs from: split (output 0), split (output 1) → split (output 1), split (output 0)"
    ]
    # edges are matched output to output: each of a's is b's edge of the same tensor
    for k, other in enumerate(d.edge_a_to_b):
        ea, eb = d.a.edges[k], d.b.edges[other]
        assert other >= 0 and ea.output == eb.output and d.a_to_b[ea.src] == eb.src


def test_an_input_from_an_added_node_is_not_a_change_of_the_consumer() -> None:
    x = x16()
    d = diff_graphs(trace(Net(extra=True), x), trace(Net(), x))  # the other way round
    check_partition(d)
    assert d.changed() == [] and len(d.removed()) == 3


def test_a_forward_that_raises_is_compared_up_to_the_error() -> None:
    class Breaks(nn.Module):
        def __init__(self, broken: bool) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 4)
            self.broken = broken

        def forward(self, x):
            h = self.fc(x)
            if self.broken:
                h = h @ torch.ones(3, 3)  # shapes do not fit
            return h

    x = x16()
    ok = trace(Breaks(False), x)
    broken = torchscope.trace_call(Breaks(True), (x,), raise_errors=False)
    d = diff_graphs(ok, broken)
    check_partition(d)
    assert names(d.added()) == [("constant", "ones", ""), ("error", "RuntimeError", "")]
    assert "Tensor.matmul" in d.added()[1].details
    assert names(d.removed()) == [("output", "output", "")]
    assert not d.identical


def test_change_names_the_module_call_it_happened_in() -> None:
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            return self.fc(self.fc(x))

    d = diff_graphs(trace(Twice(), x16()), trace(Twice(), torch.randn(3, 16)))
    check_partition(d)
    assert sorted((c.kind, c.path, c.call) for c in d.changed() if c.path == "fc") == [
        ("module", "fc", 0),
        ("module", "fc", 1),
        ("op", "fc", 0),
        ("op", "fc", 1),
    ]


def test_parameter_counts_change_where_the_parameters_are() -> None:
    class Gated(nn.Module):
        def __init__(self, gates: int) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.gate = nn.Parameter(torch.ones(gates))

        def forward(self, x):
            return self.fc(x) * self.gate.sum()

    x = torch.randn(2, 4)
    d = diff_graphs(trace(Gated(1), x), trace(Gated(3), x))
    changed = {(c.kind, c.path): c.details for c in d.changed()}
    assert changed[("module", "")] == ["params: 21 → 23"]
    assert ("module", "fc") not in changed


# -- values (Edge.stats) -------------------------------------------------------------


@dataclass(slots=True)
class StatsEdge(Edge):
    """An edge with the `stats` field the values feature adds to the format."""

    stats: Optional[dict[str, Any]] = None


def with_stats(graph: Graph, scale: float, nan: int = 0) -> Graph:
    def stats(e: Edge) -> dict[str, Any]:
        return {
            "min": -1.0 * scale,
            "max": 1.0 * scale,
            "mean": 0.01 * scale,
            "std": 0.5 * scale,
            "absmax": 1.0 * scale,
            "zeros": 0,
            "nan": nan,
            "inf": 0,
            "numel": 64,
        }

    edges: list[Edge] = [StatsEdge(e.src, e.dst, e.shape, e.dtype, stats(e)) for e in graph.edges]
    return replace(graph, edges=edges)


def test_statistics_beyond_the_tolerance_change_a_node() -> None:
    g = trace(Net(), x16())
    d = diff_graphs(with_stats(g, 1.0), with_stats(g, 2.0))
    check_partition(d)
    assert d.changed() and all(c.details[-1].startswith("values: ") for c in d.changed())
    first = {c.name: c.details for c in d.changed()}["x"]
    assert first == ["values: mean 0.01 → 0.02, std 0.5 → 1, min -1 → -2, max 1 → 2, absmax 1 → 2"]
    nan = diff_graphs(with_stats(g, 1.0), with_stats(g, 1.0, nan=3))
    assert {c.name: c.details for c in nan.changed()}["x"] == ["values: nan 0 → 3"]


def test_a_changed_fraction_of_zeros_changes_the_node_as_the_fraction() -> None:
    # `zeros` is a fraction of the values already (0.0 … 1.0): half the values no longer
    # zero is a change, shown as 50% → 0%, on a tensor of any size
    class Relu(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x)

    x = torch.cat([-torch.rand(2000) - 0.5, torch.rand(2000) + 0.5])
    a = torchscope.trace_call(Relu(), (x,))
    b = torchscope.trace_call(Relu(), (x.abs(),))
    changed = {c.name: c.details for c in diff_graphs(a, b).changed()}
    (details,) = changed["relu"]
    assert details.startswith("values: ") and details.endswith(", zeros 50.0% → 0.0%"), details


def test_statistics_within_the_tolerance_or_on_one_side_only_change_nothing() -> None:
    g = trace(Net(), x16())
    assert diff_graphs(with_stats(g, 1.0), with_stats(g, 1.0005)).identical
    assert not diff_graphs(
        with_stats(g, 1.0), with_stats(g, 1.0005), stats_tolerance=1e-5
    ).identical
    assert diff_graphs(g, with_stats(g, 2.0)).identical
    assert diff_graphs(with_stats(g, 2.0), g).identical


def test_integer_statistics_are_compared_at_the_tensors_magnitude_as_float_ones() -> None:
    # integer tensors have no absmax: the tolerance is still a fraction of the tensor's
    # largest magnitude (its min or max), not of a mean near 0
    class Same(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + 0

    def pair(dtype: torch.dtype) -> tuple[Graph, Graph]:
        x = torch.arange(-2048, 2048).to(dtype)
        y = x.clone()
        y[0] += 10  # one value of 4,096: the mean moves by 0.0024, 0.0001% of 2,048
        return torchscope.trace(Same(), x), torchscope.trace(Same(), y)

    assert diff_graphs(*pair(torch.float32)).identical
    assert diff_graphs(*pair(torch.int64)).identical
    a, b = pair(torch.int64)
    assert not diff_graphs(a, b, stats_tolerance=1e-7).identical  # still compared


# -- the wire document ------------------------------------------------------------------


def test_document_shape() -> None:
    x = x16()
    d = diff_graphs(trace(Net(), x), trace(Net(width=64, extra=True), x))
    wire = d.to_wire("a.py:Net", "b.py:Net")
    assert list(wire) == ["format", "version", "a", "b", "added", "removed", "changed", "same"]
    assert (wire["format"], wire["version"]) == ("torchscope.diff", 1)
    assert wire["a"]["source"] == "a.py:Net" and wire["b"]["model"]["name"] == "Net"
    assert list(wire["a"]) == ["source", "model", "stats", "error", "nan_origin"]
    for change in wire["added"] + wire["removed"] + wire["changed"]:
        assert list(change) == ["kind", "name", "path", "call", "details"]
        assert all(isinstance(s, str) for s in change["details"])
    assert wire["same"] == d.same


# -- the alignment ----------------------------------------------------------------------


def lcs_length(xs: list[int], ys: list[int]) -> int:
    table = [[0] * (len(ys) + 1) for _ in range(len(xs) + 1)]
    for i in range(len(xs) - 1, -1, -1):
        for j in range(len(ys) - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1 if xs[i] == ys[j] else max(table[i + 1][j], table[i][j + 1])
            )
    return table[0][0]


def is_common_subsequence(pairs, xs, ys) -> bool:
    increasing = all(p[0] < q[0] and p[1] < q[1] for p, q in zip(pairs, pairs[1:]))
    return increasing and all(xs[i] == ys[j] for i, j in pairs)


@pytest.mark.parametrize("alphabet", [2, 4, 10])
def test_alignment_is_a_longest_common_subsequence(alphabet: int) -> None:
    rng = random.Random(alphabet)
    for _ in range(400):
        xs = [rng.randrange(alphabet) for _ in range(rng.randrange(0, 20))]
        ys = [rng.randrange(alphabet) for _ in range(rng.randrange(0, 20))]
        pairs = common_pairs(xs, ys)
        assert is_common_subsequence(pairs, xs, ys)
        assert len(pairs) == lcs_length(xs, ys), (xs, ys)


def test_alignment_of_very_different_sequences_stays_a_common_subsequence() -> None:
    rng = random.Random(7)
    xs = [rng.randrange(50) for _ in range(MAX_EDITS * 2)]
    ys = [rng.randrange(50) for _ in range(MAX_EDITS * 2)]
    pairs = common_pairs(xs, ys)
    assert is_common_subsequence(pairs, xs, ys) and len(pairs) > MAX_EDITS // 10


def test_alignment_survives_an_insertion() -> None:
    xs = list(range(100))
    ys = xs[:40] + [999] + xs[40:]
    assert common_pairs(xs, ys) == [(i, i if i < 40 else i + 1) for i in range(100)]


def test_eval_against_training_with_values_ignored_keeps_what_the_model_does():
    """The editor's "Compare with training mode" asks for a tolerance no statistic reaches:
    dropout's noise changed every value after it (GPT-2: ~85 changes), and the changes that
    matter, dropout and batch norm switching, are in the calls' arguments."""

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(16, 16)
            self.norm = nn.BatchNorm1d(16)
            self.drop = nn.Dropout(0.5)
            self.out = nn.Linear(16, 4)

        def forward(self, x):
            return self.out(torch.relu(self.drop(self.norm(self.fc(x)))))

    model, x = Block(), torch.randn(8, 16)
    a = torchscope.trace_call(model.eval(), (x,))
    b = torchscope.trace_call(model.train(), (x,))
    model.eval()
    noisy = {c.name for c in diff_graphs(a, b).changed()}
    assert {"relu", "linear"} <= noisy  # values after the dropout: noise
    quiet = {c.name for c in diff_graphs(a, b, stats_tolerance=1e9).changed()}
    assert quiet == {"batch_norm", "dropout"}, quiet


class _Scaled(nn.Module):
    """h = fc1(x) * s; g = tanh(h); then fc2 of g, or (edited) of g + 1."""

    def __init__(self, scale: float, plus_one: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc1, self.fc2 = nn.Linear(8, 8), nn.Linear(8, 2)
        self.scale, self.plus_one = scale, plus_one

    def forward(self, x):
        g = torch.tanh(self.fc1(x) * self.scale)
        return self.fc2(g + 1 if self.plus_one else g)


def test_a_value_change_is_seen_where_the_output_goes_to_a_new_op():
    """tanh's input grew 1.5×, but its output now goes to a new `add`: its one edge had no
    match in the other pass, so its values were never compared, and it read as the same."""
    x = torch.randn(4, 8)

    def values(model: nn.Module) -> Graph:
        return torchscope.trace(model, x, costs=False)

    a, b = values(_Scaled(2.0, False)), values(_Scaled(3.0, True))
    changed = {c.name: c.details for c in diff_graphs(a, b).changed()}
    assert "tanh" in changed and any(d.startswith("values: ") for d in changed["tanh"]), changed
    # the same edit without the new op: tanh's values through its matched edge, once
    changed = {c.name: c.details for c in diff_graphs(a, values(_Scaled(3.0, False))).changed()}
    assert sum(d.startswith("values: ") for d in changed["tanh"]) == 1, changed


def test_values_that_differ_are_written_with_digits_enough_to_show_it():
    """A buffer of 1.0 made 1.0005: "mean 1 → 1, min 1 → 1" read as no change at all."""
    from torchscope.diff import _stats_change

    a = {"mean": 1.0, "min": 1.0, "absmax": 1.0, "std": 0.25}
    b = {"mean": 1.0005, "min": 1.0005, "absmax": 1.0005, "std": 0.5}
    assert _stats_change(a, b, 0.0) == (
        "values: mean 1 → 1.0005, std 0.25 → 0.5, min 1 → 1.0005, absmax 1 → 1.0005"
    )


class Branches(nn.Module):
    """Two layers on one input whose call order the forward chooses; `extra` calls a third
    between them."""

    def __init__(self, swapped: bool = False, extra: bool = False) -> None:
        super().__init__()
        self.swapped = swapped
        self.left = nn.Linear(16, 8)
        self.right = nn.Linear(16, 8)
        self.extra = nn.Linear(16, 8) if extra else None

    def forward(self, x):
        if self.swapped:
            r = self.right(x)
            left = self.left(x)
        else:
            left = self.left(x)
            if self.extra is not None:
                left = left + self.extra(x)
            r = self.right(x)
        return left * r


def test_a_module_called_in_another_order_says_its_position() -> None:
    """Ops moved in their module said so; a module call moved said nothing: it is matched by
    its path, so the diff was empty."""
    x = x16()
    torch.manual_seed(0)
    a = Branches()
    b = Branches(swapped=True)
    b.load_state_dict(a.state_dict())
    d = diff_graphs(trace(a, x), trace(b, x))
    check_partition(d)
    assert d.added() == [] and d.removed() == []
    [moved] = d.changed()
    assert (moved.kind, moved.path) in (("module", "left"), ("module", "right"))
    assert moved.details in (["position in its module: 1 → 2"], ["position in its module: 2 → 1"])
    assert "position in its module" in render_text(compare_view(d))


def test_a_module_added_between_two_does_not_move_them() -> None:
    x = x16()
    torch.manual_seed(0)
    a = Branches()
    b = Branches(extra=True)
    b.load_state_dict(a.state_dict(), strict=False)
    d = diff_graphs(trace(a, x), trace(b, x))
    check_partition(d)
    assert {c.path for c in d.added() if c.kind == "module"} == {"extra"}
    assert not any("position" in line for c in d.changed() for line in c.details)


class _Buffered(nn.Module):
    """A buffer from `torch.empty_like` filled later (transformers' MoE experts): before the
    fill its values are whatever the memory held."""

    def forward(self, x):
        buf = torch.empty_like(x)
        buf.copy_(x * 2)
        return buf + 1


def test_the_values_of_uninitialised_memory_are_not_compared() -> None:
    """Two traces of one MoE model differed by the garbage `empty_like` read (`mean 1.956e+13
    → 4.431e+17`), so `diff --check` of a model against itself failed."""
    g = torchscope.trace(_Buffered(), torch.randn(4, 8), costs=False)
    [made] = [n.id for n in g.nodes if n.name == "empty_like"]
    assert all(e.stats is None for e in g.edges if e.src == made)  # (none read now)
    # graph files of an earlier torchscope hold what it read there
    for e in g.edges:
        if e.src == made:
            e.stats = {"mean": 1.9e13, "max": 2.1e14, "absmax": 2.1e14, "nan": 0, "inf": 0}
    other = copy.deepcopy(g)
    garbage = [e for e in other.edges if e.src == made]
    for e in garbage:
        e.stats = {**e.stats, "mean": 4.4e17, "max": 6.3e18, "absmax": 6.3e18}
    assert diff_graphs(g, other).identical
    # what is written into it is compared
    [fill] = [n.id for n in other.nodes if n.name == "copy_"]
    for e in other.edges:
        if e.src == fill:
            e.stats = {**e.stats, "mean": 3.0}
    assert not diff_graphs(g, other).identical


class UsesOrNot(nn.Module):
    """`z` is made on both sides; only with `use` does anything take it. With `ok` False the
    forward raises (a Python `assert`) after `norm`, before anything takes its output."""

    def __init__(self, use: bool = False, ok: bool = True) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.use, self.ok = use, ok

    def forward(self, x):
        h = self.norm(x)
        z = x + 1
        assert self.ok, "refused"
        return torch.cat([h, h * 2] + ([z] if self.use else []), dim=-1)


def test_a_node_whose_output_one_side_does_not_use_is_not_changed() -> None:
    """`outputs: - → [2, 16]` on the add that `cat` now takes, and `outputs: [2, 16] → -`
    on a layer whose consumer never ran: the consumer's change (or the error), not theirs."""
    x = x16()
    d = diff_graphs(trace(UsesOrNot(), x), trace(UsesOrNot(use=True), x))
    check_partition(d)
    changed = [c.name for c in d.changed()]
    assert "add" not in changed and "cat" in changed, render_text(compare_view(d, "a", "b"))
    raised = torchscope.trace_call(UsesOrNot(ok=False).eval(), (x,), raise_errors=False)
    d = diff_graphs(trace(UsesOrNot(), x), raised)
    check_partition(d)
    assert d.changed() == [], render_text(compare_view(d, "a", "b"))
    assert ("error", "AssertionError", "") in names(d.added())


class Stack(nn.Module):
    def __init__(self, *layers: nn.Module) -> None:
        super().__init__()
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


def test_a_layer_inserted_into_a_sequential_is_added_and_the_ones_after_it_stay() -> None:
    """The layers after it take the next index (`body.1` ReLU is `body.2`): matched by
    index, each was "changed" into the class before it."""
    torch.manual_seed(0)
    fc1, fc2 = nn.Linear(8, 8), nn.Linear(8, 8)
    x = torch.randn(2, 8)
    before = trace(Stack(fc1, nn.ReLU(), fc2, nn.Tanh()), x)
    after = trace(Stack(fc1, nn.LayerNorm(8), nn.ReLU(), fc2, nn.Tanh()), x)
    d = diff_graphs(before, after)
    check_partition(d)
    assert names(d.added()) == [("module", "LayerNorm", "body.1"), ("op", "layer_norm", "body.1")]
    assert d.removed() == [] and d.changed() == [], render_text(compare_view(d, "a", "b"))
    swapped = trace(Stack(fc1, fc2, nn.ReLU(), nn.Tanh()), x)
    d = diff_graphs(before, swapped)
    check_partition(d)
    modules = [c for c in (*d.added(), *d.removed()) if c.kind == "module"]
    assert len(modules) == 2 and modules[0].name == modules[1].name, names(modules)
    assert not any(line.startswith("target:") for c in d.changed() for line in c.details), (
        render_text(compare_view(d, "a", "b"))
    )


class Wraps(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.c = inner

    def forward(self, x):
        return self.c(x) * 2


class Shared(nn.Module):
    """`c` called inside `p` on each of p's calls; with `direct`, p's second call is c's
    own: c's second call moves from inside p (call 2) to the top."""

    def __init__(self, direct: bool = False) -> None:
        super().__init__()
        self.c = nn.Linear(4, 4)
        self.p = Wraps(self.c)
        self.direct = direct

    def forward(self, x):
        x = self.p(x)
        return self.c(x) if self.direct else self.p(x)


def test_a_call_whose_module_call_around_it_was_removed_goes_with_it() -> None:
    """c's call 2 was matched across parents while p's call 2 around it was removed: the
    compare view drew it twice (in p's ghost and at the top) and the counts disagreed."""
    x = torch.randn(2, 4)
    torch.manual_seed(0)
    d = diff_graphs(trace(Shared(), x), trace(Shared(direct=True), x))
    check_partition(d)
    assert ("module", "Wraps", "p") in names(d.removed())
    assert ("module", "Linear", "c") in names(d.added())
    view = compare_view(d, "a", "b")
    shown = [i for i in view.a_ids if i is not None]
    assert len(shown) == len(set(shown)), "a node of a drawn twice"
    assert len(view.graph.nodes) == len(d.b.nodes) + len(d.removed())


def test_a_layer_of_another_class_in_a_sequential_is_a_changed_layer() -> None:
    """ReLU → GELU at body.1: one changed layer (`target: …ReLU → …GELU`), as before the
    items were aligned by class (then it was removed and added)."""
    torch.manual_seed(0)
    fc1, fc2 = nn.Linear(8, 8), nn.Linear(8, 8)
    x = torch.randn(2, 8)
    d = diff_graphs(trace(Stack(fc1, nn.ReLU(), fc2), x), trace(Stack(fc1, nn.GELU(), fc2), x))
    check_partition(d)
    assert d.added() == [] and d.removed() == [], render_text(compare_view(d, "a", "b"))
    [layer] = [c for c in d.changed() if c.kind == "module" and c.path == "body.1"]
    assert layer.details[0].startswith("target: torch.nn.modules.activation.ReLU → ")


class Skips(nn.Module):
    """Four blocks of which only those in `used` run (LayerDrop, experts a router picks)."""

    def __init__(self, used: tuple[int, ...]) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])
        self.used = used

    def forward(self, x):
        for i in self.used:
            x = self.blocks[i](x)
        return x


def test_items_of_a_container_called_in_part_keep_their_own_index() -> None:
    """Blocks 0, 1, 3 called where 0–3 were: block 2 is removed and block 3 is block 3
    (aligned as if consecutive, 2 was matched to 3 and 3 was removed)."""
    x = torch.randn(2, 8)
    d = diff_graphs(trace(Skips((0, 1, 2, 3)), x), trace(Skips((0, 1, 3)), x))
    check_partition(d)
    assert [c.path for c in d.removed() if c.kind == "module"] == ["blocks.2"]
    assert d.added() == [], render_text(compare_view(d, "a", "b"))
