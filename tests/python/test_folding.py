"""Repeated-block folding: groups of consecutive sibling module calls with the same structure."""

from __future__ import annotations

import pytest
import torch
import zoo
from conftest import get_traced
from torch import nn

import torchscope


def _check_group_rules(g):
    """The rules of docs/graph-format.md, section Group, checked on the graph itself."""
    kids = zoo.children_map(g)
    for grp in g.groups:
        assert len(grp.members) >= 2
        members = [g.nodes[m] for m in grp.members]
        assert all(m.kind == "module" for m in members)
        assert all(m.parent == grp.parent for m in members)
        assert len({m.target for m in members}) == 1, "members have the same class"
        assert grp.members == sorted(grp.members)
        siblings = kids.get(grp.parent, [])
        pos = [siblings.index(m) for m in grp.members]
        assert pos == list(range(pos[0], pos[0] + len(pos))), "members are consecutive siblings"
        # nothing but members' own descendants lies between two members
        inside = set().union(*(zoo.subtree(g, m) for m in grp.members))
        for nid in range(grp.members[0], max(inside) + 1):
            assert nid in inside, f"node {nid} lies between members of {grp.name!r}"
        assert grp.name == f"{members[0].name} ×{len(members)}"
        # same structure: same child sequence (kind, target) recursively, same edge shapes out
        sigs = [_structure(g, kids, m) for m in grp.members]
        assert all(s == sigs[0] for s in sigs), f"members of {grp.name!r} differ"
        # a chain: each member after the first reads something the previous one made
        for prev, cur in zip(grp.members, grp.members[1:]):
            made, reads = zoo.subtree(g, prev), zoo.subtree(g, cur)
            assert any(e.src in made and e.dst in reads for e in g.edges), (
                f"{g.nodes[cur].path!r} does not read {g.nodes[prev].path!r} in {grp.name!r}"
            )


def _structure(g, kids, nid):
    n = g.nodes[nid]
    what = n.name if n.kind == "constant" else n.target  # a constant's target is its own path
    out_shapes = tuple(sorted({tuple(e.shape) for e in g.edges if e.src == nid}))
    return (
        n.kind,
        what,
        n.params,
        out_shapes,
        tuple(_structure(g, kids, c) for c in kids.get(nid, [])),
    )


def test_group_rules_hold_across_the_zoo(traced):
    _check_group_rules(traced.graph)


def test_gpt2_four_blocks_fold_into_one_group():
    model, args, kwargs = zoo.gpt2(n_layer=4)
    g = torchscope.trace(model, *args, **kwargs)
    root = g.module_call("", 0)
    blocks = [g.module_call(f"h.{i}", 0) for i in range(4)]
    assert all(b.name == "GPT2Block" and b.parent == root.id for b in blocks)
    block_groups = [grp for grp in g.groups if g.nodes[grp.members[0]].name == "GPT2Block"]
    assert len(block_groups) == 1
    [grp] = block_groups
    assert grp.members == [b.id for b in blocks]
    assert grp.parent == root.id
    assert grp.name == "GPT2Block ×4"
    _check_group_rules(g)
    wire = g.to_wire()
    assert {"parent": root.id, "members": [b.id for b in blocks], "name": "GPT2Block ×4"} in [
        {k: v for k, v in w.items() if k != "cost"} for w in wire["groups"]
    ]
    # the group's cost is its members' together
    [w] = [w for w in wire["groups"] if w["name"] == "GPT2Block ×4"]
    assert w["cost"]["flops"] == sum(b.cost.flops for b in blocks) > 0
    assert w["cost"]["bytes"] == sum(b.cost.bytes for b in blocks) > 0
    assert w["cost"]["time_ns"] == sum(b.cost.time_ns for b in blocks)


def test_blocks_of_different_shapes_do_not_fold():
    model = zoo.GrowingBlocks().eval()
    g = torchscope.trace(model, torch.randn(2, 8))
    blocks = [g.module_call(f"blocks.{i}", 0) for i in range(3)]
    assert len({b.target for b in blocks}) == 1
    for grp in g.groups:
        assert not set(grp.members) & {b.id for b in blocks}, (
            f"blocks of different shapes folded: {grp}"
        )
    _check_group_rules(g)


def test_same_shapes_different_ops_do_not_fold():
    class A(nn.Module):
        def __init__(self, act: bool) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.act = act

        def forward(self, x):
            h = self.fc(x)
            return torch.relu(h) if self.act else torch.tanh(h)

    model = nn.Sequential(A(True), A(False), A(True))
    g = torchscope.trace(model, torch.randn(2, 8))
    assert not [grp for grp in g.groups if g.nodes[grp.members[0]].name == "A"]


def test_identical_blocks_in_sequential_fold():
    g = get_traced("residual_cnn").graph
    seq = g.module_call("blocks", 0)
    res_groups = [grp for grp in g.groups if grp.parent == seq.id]
    assert len(res_groups) == 1
    assert res_groups[0].members == [g.module_call(f"blocks.{i}", 0).id for i in range(3)]
    assert res_groups[0].name == "ResBlock ×3"


def test_llama_decoder_layers_fold():
    g = get_traced("llama").graph
    layers = [n.id for n in zoo.module_nodes(g) if n.name == "LlamaDecoderLayer"]
    assert any(grp.members == layers for grp in g.groups)


def test_a_single_block_is_not_a_group():
    model, args, kwargs = zoo.gpt2(n_layer=1)
    g = torchscope.trace(model, *args, **kwargs)
    assert not [grp for grp in g.groups if g.nodes[grp.members[0]].name == "GPT2Block"]


def test_groups_survive_the_wire():
    model, args, kwargs = zoo.gpt2(n_layer=4)
    g = torchscope.trace(model, *args, **kwargs)
    back = torchscope.Graph.from_wire(g.to_wire())
    assert [(x.parent, x.members, x.name) for x in back.groups] == [
        (x.parent, x.members, x.name) for x in g.groups
    ]


def _groups_of(g, name):
    """Each group of members named `name`, as its members' paths."""
    return [
        [g.nodes[m].path for m in grp.members]
        for grp in g.groups
        if g.nodes[grp.members[0]].name == name
    ]


class TwoTower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.left = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
        self.right = nn.Sequential(nn.Linear(8, 8), nn.ReLU())

    def forward(self, a, b):
        return (self.left(a) - self.right(b)).abs().sum(-1)


def test_side_by_side_towers_do_not_fold():
    g = torchscope.trace(TwoTower(), torch.randn(1, 8), torch.randn(1, 8))
    assert _groups_of(g, "Sequential") == []
    assert "×2" not in g.summary()
    _check_group_rules(g)


def test_query_key_value_projections_do_not_fold():
    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.query, self.key, self.value = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

        def forward(self, x):
            q, k, v = self.query(x), self.key(x), self.value(x)
            return (q @ k.transpose(-1, -2)).softmax(-1) @ v

    g = torchscope.trace(Attention(), torch.randn(2, 4, 8))
    assert _groups_of(g, "Linear") == []
    _check_group_rules(g)


def test_heads_and_experts_on_one_input_do_not_fold():
    class Heads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.heads = nn.ModuleList([nn.Linear(8, 4) for _ in range(3)])
            self.experts = nn.ModuleList(
                [nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8)) for _ in range(4)]
            )

        def forward(self, x):
            heads = torch.cat([h(x) for h in self.heads], dim=-1)
            mixed = torch.stack([e(x) for e in self.experts]).mean(0)
            return heads, mixed

    g = torchscope.trace(Heads(), torch.randn(2, 8))
    assert _groups_of(g, "Linear") == []
    assert _groups_of(g, "Sequential") == []
    _check_group_rules(g)


class Broken(nn.Module):
    """Blocks called one after another; `fresh` says which start again from the input."""

    def __init__(self, n: int, fresh: set[int]) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([zoo.Block(8, 8) for _ in range(n)])
        self.fresh = fresh

    def forward(self, x):
        h, outs = x, []
        for i, b in enumerate(self.blocks):
            if i in self.fresh:
                outs.append(h)
                h = x
            h = b(h)
        return torch.stack([*outs[1:], h]).sum(0) if outs else h


def test_a_broken_chain_folds_each_chained_run():
    # 0 → 1 → 2, then 3 starts again from the input: 3 → 4
    g = torchscope.trace(Broken(5, {0, 3}), torch.randn(2, 8))
    assert _groups_of(g, "Block") == [
        ["blocks.0", "blocks.1", "blocks.2"],
        ["blocks.3", "blocks.4"],
    ]
    _check_group_rules(g)
    # a run of one is no group: 0 | 1 → 2 | 3
    g = torchscope.trace(Broken(4, {0, 1, 3}), torch.randn(2, 8))
    assert _groups_of(g, "Block") == [["blocks.1", "blocks.2"]]
    _check_group_rules(g)


def test_a_chain_with_a_residual_from_before_or_an_inner_output_folds():
    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, h, first):
            inner = self.fc(h)
            return torch.tanh(inner) + first, inner  # the next layer reads only `inner`

    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([Layer() for _ in range(4)])

        def forward(self, x):
            first = x.relu()
            h, outs = first, []
            for layer in self.layers:
                out, h = layer(h, first)  # `first`: from before the whole stack
                outs.append(out)
            return torch.stack(outs).sum(0)

    g = torchscope.trace(Stack(), torch.randn(2, 8))
    assert _groups_of(g, "Layer") == [[f"layers.{i}" for i in range(4)]]
    _check_group_rules(g)


@pytest.mark.parametrize(
    "name, block, paths",
    [
        ("residual_cnn", "ResBlock", [f"blocks.{i}" for i in range(3)]),
        ("transformer_encoder", "TransformerEncoderLayer", ["layers.0", "layers.1"]),
        ("gpt2", "GPT2Block", ["h.0", "h.1"]),
        ("bert", "BertLayer", ["encoder.layer.0", "encoder.layer.1"]),
        ("vit", "ViTLayer", ["layers.0", "layers.1"]),
        ("llama", "LlamaDecoderLayer", ["layers.0", "layers.1"]),
        ("mixtral", "MixtralDecoderLayer", ["layers.0", "layers.1"]),
        ("shared_module", "Linear", ["shared", "shared"]),  # shared(tanh(..)), then its alias
    ],
)
def test_stacks_of_layers_still_fold(name, block, paths):
    assert _groups_of(get_traced(name).graph, block) == [paths]


def test_clip_query_key_value_projections_do_not_fold():
    g = get_traced("clip").graph
    assert _groups_of(g, "Linear") == []


def test_a_long_run_of_blocks_is_named_with_thousands_separated() -> None:
    """ "Block ×2,000", as the viewer writes its run counts ("calls 1–10,000 of 50,000")."""
    model = nn.Sequential(*[nn.Sequential(nn.Linear(2, 2)) for _ in range(1200)])
    g = torchscope.trace(model, torch.randn(1, 2), values=False, costs=False)
    assert [gr.name for gr in g.groups] == ["Sequential ×1,200"]
    assert "Sequential ×1,200" in g.summary()
