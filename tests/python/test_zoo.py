"""The traced graph of every zoo model against independent ground truth:
our own forward hooks, `named_modules`, the real output and the format rules."""

from __future__ import annotations

import inspect

import msgpack
import pytest
import torch
import zoo
from conftest import get_traced
from torch import nn

import torchscope

# -- structure rules from docs/graph-format.md ------------------------------------


def test_structure_rules(traced):
    g = traced.graph
    n_nodes = len(g.nodes)
    assert n_nodes > 0
    for i, n in enumerate(g.nodes):
        assert n.id == i, "node i has id i"
        assert n.kind in ("input", "output", "op", "module", "constant", "error")
        if n.parent is not None:
            assert 0 <= n.parent < i, f"node {i}: parent {n.parent} must come before its child"
            assert g.nodes[n.parent].kind == "module", f"node {i}: parent is not a module call"
        if n.kind in ("input", "output"):
            assert n.parent is None, f"{n.kind} node {n.name!r} must be top level"
        if n.kind != "module":
            assert n.path == "" and n.call == 0 and n.params == 0 and n.defn is None
    roots = [n for n in g.nodes if n.kind == "module" and n.parent is None]
    assert len(roots) == 1, "exactly one top-level module call: the root model"
    root = roots[0]
    assert root.path == "" and root.call == 0
    # everything the forward does is inside the root call
    inside = zoo.subtree(g, root.id)
    for n in g.nodes:
        if n.kind in ("op", "module", "constant", "error"):
            assert n.id in inside, f"{n.kind} {n.name!r} (node {n.id}) is outside the root call"
    # edges join existing leaf nodes
    has_children = {n.parent for n in g.nodes if n.parent is not None}
    for e in g.edges:
        assert 0 <= e.src < n_nodes and 0 <= e.dst < n_nodes
        assert e.src != e.dst
        assert e.src not in has_children, f"edge from module with children {g.nodes[e.src].path!r}"
        assert e.dst not in has_children, f"edge into module with children {g.nodes[e.dst].path!r}"
        assert g.nodes[e.src].kind != "output" and g.nodes[e.dst].kind not in ("input", "constant")
        assert isinstance(e.dtype, str) and e.dtype
        assert e.shape is not None and all(isinstance(d, int) and d >= 0 for d in e.shape)
    # "one edge per distinct tensor passed to a call": no exact duplicates
    wire = g.to_wire()
    assert wire["stats"]["ops"] == sum(n.kind == "op" for n in g.nodes)
    assert wire["stats"]["modules"] == sum(n.kind == "module" for n in g.nodes)
    assert g.error is None
    assert not [n for n in g.nodes if n.kind == "error"]


def test_model_info(traced):
    m = traced.model
    info = traced.graph.model
    cls = type(m)
    assert info.name == cls.__name__
    assert info.qualname == f"{cls.__module__}.{cls.__qualname__}"
    assert info.params == sum(p.numel() for p in m.parameters())
    first = next(iter(m.parameters()))
    assert info.device == str(first.device)
    assert info.dtype == str(first.dtype).removeprefix("torch.")


# -- module calls against our own hooks ---------------------------------------------


def test_module_calls_match_hooks(traced):
    g = traced.graph
    got = [(n.path, n.call, n.target) for n in zoo.module_nodes(g)]
    want = [(c.path, c.call, c.qualname) for c in traced.calls]
    assert got == want


def test_module_names_params_and_nesting(traced):
    g = traced.graph
    mods = zoo.module_nodes(g)
    assert len(mods) == len(traced.calls)
    by_id = {}
    for n, c in zip(mods, traced.calls):
        by_id[n.id] = c
        assert n.name == type(c.module).__name__
        assert n.params == sum(p.numel() for p in c.module.parameters()), n.path
        # nesting: the graph parent is the call that was open around this one
        depth = sum(1 for a in zoo.ancestors(g, n.id) if g.nodes[a].kind == "module")
        assert depth == c.depth, f"{n.path} call {n.call}: depth {depth}, hooks saw {c.depth}"
    for n, c in zip(mods, traced.calls):
        want = mods[c.parent].id if c.parent >= 0 else None
        assert n.parent == want, f"{n.path} call {n.call}: parent {n.parent}, hooks say {want}"


def _out_edges(g, nid):
    inside = zoo.subtree(g, nid)
    return [e for e in g.edges if e.src in inside and e.dst not in inside]


def _in_edges(g, nid):
    inside = zoo.subtree(g, nid)
    return [e for e in g.edges if e.dst in inside and e.src not in inside]


def test_module_output_edge_shapes(traced):
    """Every tensor leaving a module call's box has the shape of an output our hooks saw."""
    g = traced.graph
    bad = []
    for n, c in zip(zoo.module_nodes(g), traced.calls):
        shapes = {(t.shape, t.dtype) for t in c.outputs}
        for e in _out_edges(g, n.id):
            if g.nodes[e.dst].kind == "error":
                continue
            if (tuple(e.shape), e.dtype) not in shapes:
                bad.append((n.path, n.call, tuple(e.shape), e.dtype, sorted(shapes)))
    assert not bad, f"edges leaving a module call with a shape it did not return: {bad[:5]}"


def test_module_to_module_flow(traced):
    """When call N receives as its first input a tensor that call M returned (unchanged), the
    graph has an edge into N's box, from the box of a call that returned it (or from an op
    that passed it on), with its shape."""
    g = traced.graph
    mods = zoo.module_nodes(g)
    calls = traced.calls
    missing = []
    for j, cn in enumerate(calls):
        # rotary embeddings read only .dtype / .device of their first input: no data flows
        if not cn.inputs or "Rotary" in type(cn.module).__name__:
            continue
        first = cn.inputs[0]
        producers = [
            i
            for i, cm in enumerate(calls[:j])
            if 0 <= cm.finished
            and any(t.ident == first.ident and t.version == first.version for t in cm.outputs)
        ]
        if not producers:
            continue
        src_nodes = set().union(*(zoo.subtree(g, mods[i].id) for i in producers))
        # an op may hand the very same tensor on (F.dropout in eval mode returns its input)
        src_nodes |= {
            e.dst
            for e in g.edges
            if e.src in src_nodes and g.nodes[e.dst].kind == "op" and tuple(e.shape) == first.shape
        }
        edges = [e for e in _in_edges(g, mods[j].id) if e.src in src_nodes]
        if not any(tuple(e.shape) == first.shape and e.dtype == first.dtype for e in edges):
            missing.append((calls[producers[-1]].path, cn.path, cn.call, first.shape))
    assert not missing, (
        f"no edge for module-to-module data flow (from, to, call, shape): {missing[:5]}"
    )


def test_leaf_module_calls_connect(traced):
    """A module call with nothing inside (nn.Identity) has an edge in and an edge out."""
    g = traced.graph
    parents = {n.parent for n in g.nodes}
    for n, c in zip(zoo.module_nodes(g), traced.calls):
        if n.id in parents:
            continue
        ins = [e for e in g.edges if e.dst == n.id]
        outs = [e for e in g.edges if e.src == n.id]
        assert ins, f"leaf module call {n.path!r} has no input edge"
        assert {(tuple(e.shape), e.dtype) for e in ins} <= {(t.shape, t.dtype) for t in c.inputs}
        assert {(tuple(e.shape), e.dtype) for e in outs} <= {(t.shape, t.dtype) for t in c.outputs}


# -- inputs and outputs ------------------------------------------------------------------


def _named_inputs(model, args, kwargs):
    bound = inspect.signature(model.forward).bind(*args, **kwargs)
    out = []
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            for k, v in value.items():
                out += _nested_names(v, k)
        elif kind is inspect.Parameter.VAR_POSITIONAL:
            for i, v in enumerate(value):
                out += _nested_names(v, f"{name}[{i}]")
        else:
            out += _nested_names(value, name)
    return out


def _nested_names(v, name):
    if isinstance(v, torch.Tensor):
        return [(name, v)]
    if isinstance(v, dict):
        return [x for k, w in v.items() for x in _nested_names(w, f"{name}.{k}")]
    if isinstance(v, (tuple, list)):
        return [x for i, w in enumerate(v) for x in _nested_names(w, f"{name}[{i}]")]
    return []


def test_inputs(traced):
    g = traced.graph
    want = _named_inputs(traced.model, traced.args, traced.kwargs)
    got = [n for n in g.nodes if n.kind == "input"]
    assert [n.name for n in got] == [name for name, _ in want]
    for n, (name, t) in zip(got, want):
        outs = [e for e in g.edges if e.src == n.id]
        for e in outs:
            assert tuple(e.shape) == tuple(t.shape), name
            assert e.dtype == str(t.dtype).removeprefix("torch."), name


def test_nested_input_names():
    g = get_traced("nested_inputs").graph
    names = [n.name for n in g.nodes if n.kind == "input"]
    assert names == ["x", "pair[0]", "pair[1][0]", "batch.bias", "batch.ids", "scale"]
    # every input is read, so every input has an edge out
    for n in g.nodes:
        if n.kind == "input":
            assert any(e.src == n.id for e in g.edges), n.name


def test_outputs(traced):
    g = traced.graph
    want = zoo.named_outputs(traced.result)
    got = [n for n in g.nodes if n.kind == "output"]
    assert [n.name for n in got] == [name for name, _ in want]
    for n, (name, t) in zip(got, want):
        into = [e for e in g.edges if e.dst == n.id]
        assert len(into) == 1, f"output {name!r} has {len(into)} edges in"
        assert tuple(into[0].shape) == tuple(t.shape), name
        assert into[0].dtype == str(t.dtype).removeprefix("torch."), name


def test_output_names_by_kind():
    assert [n.name for n in get_traced("mlp").graph.nodes if n.kind == "output"] == ["output"]
    assert [n.name for n in get_traced("lstm_gru").graph.nodes if n.kind == "output"] == [
        "output[0]",
        "output[1]",
    ]
    assert [n.name for n in get_traced("module_dict").graph.nodes if n.kind == "output"] == [
        "cls",
        "reg",
    ]
    assert [n.name for n in get_traced("dataclass_out").graph.nodes if n.kind == "output"] == [
        "logits",
        "hidden",
    ]
    names = [n.name for n in get_traced("gpt2").graph.nodes if n.kind == "output"]
    assert names[0] == "last_hidden_state"
    names = [n.name for n in get_traced("nested_inputs").graph.nodes if n.kind == "output"]
    assert names == ["output[0]", "output[1][0]", "output[1][1]"]


def test_output_passthrough_of_input_edge():
    """`batch["ids"]` is returned untouched: its output edge comes from its input node."""
    g = get_traced("nested_inputs").graph
    ids_in = next(n for n in g.nodes if n.kind == "input" and n.name == "batch.ids")
    out = next(n for n in g.nodes if n.kind == "output" and n.name == "output[1][1]")
    assert [e.src for e in g.edges if e.dst == out.id] == [ids_in.id]


# -- specific models -----------------------------------------------------------------------


def _op(g, name, parent_path=None):
    ops = [n for n in g.nodes if n.kind == "op" and n.name == name]
    if parent_path is not None:
        ops = [n for n in ops if n.parent is not None and g.nodes[n.parent].path == parent_path]
    return ops


def test_mlp_op_parents():
    g = get_traced("mlp").graph
    root = g.module_call("", 0)
    fc1 = g.module_call("fc1", 0)
    [lin] = [n for n in g.nodes if n.kind == "op" and n.parent == fc1.id]
    assert lin.target == "torch.nn.functional.linear"
    [relu] = [n for n in g.nodes if n.kind == "op" and n.name == "relu"]
    assert relu.parent == root.id and relu.target == "torch.relu"
    # linear(fc1) -> relu -> linear(fc2) -> output
    fc2 = g.module_call("fc2", 0)
    [lin2] = [n for n in g.nodes if n.kind == "op" and n.parent == fc2.id]
    assert any(e.src == lin.id and e.dst == relu.id and e.shape == [2, 32] for e in g.edges)
    assert any(e.src == relu.id and e.dst == lin2.id and e.shape == [2, 32] for e in g.edges)


def test_gpt2_attention_ops_inside_attention():
    g = get_traced("gpt2").graph
    attn_ops = [
        n
        for n in g.nodes
        if n.kind == "op" and ("scaled_dot_product_attention" in n.target or n.name == "softmax")
    ]
    assert attn_ops, "no attention op recorded"
    for n in attn_ops:
        parent = g.nodes[n.parent]
        assert parent.kind == "module" and parent.name == "GPT2Attention", (n.target, parent.path)
        assert parent.path.endswith(".attn")


def test_identity_connects():
    g = get_traced("identity").graph
    ident = g.module_call("skip", 0)
    assert ident.name == "Identity" and not g.children(ident.id)
    pre_op = g.children(g.module_call("pre", 0).id)[0]
    post_op = g.children(g.module_call("post", 0).id)[0]
    assert [(e.src, e.shape) for e in g.edges if e.dst == ident.id] == [(pre_op.id, [2, 8])]
    assert [(e.dst, e.shape) for e in g.edges if e.src == ident.id] == [(post_op.id, [2, 8])]
    assert not any(e.src == pre_op.id and e.dst == post_op.id for e in g.edges)


def test_deep_nesting_depth():
    g = get_traced("deep_nesting").graph
    deepest = g.module_call("inner.inner.inner.inner.inner.inner.lin", 0)
    chain = zoo.ancestors(g, deepest.id)
    assert len(chain) == 7
    assert [g.nodes[a].path for a in chain][-1] == ""
    ident = g.module_call("inner.inner.inner.inner.inner.inner.inner", 0)
    assert ident.name == "Identity" and len(zoo.ancestors(g, ident.id)) == 7


def test_shared_module_calls():
    t = get_traced("shared_module")
    g = t.graph
    shared = [n for n in zoo.module_nodes(g) if n.path == "shared"]
    assert [n.call for n in shared] == [0, 1, 2]
    assert not [n for n in zoo.module_nodes(g) if n.path == "alias"]
    # chained: linear(call 0) -> tanh -> linear(call 1) -> linear(call 2)
    ops = [g.children(n.id)[0] for n in shared]
    tanh = _op(g, "tanh")[0]
    assert any(e.src == ops[0].id and e.dst == tanh.id for e in g.edges)
    assert any(e.src == tanh.id and e.dst == ops[1].id for e in g.edges)
    assert any(e.src == ops[1].id and e.dst == ops[2].id for e in g.edges)
    assert g.module_call("", 0).params == sum(p.numel() for p in t.model.parameters())


def test_t5_encoder_output_feeds_decoder_cross_attention():
    g = get_traced("t5").graph
    enc = zoo.subtree(g, g.module_call("encoder", 0).id)
    dec = zoo.subtree(g, g.module_call("decoder", 0).id)
    cross = [e for e in g.edges if e.src in enc and e.dst in dec]
    assert cross and all(e.shape == [1, 7, 32] for e in cross)
    # the decoder's two blocks both read the encoder states (cross-attention)
    for blk in ("decoder.block.0", "decoder.block.1"):
        inside = zoo.subtree(g, g.module_call(blk, 0).id)
        assert any(e.src in enc and e.dst in inside for e in cross), blk


def test_module_dict_paths():
    g = get_traced("module_dict").graph
    assert g.module_call("heads.cls", 0).attrs.get("out_features") == 3
    assert g.module_call("heads.reg", 0).attrs.get("out_features") == 1
    assert not [n for n in zoo.module_nodes(g) if n.path == "heads"], "ModuleDict is never called"


def test_inplace_and_view_edges():
    g = get_traced("inplace_view").graph
    [add_] = _op(g, "add_")
    [mul] = _op(g, "mul")
    [setitem] = [n for n in g.nodes if n.kind == "op" and n.target == "Tensor.__setitem__"]
    [sum_] = _op(g, "sum")
    [mul_] = _op(g, "mul_")
    [exp] = _op(g, "exp")
    [view] = _op(g, "view")

    def srcs(node):
        return [e.src for e in g.edges if e.dst == node.id]

    lin = g.children(g.module_call("lin", 0).id)[0]
    assert srcs(add_) == [lin.id]
    assert srcs(mul) == [add_.id], "reader after x.add_(1) gets its edge from add_"
    assert srcs(setitem) == [add_.id]
    assert srcs(sum_) == [setitem.id], "reader after x[0] = 0 gets its edge from the setitem"
    assert srcs(view) == [setitem.id]
    assert srcs(mul_) == [view.id]
    assert srcs(exp) == [mul_.id], "reader of the base after an in-place op on a view"


def test_parameter_used_directly_is_constant():
    g = get_traced("param_direct").graph
    consts = {n.target: n for n in g.nodes if n.kind == "constant"}
    assert set(consts) == {"gate", "offset"}
    root = g.module_call("", 0)
    assert consts["gate"].parent == root.id and consts["gate"].name == "gate"
    [mul] = _op(g, "mul")
    assert any(e.src == consts["gate"].id and e.dst == mul.id and e.shape == [8] for e in g.edges)


def test_linear_weights_never_constants(traced):
    linear_params = set()
    for path, m in traced.model.named_modules():
        if isinstance(m, (nn.Linear, nn.Conv2d, nn.LayerNorm, nn.BatchNorm2d)):
            for pname, _ in m.named_parameters(recurse=False):
                linear_params.add(f"{path}.{pname}" if path else pname)
    consts = [n.target for n in traced.graph.nodes if n.kind == "constant"]
    assert not linear_params.intersection(consts)


def test_running_torch_nn_layer_params_never_constants(traced):
    """No constant inside a torch.nn layer's call is one of that layer's own parameters or
    buffers (recursive, tied weights included): they are internals, counted in `params`."""
    g = traced.graph
    tensors = dict(traced.model.named_parameters(remove_duplicate=False))
    tensors.update(dict(traced.model.named_buffers(remove_duplicate=False)))
    modules = dict(traced.model.named_modules())
    bad = []
    for n in g.nodes:
        if n.kind != "constant" or n.target not in tensors or n.parent is None:
            continue
        layer_node = g.nodes[n.parent]
        layer = modules.get(layer_node.path)
        if layer is None or not type(layer).__module__.startswith("torch.nn."):
            continue
        own = {id(t) for t in layer.parameters()} | {id(t) for t in layer.buffers()}
        if id(tensors[n.target]) in own:
            bad.append((layer_node.path, n.target))
    assert not bad, f"parameters of the running torch.nn layer drawn as constants: {bad}"


def test_tied_embedding_weight_is_not_a_constant():
    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Embedding(10, 4)
            self.b = nn.Embedding(10, 4)
            self.b.weight = self.a.weight

        def forward(self, ids):
            return self.b(ids)

    g = torchscope.trace(Tied(), torch.tensor([[1, 2]]))
    assert not [n for n in g.nodes if n.kind == "constant"]


def test_a_weight_the_forward_binds_to_a_layer_is_not_a_constant():
    """The layers' own weights are taken before the forward; a weight the forward binds to
    a torch.nn layer before calling it is still the layer's own, not a constant."""

    spare = nn.Parameter(torch.ones(4, 4))  # made outside the forward: no factory node

    class Rebinds(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            self.fc.weight = spare
            return self.fc(x)

    model = Rebinds()
    g = torchscope.trace(model, torch.randn(1, 4))
    assert not [n for n in g.nodes if n.kind == "constant"]
    assert [n.name for n in g.nodes if n.kind == "op"] == ["linear"]
    assert model.fc.weight is not spare, "the trace put the layer's own weight back"


def test_factory_constant_has_callable_target():
    g = get_traced("lstm_gru").graph
    # nothing in the zoo's LSTM/GRU call makes constants from the user's side:
    # every constant is either a factory (target a callable) or a parameter path
    for n in g.nodes:
        if n.kind == "constant":
            assert n.target, n


def test_op_attrs_carry_non_tensor_arguments():
    g = get_traced("residual_cnn").graph
    [mean] = _op(g, "mean")
    assert mean.attrs.get("dim") == [2, 3]
    conv = g.module_call("stem", 0)
    assert conv.attrs.get("in_channels") == 3, conv.attrs


def test_a_torch_layer_s_unnamed_settings_are_named_after_its_arguments():
    """extra_repr prints a torch.nn layer's first arguments bare (`(32,), eps=1e-05`): the
    hover showed them as "0=(32,)". A user's class keeps its own text's pieces as written."""

    class Mine(nn.Module):
        def __init__(self, width: int = 4) -> None:
            super().__init__()
            self.width = width

        def extra_repr(self) -> str:
            return f"{self.width}, mode=x"

        def forward(self, x):
            return x * 2

    class Host(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm, self.conv, self.emb = (
                nn.LayerNorm(8),
                nn.Conv1d(8, 4, 1),
                nn.Embedding(10, 8),
            )
            self.fc, self.mine = nn.Linear(4, 3), Mine()

        def forward(self, x, ids):
            h = self.conv(self.norm(x).transpose(1, 2)).transpose(1, 2)
            return self.mine(self.fc(h)), self.emb(ids)

    g = torchscope.trace(Host(), torch.randn(1, 5, 8), torch.zeros(1, 2, dtype=torch.long))
    attrs = {n.path: n.attrs for n in g.nodes if n.kind == "module" and n.path}
    assert attrs["norm"]["normalized_shape"] == "(8,)" and "0" not in attrs["norm"], attrs["norm"]
    assert (attrs["conv"]["in_channels"], attrs["conv"]["out_channels"]) == (8, 4), attrs["conv"]
    assert (attrs["emb"]["num_embeddings"], attrs["emb"]["embedding_dim"]) == (10, 8)
    assert attrs["fc"] == {"in_features": 4, "out_features": 3, "bias": True}
    assert attrs["mine"] == {"0": 4, "mode": "x"}


# -- wire round trip -------------------------------------------------------------------------


def test_wire_round_trip(traced):
    g = traced.graph
    raw = g.to_msgpack()
    back = torchscope.Graph.from_wire(msgpack.unpackb(raw, raw=False))
    assert len(back.nodes) == len(g.nodes) and len(back.edges) == len(g.edges)
    assert back.to_wire()["nodes"] == g.to_wire()["nodes"]
    assert back.to_wire()["edges"] == g.to_wire()["edges"]
    assert back.to_wire()["groups"] == g.to_wire()["groups"]
    assert back.to_wire()["model"] == g.to_wire()["model"]
    for a, b in zip(g.nodes, back.nodes):
        assert (a.id, a.kind, a.name, a.parent, a.target, a.path, a.call, a.params) == (
            b.id,
            b.kind,
            b.name,
            b.parent,
            b.target,
            b.path,
            b.call,
            b.params,
        )
        assert (a.site is None) == (b.site is None)
        if a.site:
            assert (a.site.file, a.site.line, a.site.func) == (
                b.site.file,
                b.site.line,
                b.site.func,
            )
    wire = msgpack.unpackb(raw, raw=False)
    assert wire["format"] == "torchscope.graph" and wire["version"] == 1
    assert set(wire) >= {"format", "version", "model", "nodes", "edges", "groups", "error", "stats"}
    for n in wire["nodes"]:
        assert set(n) >= {
            "id",
            "kind",
            "name",
            "parent",
            "target",
            "path",
            "call",
            "site",
            "defn",
            "params",
            "attrs",
        }


# -- meta device ---------------------------------------------------------------------------------


def test_llama_on_meta_device():
    from transformers import LlamaModel

    with torch.device("meta"):
        model = LlamaModel(zoo.llama_config(hidden=256, layers=4)).eval()
    ids = torch.zeros(2, 16, dtype=torch.long, device="meta")
    g = torchscope.trace(model, ids)
    assert g.error is None
    assert g.model.device == "meta"
    calls, result, _keep = zoo.record_calls(model, (ids,), {})
    assert [(n.path, n.call, n.target) for n in zoo.module_nodes(g)] == [
        (c.path, c.call, c.qualname) for c in calls
    ]
    outs = [n for n in g.nodes if n.kind == "output"]
    assert outs[0].name == "last_hidden_state"
    [e] = [e for e in g.edges if e.dst == outs[0].id]
    assert e.shape == [2, 16, 256]
    layers = [n for n in zoo.module_nodes(g) if n.name == "LlamaDecoderLayer"]
    assert len(layers) == 4
    for n, c in zip(zoo.module_nodes(g), calls):
        shapes = {t.shape for t in c.outputs}
        for edge in _out_edges(g, n.id):
            assert tuple(edge.shape) in shapes, (n.path, edge.shape)


def _without_times(items: list[dict]) -> list[dict]:
    """Wall times differ between two runs; everything else must not."""
    return [{**d, "cost": {**d["cost"], "time_ns": 0}} if d.get("cost") else d for d in items]


@pytest.mark.parametrize("name", ["mlp", "gpt2"])
def test_trace_twice_gives_same_graph(name):
    model, args, kwargs = zoo.build(name)
    a, b = (torchscope.trace(model, *args, **kwargs).to_wire() for _ in range(2))
    assert _without_times(a["nodes"]) == _without_times(b["nodes"])
    assert a["edges"] == b["edges"]
    assert _without_times(a["groups"]) == _without_times(b["groups"])


def test_op_parents_are_the_innermost_running_module(traced):
    """Each op (in order) sits in the module call our own hooks saw running around it."""
    twin, args, kwargs = zoo.build(traced.name)
    want = zoo.record_ops(twin, args, kwargs)
    g = traced.graph
    call_index = {n.id: i for i, n in enumerate(zoo.module_nodes(g))}
    got = [(n.name, call_index[n.parent]) for n in g.nodes if n.kind == "op"]
    assert got == want


# -- smaller behaviours ------------------------------------------------------------------------


def test_op_attrs_of_calls_with_look_alike_arguments_stay_their_own():
    """Calls that pass equal plain arguments share one attrs map; values Python calls equal
    but that render differently (1, 1.0, True; 0.0 and -0.0) each keep their own."""

    class LookAlike(nn.Module):
        def forward(self, x):
            return [torch.mul(x, v) for v in (2, 2.0, 2, True, 1, 0.0, -0.0, 0.0, 2.0)]

    g = torchscope.trace(LookAlike(), torch.zeros(3))
    others = [n.attrs["other"] for n in g.nodes if n.name == "mul"]
    assert [(type(a).__name__, str(a)) for a in others] == [
        ("int", "2"),
        ("float", "2.0"),
        ("int", "2"),
        ("bool", "True"),
        ("int", "1"),
        ("float", "0.0"),
        ("float", "-0.0"),
        ("float", "0.0"),
        ("float", "2.0"),
    ]
    same = [n.attrs for n in g.nodes if n.name == "mul"]
    assert same[0] is same[2] and same[1] is same[8], "equal arguments share their attrs"


def test_module_attrs_from_extra_repr():
    g = get_traced("cnn_bn_eval").graph
    assert g.module_call("head", 0).attrs == {"in_features": 8, "out_features": 4, "bias": True}
    assert g.module_call("bn1", 0).attrs.get("momentum") == 0.5
    assert g.module_call("pool", 0).attrs == {"output_size": 1}


def test_op_attrs_by_parameter_name_for_torch_functions():
    """docs/graph-format.md: op attrs are non-tensor arguments *by parameter name*,
    e.g. {"stride": [2, 2]} — also for C builtins such as torch.conv2d."""
    g = get_traced("cnn_bn_eval").graph
    [op] = g.children(g.module_call("conv2", 0).id)
    assert op.name == "conv2d"
    assert op.attrs == {"stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "groups": 1}


def test_op_attrs_by_parameter_name_for_tensor_methods():
    g = get_traced("cnn_bn_eval").graph
    [flatten] = _op(g, "flatten")
    assert flatten.attrs == {"start_dim": 1}
    g = get_traced("inplace_view").graph
    [add_] = _op(g, "add_")
    assert add_.attrs == {"other": 1}


def test_op_attrs_for_python_functions():
    g = get_traced("gpt2").graph
    ln = next(n for n in g.nodes if n.kind == "op" and n.name == "layer_norm")
    assert ln.attrs.get("normalized_shape") == [32] and ln.attrs.get("eps") == 1e-05
    sdpa = next(n for n in g.nodes if n.kind == "op" and n.name == "scaled_dot_product_attention")
    assert sdpa.attrs.get("is_causal") is True


def test_same_tensor_returned_twice_gives_two_outputs():
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            h = self.lin(x)
            return h, {"again": h}

    g = torchscope.trace(Twice(), torch.randn(2, 3))
    outs = [n for n in g.nodes if n.kind == "output"]
    assert [n.name for n in outs] == ["output[0]", "output[1].again"]
    [lin_op] = g.children(g.module_call("lin", 0).id)
    for o in outs:
        assert [(e.src, e.shape) for e in g.edges if e.dst == o.id] == [(lin_op.id, [2, 3])]


def test_tensor_from_outside_the_model_is_a_constant():
    outside = torch.randn(3)

    class UsesGlobal(nn.Module):
        def forward(self, x):
            return x + outside

    g = torchscope.trace(UsesGlobal(), torch.randn(2, 3))
    consts = [n for n in g.nodes if n.kind == "constant"]
    assert len(consts) == 1
    [add] = _op(g, "add")
    assert any(e.src == consts[0].id and e.dst == add.id and e.shape == [3] for e in g.edges)
    assert consts[0].parent == g.module_call("", 0).id


def test_factory_call_is_a_constant_with_the_callable_as_target():
    class Factory(nn.Module):
        def forward(self, x):
            pos = torch.arange(x.shape[1])
            return x + pos

    g = torchscope.trace(Factory(), torch.zeros(2, 5))
    [c] = [n for n in g.nodes if n.kind == "constant"]
    assert "arange" in c.target and c.target.startswith("torch")
    [add] = _op(g, "add")
    assert any(
        e.src == c.id and e.dst == add.id and e.shape == [5] and e.dtype == "int64" for e in g.edges
    )


def test_out_keyword_write_is_the_producer():
    class Out(nn.Module):
        def forward(self, x):
            buf = torch.empty_like(x)
            torch.add(x, 1, out=buf)
            return buf.neg()

    g = torchscope.trace(Out(), torch.randn(4))
    adds = [n for n in g.nodes if n.name == "add"]
    [neg] = _op(g, "neg")
    assert [e.src for e in g.edges if e.dst == neg.id] == [adds[0].id]


def test_forward_runs_under_no_grad_by_default():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(torch.is_grad_enabled())
            return x * 2

    torchscope.trace(Probe(), torch.randn(2))
    torchscope.trace_call(Probe(), (torch.randn(2),), {}, no_grad=False)
    assert seen == [False, True]


def test_stats_and_edge_dtypes():
    t = get_traced("gpt2")
    wire = t.graph.to_wire()
    assert wire["stats"]["trace_ms"] > 0
    [ids] = [n for n in t.graph.nodes if n.kind == "input"]
    assert {e.dtype for e in t.graph.edges if e.src == ids.id} == {"int64"}


def test_no_threads_started_during_a_trace():
    import threading

    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append({t.ident for t in threading.enumerate()})
            return x + 1

    before = {t.ident for t in threading.enumerate()}
    torchscope.trace(Probe(), torch.randn(2))
    assert seen == [before]


def test_varargs_input_names():
    g = get_traced("varargs").graph
    assert [n.name for n in g.nodes if n.kind == "input"] == ["xs[0]", "xs[1]", "weight"]


def test_leaf_module_called_with_keyword_tensor():
    g = get_traced("decorated_kwargs").graph
    skip = g.module_call("skip", 0)
    [proj_op] = g.children(g.module_call("proj", 0).id)
    [norm_op] = g.children(g.module_call("norm", 0).id)
    assert [(e.src, e.shape) for e in g.edges if e.dst == skip.id] == [(proj_op.id, [2, 6])]
    assert [(e.dst, e.shape) for e in g.edges if e.src == skip.id] == [(norm_op.id, [2, 6])]
    [fill] = _op(g, "masked_fill")
    mask = next(n for n in g.nodes if n.kind == "input" and n.name == "mask")
    assert any(e.src == mask.id and e.dst == fill.id and e.dtype == "bool" for e in g.edges)


def test_bfloat16_model_dtypes():
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU()).to(torch.bfloat16)
    g = torchscope.trace(model, torch.randn(2, 4, dtype=torch.bfloat16))
    assert g.model.dtype == "bfloat16"
    assert {e.dtype for e in g.edges} == {"bfloat16"}


def test_save_and_load_both_formats(tmp_path):
    g = get_traced("t5").graph
    for suffix in (".msgpack", ".json"):
        path = g.save(tmp_path / f"t5{suffix}")
        back = torchscope.Graph.load(path)
        assert back.to_wire()["nodes"] == g.to_wire()["nodes"]
        assert back.to_wire()["edges"] == g.to_wire()["edges"]
        assert back.to_wire()["groups"] == g.to_wire()["groups"]


def test_caught_exceptions_leave_no_error():
    g = get_traced("caught_error").graph
    assert g.error is None
    assert not [n for n in g.nodes if n.kind == "error"]
    fragile = g.module_call("fragile", 0)
    backup = g.module_call("backup", 0)
    [out] = [n for n in g.nodes if n.kind == "output"]
    [mul] = _op(g, "mul")
    assert [e.src for e in g.edges if e.dst == out.id] == [mul.id]
    [b_op] = g.children(backup.id)
    assert any(e.src == b_op.id and e.dst == mul.id for e in g.edges)
    assert fragile.id < backup.id


def test_model_without_parameters_and_non_tensor_output():
    class Plain(nn.Module):
        def forward(self, x):
            return float(x.sum())

    g = torchscope.trace(Plain(), torch.ones(3))
    assert g.model.params == 0 and g.model.device == "" and g.model.dtype == ""
    assert not [n for n in g.nodes if n.kind == "output"]
    assert g.error is None


def test_llama_70b_width_on_meta_device():
    """Llama-3-70B widths (hidden 8192, intermediate 28672, vocab 128256), 2 layers: no memory."""
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(
        vocab_size=128256,
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=2,
        num_attention_heads=64,
        num_key_value_heads=8,
        max_position_embeddings=8192,
    )
    with torch.device("meta"):
        model = LlamaModel(cfg).eval()
    ids = torch.zeros(1, 32, dtype=torch.long, device="meta")
    g = torchscope.trace(model, ids)
    assert g.error is None and g.model.device == "meta"
    assert g.model.params == sum(p.numel() for p in model.parameters())
    out = next(n for n in g.nodes if n.kind == "output")
    assert [e.shape for e in g.edges if e.dst == out.id] == [[1, 32, 8192]]
    mlp = g.module_call("layers.0.mlp.gate_proj", 0)
    [op] = g.children(mlp.id)
    assert [e.shape for e in g.edges if e.src == op.id][0] == [1, 32, 28672]


def test_user_hooks_run_inside_the_module_call():
    """Ops run by a user's forward pre-hook and forward hook are part of the module call (torch
    runs both inside `Module.__call__`): the box's output edge carries what the call returned."""
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
    model[0].register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    model[0].register_forward_hook(lambda mod, args, out: out[..., :3] * 2)
    g = torchscope.trace(model, torch.randn(2, 4))
    lin = g.module_call("0", 0)
    inside = zoo.subtree(g, lin.id)
    names = [g.nodes[i].name for i in sorted(inside) if g.nodes[i].kind == "op"]
    assert names == ["add", "linear", "getitem", "mul"]
    leaving = [e.shape for e in g.edges if e.src in inside and e.dst not in inside]
    assert leaving == [[2, 3]], "the Linear call returned (2, 3) after its hook"


def _strict_json(text):
    import json

    def reject(const):
        raise ValueError(f"not JSON: {const}")

    return json.loads(text, parse_constant=reject)


def test_json_round_trip(traced):
    g = traced.graph
    back = torchscope.Graph.from_wire(_strict_json(g.to_json()))
    assert back.to_wire()["nodes"] == g.to_wire()["nodes"]
    assert back.to_wire()["edges"] == g.to_wire()["edges"]


def test_json_is_strict_with_infinite_and_nan_attrs():
    """`--format json` must be JSON a browser can JSON.parse: attention masks use -inf."""

    class Masked(nn.Module):
        def forward(self, x):
            h = x.masked_fill(x > 0, float("-inf"))
            return h.clamp(max=float("nan"))

    g = torchscope.trace(Masked(), torch.randn(3))
    wire = _strict_json(g.to_json())
    assert len(wire["nodes"]) == len(g.nodes)


def test_custom_ops_sparse_and_complex_tensors():
    """torch.library custom ops, aten overloads, sparse and complex tensors trace with shapes."""

    @torch.library.custom_op("torchscope_tests::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    class Exotic(nn.Module):
        def forward(self, x):
            h = torch.ops.torchscope_tests.twice(x)
            h = torch.ops.aten.relu.default(h)
            s = h.to_sparse()
            c = torch.complex(h, h)
            return s.to_dense() + c.real

    g = torchscope.trace(Exotic(), torch.randn(3))
    assert g.error is None
    names = [n.name for n in g.nodes if n.kind == "op"]
    assert names == ["twice", "relu", "to_sparse", "complex", "to_dense", "real", "add"]
    assert "complex64" in {e.dtype for e in g.edges}
    assert all(e.shape == [3] for e in g.edges)


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_module_tree_is_named_modules(name):
    """The tracer's one walk gives exactly named_modules' list (same order, shared modules
    once, at their first path) and the deepest nesting."""
    from torchscope.tracer import module_tree

    model, _, _ = zoo.build(name)
    named, depth = module_tree(model)
    want = list(model.named_modules())
    assert [p for p, _ in named] == [p for p, _ in want]
    assert all(a is b for (_, a), (_, b) in zip(named, want))
    assert depth == max(p.count(".") + 1 if p else 0 for p, _ in want)


def _tied_and_shared() -> nn.Module:
    """A weight tied between two layers and a module registered under two parents, the
    second parent met first when children are counted before parents."""
    shared = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    model = nn.ModuleDict(
        {
            "emb": nn.Embedding(5, 3),
            "a": nn.Sequential(nn.Identity(), shared),
            "b": nn.Sequential(shared, nn.Linear(3, 4)),
            "head": nn.Linear(3, 5, bias=False),
        }
    )
    model["head"].weight = model["emb"].weight
    return model


@pytest.mark.parametrize("name", ["mlp", "tied_and_shared"])
def test_parameter_counts_count_each_parameter_once_per_subtree(name):
    from torchscope.tracer import module_tree, parameter_counts
    from torchscope.values import count_parameters

    model = _tied_and_shared() if name == "tied_and_shared" else zoo.build(name)[0]
    modules = [m for _, m in module_tree(model)[0]]
    counts = parameter_counts(model, modules)
    assert counts == {id(m): count_parameters(m) for m in modules}
    if name == "tied_and_shared":
        assert counts[id(model)] == 5 * 3 + (2 * 3 + 3) + (3 * 4 + 4)


def test_module_tree_of_a_shared_subtree_and_a_deep_chain():
    from torchscope.tracer import module_tree

    shared = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    model = nn.ModuleDict({"a": shared, "b": nn.Sequential(shared, nn.Identity()), "c": shared})
    named, depth = module_tree(model)
    assert [p for p, _ in named] == [p for p, _ in model.named_modules()]
    assert depth == 2
    deep = nn.Identity()
    for _ in range(5000):  # deeper than named_modules' recursion can go at the default limit
        deep = nn.Sequential(deep)
    named, depth = module_tree(deep)
    assert len(named) == 5001 and depth == 5000
