"""A trace leaves no trace: parameters, buffers, flags, RNG, hooks, modes and grad mode as before,
whether the forward returned or raised."""

from __future__ import annotations

import gc
from typing import NamedTuple

import pytest
import torch
import zoo
from torch import nn

import torchscope

_mod = torch.nn.modules.module


class Snapshot:
    def __init__(self, model: nn.Module, args, kwargs) -> None:
        self.state = {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items()}
        self.training = {p: m.training for p, m in model.named_modules()}
        self.requires_grad = {k: p.requires_grad for k, p in model.named_parameters()}
        self.dicts = {p: set(vars(m)) for p, m in model.named_modules()}
        self.module_hooks = {
            p: (len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks))
            for p, m in model.named_modules()
        }
        self.rng = torch.get_rng_state()
        self.global_hooks = self._global_hooks()
        self.grad = torch.is_grad_enabled()
        self.inputs = [t.clone() for t in zoo.flat_tensors((args, kwargs))]
        self.gc = gc.isenabled()

    @staticmethod
    def _global_hooks():
        return (
            len(_mod._global_forward_hooks),
            len(_mod._global_forward_pre_hooks),
            len(getattr(_mod, "_global_forward_hooks_always_called", {})),
            len(_mod._global_backward_hooks),
        )

    def check(self, model: nn.Module, args, kwargs) -> None:
        now = model.state_dict(keep_vars=True)
        assert set(now) == set(self.state)
        changed = [k for k, v in now.items() if not torch.equal(v.detach(), self.state[k])]
        assert not changed, f"parameters/buffers changed by the trace: {changed}"
        assert {p: m.training for p, m in model.named_modules()} == self.training
        assert {k: p.requires_grad for k, p in model.named_parameters()} == self.requires_grad
        added = {p: set(vars(m)) - self.dicts[p] for p, m in model.named_modules()}
        assert not any(added.values()), f"attributes left on modules: {added}"
        assert {
            p: (len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks))
            for p, m in model.named_modules()
        } == self.module_hooks
        assert torch.equal(torch.get_rng_state(), self.rng), "RNG state changed"
        assert self._global_hooks() == self.global_hooks, "global module hooks left behind"
        assert not torch._C._is_torch_function_mode_enabled(), "a TorchFunctionMode is still active"
        assert not torch.overrides._get_current_function_mode_stack()
        assert torch.is_grad_enabled() == self.grad, "grad mode changed"
        for a, b in zip(zoo.flat_tensors((args, kwargs)), self.inputs):
            assert torch.equal(a, b), "an input tensor was changed"
        assert gc.isenabled() == self.gc, "garbage collection left disabled"


def _trace(model, args, kwargs):
    """Trace; for the error models, expect the original exception."""
    return torchscope.trace(model, *args, **kwargs)


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_no_side_effects(name):
    model, args, kwargs = zoo.build(name)
    snap = Snapshot(model, args, kwargs)
    if name in zoo.ERRORS:
        with pytest.raises(zoo.ERRORS[name]):
            _trace(model, args, kwargs)
    else:
        _trace(model, args, kwargs)
    snap.check(model, args, kwargs)


@pytest.mark.parametrize("name", ["cnn_bn_train", "error_raise", "sets_attribute"])
@pytest.mark.parametrize("grad", [True, False])
def test_no_side_effects_under_either_grad_mode(name, grad):
    model, args, kwargs = zoo.build(name)
    with torch.set_grad_enabled(grad):
        snap = Snapshot(model, args, kwargs)
        torchscope.trace_call(model, args, kwargs, raise_errors=False)
        snap.check(model, args, kwargs)


@pytest.mark.parametrize("name", ["cnn_bn_train", "error_raise"])
def test_batchnorm_train_really_updates_stats_without_torchscope(name):
    """The side-effect test above is meaningful: a plain forward does move the running stats."""
    model, args, kwargs = zoo.build(name)
    before = {
        k: v.clone() for k, v in model.state_dict().items() if "running" in k or "num_batches" in k
    }
    assert before
    with torch.no_grad():
        try:
            model(*args, **kwargs)
        except ValueError:
            pass
    after = model.state_dict()
    assert any(not torch.equal(after[k], v) for k, v in before.items())


def test_global_hook_registries_do_not_grow():
    """torch's RemovableHandle for a global forward hook registered with_kwargs=True does not
    remove its `_global_forward_hooks_with_kwargs` entry; the tracer must not leak one per trace."""
    model, args, kwargs = zoo.build("mlp")
    registries = [n for n in vars(_mod) if n.startswith("_global_") and n.endswith("hooks")]
    registries += [n for n in vars(_mod) if n.startswith("_global_forward_hooks_")]
    before = {n: len(getattr(_mod, n)) for n in registries}
    for _ in range(3):
        torchscope.trace(model, *args, **kwargs)
    with pytest.raises(ValueError):
        torchscope.trace(*zoo.build("error_raise")[:1], *zoo.build("error_raise")[1])
    after = {n: len(getattr(_mod, n)) for n in registries}
    assert after == before


def test_attribute_set_in_forward_is_undone():
    model, args, kwargs = zoo.build("sets_attribute")
    torchscope.trace(model, *args, **kwargs)
    assert not hasattr(model, "cache")
    assert "cache" not in vars(model)
    assert model.counter == 0


def test_attribute_set_before_a_raise_is_undone():
    model, args, kwargs = zoo.build("error_raise")
    with pytest.raises(ValueError):
        torchscope.trace(model, *args, **kwargs)
    assert not hasattr(model, "partial")


class _Unreadable:
    """A table whose every read raises."""

    def __len__(self) -> int:
        raise RuntimeError("unreadable")


class _SpoilsItsTable(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(2, 2)
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x):
        self.inner.training = True
        self.inner.bias = nn.Parameter(torch.ones(2))
        vars(self)["_buffers"] = _Unreadable()  # the root's tables are checked first
        return x * 2


def test_a_table_the_forward_replaced_is_put_back_without_reading_it():
    """The module's own attribute dict comes back first, so the table the forward put in
    its place (one that raises when read) is dropped unread and the rest is restored."""
    model = _SpoilsItsTable().eval()
    bias, buffers, steps = model.inner.bias, model._buffers, model.steps
    g = torchscope.trace(model, torch.randn(1, 2))
    assert g.error is None
    assert model._buffers is buffers and model._buffers == {"steps": steps}
    assert model.inner.bias is bias and not model.inner.training
    assert not any("unreadable" in w for w in g.warnings)


class _FillsThenReplacesItsTable(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x):
        self._buffers["extra"] = torch.ones(1)  # into the module's own table
        vars(self)["_buffers"] = {}  # then another table in its place
        return x * 2


def test_a_table_filled_then_replaced_comes_back_as_it_was():
    model = _FillsThenReplacesItsTable()
    buffers, steps = model._buffers, model.steps
    torchscope.trace(model, torch.randn(1, 2))
    assert model._buffers is buffers and model._buffers == {"steps": steps}


class _FlakyTable(dict):
    """A parameter table whose lookups raise once `broken` is set."""

    broken = False

    def get(self, key, default=None):
        if self.broken:
            raise RuntimeError("unreadable")
        return super().get(key, default)


class _BreaksItsTable(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(2, 2)
        self.scale = nn.Parameter(torch.ones(2))
        vars(self)["_parameters"] = _FlakyTable(self._parameters)

    def forward(self, x):
        self.inner.training = True
        self.inner.bias = nn.Parameter(torch.ones(2))
        self._parameters.broken = True  # the root's table is checked before the layer's
        return x * self.scale


def test_a_table_that_cannot_be_read_back_stops_no_other_restore():
    model = _BreaksItsTable().eval()
    bias = model.inner.bias
    g = torchscope.trace(model, torch.randn(1, 2))
    assert g.error is None
    assert model.inner.bias is bias and not model.inner.training
    assert any("_BreaksItsTable" in w and "unreadable" in w for w in g.warnings)


def test_train_mode_outputs_identical_after_trace():
    """After the trace, the BatchNorm-train model behaves exactly like an untraced twin."""
    model, args, kwargs = zoo.build("cnn_bn_train")
    twin, _, _ = zoo.build("cnn_bn_train")
    torchscope.trace(model, *args, **kwargs)
    with torch.no_grad():
        model.eval()
        twin.eval()
        assert torch.equal(model(*args), twin(*args))


def test_rng_consumed_by_dropout_is_restored():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    x = torch.randn(3, 4)
    torch.manual_seed(123)
    expected_next = torch.rand(5)
    torch.manual_seed(123)
    torchscope.trace(model, x)
    assert torch.equal(torch.rand(5), expected_next)


def test_parameter_written_in_place_is_restored():
    class Writer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))

        def forward(self, x):
            self.w.add_(1)
            return x * self.w

    model = Writer()
    x = torch.randn(3)
    snap = Snapshot(model, (x,), {})
    g = torchscope.trace(model, x)
    snap.check(model, (x,), {})
    assert any(n.kind == "op" and n.name == "add_" for n in g.nodes)


def test_training_flag_flipped_inside_forward_is_restored():
    class Flipper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(0.1)
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            self.drop.eval()
            self.lin.train(False)
            return self.drop(self.lin(x))

    model = Flipper().train()
    x = torch.randn(2, 3)
    snap = Snapshot(model, (x,), {})
    torchscope.trace(model, x)
    snap.check(model, (x,), {})
    assert model.drop.training and model.lin.training


def test_cancelled_trace_restores_state():
    class BNMany(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bn = nn.BatchNorm1d(4, momentum=0.9)

        def forward(self, x):
            h = self.bn(x)
            for _ in range(200):
                h = h + 1
            return h

    model = BNMany().train()
    x = torch.randn(5, 4)
    snap = Snapshot(model, (x,), {})
    with pytest.raises(torchscope.TraceCancelled):
        torchscope.trace_call(model, (x,), {}, cancel=lambda: True)
    snap.check(model, (x,), {})


def test_forward_that_reseeds_the_rng_is_undone():
    class Reseeds(nn.Module):
        def forward(self, x):
            torch.manual_seed(5)
            return x + torch.rand(x.shape)

    torch.manual_seed(7)
    expected = torch.rand(4)
    torch.manual_seed(7)
    torchscope.trace(Reseeds(), torch.zeros(3))
    assert torch.equal(torch.rand(4), expected)


# -- values and costs (statistics, FLOPs, times) change nothing either ---------------------


@pytest.mark.parametrize("name", ["cnn_bn_train", "gpt2", "mixtral", "inplace_view", "lstm_gru"])
def test_values_and_costs_leave_no_trace(name):
    """With statistics and costs on: parameters, buffers, RNG, flags as before, and the
    forward inside the trace computed what a plain forward of an identical twin computes."""
    model, args, kwargs = zoo.build(name)
    snap = Snapshot(model, args, kwargs)
    graph = torchscope.trace(model, *args, values=True, costs=True, **kwargs)
    snap.check(model, args, kwargs)
    assert graph.values.stats and graph.values.costs
    twin, targs, tkwargs = zoo.build(name)
    with torch.no_grad():
        result = twin(*targs, **tkwargs)
    outputs = [n for n in graph.nodes if n.kind == "output"]
    want = zoo.named_outputs(result)
    assert [n.name for n in outputs] == [k for k, _ in want]
    for node, (_, t) in zip(outputs, want):
        [edge] = [e for e in graph.edges if e.dst == node.id]
        if t.is_floating_point() and t.numel():
            assert edge.stats["min"] == t.min().item() and edge.stats["max"] == t.max().item()
            assert edge.stats["mean"] == pytest.approx(t.double().mean().item(), rel=1e-5, abs=1e-6)


def test_statistics_are_invisible_to_the_users_own_modes():
    """A dispatch mode of the user's, around the trace, sees the model's aten ops and
    nothing of torchscope's reading of the values."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    model, args, kwargs = zoo.build("gpt2")
    seen = []
    for on in (False, True):
        mode = Seen()
        with mode:
            torchscope.trace(model, *args, values=on, costs=on, **kwargs)
        seen.append(mode.ops)
    assert seen[0] == seen[1] and seen[0]


def test_activations_are_not_kept_alive():
    """Statistics are numbers: no tensor the forward made outlives the trace."""
    import weakref

    made: list[weakref.ref] = []

    class Wide(nn.Module):
        def forward(self, x):
            for _ in range(4):
                x = torch.tanh(x @ x.T)
                made.append(weakref.ref(x))
            return x.sum()

    graph = torchscope.trace(Wide(), torch.randn(300, 300))
    assert len(made) == 4 and all(e.stats is not None for e in graph.edges)
    gc.collect()
    assert all(r() is None for r in made), "an activation is still referenced"


# -- the forward's arguments: a paused program goes on with them after the trace ------------


class _WritesItsInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, scratch):
        x.add_(1)  # in place, on the caller's tensor
        x[0] = 0
        scratch[:, 1] = self.fc(x)[:, 0]  # a buffer the caller passed, written through a view
        return x * 2


def test_an_input_written_in_place_gets_its_values_back():
    x, scratch = torch.randn(2, 4), torch.zeros(2, 3)
    x_before, scratch_before = x.clone(), scratch.clone()
    g = torchscope.trace(_WritesItsInput(), x, scratch)
    assert g.error is None
    assert torch.equal(x, x_before) and torch.equal(scratch, scratch_before)
    with torch.no_grad():
        _WritesItsInput()(x, scratch)
    assert not torch.equal(x, x_before)  # (the test means something: a forward does write)


_INPUT_WRITES = {
    # (QA: a write asked for by `inplace=True` was not undone; `unsqueeze_` left the
    # caller's tensor 1×2×4; `requires_grad_()` stayed; `nn.init.constant_` writes through
    # the keyword `tensor=`)
    "F.relu(inplace=True)": lambda x: torch.nn.functional.relu(x, inplace=True),
    "F.dropout(…, inplace=True)": lambda x: torch.nn.functional.dropout(x, 0.5, True, True),
    "nn.ReLU(inplace=True)": lambda x: nn.ReLU(inplace=True)(x),
    "nn.LeakyReLU(…, True)": lambda x: nn.LeakyReLU(0.1, True)(x),
    "unsqueeze_": lambda x: x.unsqueeze_(0),
    "transpose_": lambda x: x.transpose_(0, 1),
    "requires_grad_": lambda x: x.requires_grad_(),
    "init.constant_": lambda x: nn.init.constant_(x, 7.0),
    # (torch hands `set_` to no function mode: seen only afterwards, by its memory)
    "set_": lambda x: x.set_(torch.zeros(8)),
    "set_ of its own memory": lambda x: x.set_(x.untyped_storage(), 4, (1, 4), (4, 1)),
    # (review: a view taken before `set_` still writes the argument's own memory: the copy
    # kept was of the memory it saw then, and it stayed pointed there)
    "set_, then a write through a view from before": lambda x: _set_then_write(x, x.view(-1)),
}


def _set_then_write(x, view):
    x.set_(torch.zeros(8))
    return view.add_(1)


class _WritesItsInputHow(nn.Module):
    def __init__(self, how) -> None:
        super().__init__()
        self.how = how
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        y = self.how(x)
        return self.fc(x if y is None else y.reshape(-1, 4))


@pytest.mark.parametrize("how", list(_INPUT_WRITES))
def test_an_input_written_any_way_is_given_back_as_it_was(how):
    x = torch.randn(2, 4)
    view = x[1]
    before, geometry = x.clone(), (x.shape, x.stride(), x.storage_offset())
    g = torchscope.trace(_WritesItsInputHow(_INPUT_WRITES[how]), x)
    assert g.error is None, g.error
    assert (x.shape, x.stride(), x.storage_offset()) == geometry, how
    assert torch.equal(x, before) and not x.requires_grad, how
    assert view.data_ptr() == x[1].data_ptr(), "the caller's views still see its memory"
    assert g.warnings == []
    with torch.no_grad():
        _INPUT_WRITES[how](x)
    assert (x.shape, x.stride()) != geometry[:2] or not torch.equal(x, before) or x.requires_grad


class _TakesTheWeightsMemory(nn.Module):
    def __init__(self, rows: int, columns: int) -> None:
        super().__init__()
        self.fc = nn.Linear(columns, rows)

    def forward(self, x):
        x.data = self.fc.weight.data  # the argument now sees the weight's memory
        return x.sum()


@pytest.mark.parametrize("weight", [(4, 8), (2, 3)])
def test_an_argument_pointed_at_a_weights_memory_gets_its_own_back_and_the_weight_is_kept(
    weight,
):
    # (review: its values were put back through the memory it then had, the weight's: the
    # weight came out full of the argument's values, the argument sharing its memory)
    model = _TakesTheWeightsMemory(*weight)
    w = model.fc.weight.detach().clone()
    x = torch.full((2, 3), 7.0)
    own, view = x.untyped_storage().data_ptr(), x[0]
    g = torchscope.trace(model, x)
    assert torch.equal(model.fc.weight, w)
    assert x.untyped_storage().data_ptr() == own and torch.equal(x, torch.full((2, 3), 7.0))
    assert view.data_ptr() == x[0].data_ptr()
    assert g.warnings == []


class _Padded(nn.Module):
    def forward(self, nt):
        return torch.nested.to_padded_tensor(nt, 0.0).sum(1)


def test_a_nested_tensor_argument_is_traced():
    # (review: its geometry, kept to undo `set_`, was read from `.shape`, which a nested
    # tensor refuses: the trace raised before the forward)
    nt = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    g = torchscope.trace(_Padded(), nt)
    assert g.error is None and any(n.name == "nested_to_padded_tensor" for n in g.nodes)


class _CastsItsArgument(nn.Module):
    def forward(self, x):
        x.data = x.data.half()
        return x.float().sum()


def test_an_argument_cast_in_place_gets_its_own_memory_and_values_back():
    # (review: its memory was seen again as float16 and the saved values copied in as
    # such: a view the caller held read [2.0037, 513.03, 3, 4])
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    view = x[:]
    g = torchscope.trace(_CastsItsArgument(), x)
    assert g.error is None
    assert x.dtype == torch.float32 and torch.equal(x, torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert torch.equal(view, x) and view.data_ptr() == x.data_ptr()


def test_an_argument_pointed_elsewhere_keeps_its_version_for_a_pending_backward():
    # (review: after `x.set_(…)` was undone its version stayed bumped, and the backward
    # pending over x failed "modified by an inplace operation")
    w = torch.ones(3, requires_grad=True)
    x = torch.full((3,), 2.0)
    loss = (w * x).sum()  # saves x for w's gradient

    class PointsElsewhere(nn.Module):
        def forward(self, t):
            t.set_(torch.zeros(3))
            return t.sum()

    g = torchscope.trace(PointsElsewhere(), x)
    assert g.error is None and torch.equal(x, torch.full((3,), 2.0))
    loss.backward()
    assert torch.equal(w.grad, torch.full((3,), 2.0))


class _Cache:
    """A KV cache of the kind generation loops pass in: tensors rebound and lists appended."""

    def __init__(self) -> None:
        self.layers = [_Layer()]
        self.seen = 0
        self.log: list[int] = []


class _Layer:
    def __init__(self) -> None:
        self.keys = torch.zeros(1, 0, 4)


class _Pair(NamedTuple):
    a: torch.Tensor
    b: list


class _UsesTheCache(nn.Module):
    def forward(self, x, cache, steps, pair):
        pair.a.mul_(0)
        pair.b.append(1)
        layer = cache.layers[0]
        layer.keys = torch.cat([layer.keys, x[:, None]], dim=1)
        cache.seen += 1
        cache.log.append(cache.seen)
        cache.layers.append(_Layer())
        steps["n"] = steps.get("n", 0) + 1
        return layer.keys.sum(1)


def test_objects_among_the_inputs_get_their_attributes_and_contents_back():
    cache, steps, pair = _Cache(), {"n": 3}, _Pair(torch.ones(2), [])
    layers, first, keys = cache.layers, cache.layers[0], cache.layers[0].keys
    g = torchscope.trace(_UsesTheCache(), torch.randn(1, 4), cache, steps, pair)
    assert g.error is None
    assert cache.layers is layers and cache.layers == [first] and first.keys is keys
    assert (cache.seen, cache.log, steps) == (0, [], {"n": 3})
    assert torch.equal(pair.a, torch.ones(2)) and pair.b == []


def test_inputs_are_given_back_when_the_forward_raises():
    class Fails(nn.Module):
        def forward(self, x, cache):
            x.mul_(0)
            cache.seen = 99
            raise ValueError("late")

    x, cache = torch.ones(3), _Cache()
    with pytest.raises(ValueError):
        torchscope.trace(Fails(), x, cache)
    assert torch.equal(x, torch.ones(3)) and cache.seen == 0


def test_a_transformers_kv_cache_keeps_its_length():
    # paused in a generation loop, tracing the next step must not grow the program's cache
    from transformers import GPT2Config, GPT2Model

    model = GPT2Model(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100)).eval()
    with torch.no_grad():
        cache = model(torch.randint(0, 100, (1, 5)), use_cache=True).past_key_values
    keys = [layer.keys for layer in cache.layers]
    step = torch.randint(0, 100, (1, 1))
    g = torchscope.trace(model, step, past_key_values=cache, use_cache=True)
    assert g.error is None and cache.get_seq_length() == 5
    assert all(a is b for a, b in zip([layer.keys for layer in cache.layers], keys, strict=True))
    with torch.no_grad():
        model(step, past_key_values=cache, use_cache=True)
    assert cache.get_seq_length() == 6  # (a plain forward does grow it)


def test_an_input_given_other_memory_gets_its_own_back():
    class Rebinds(nn.Module):
        def forward(self, x):
            x.data = torch.zeros(5)
            return x + 1

    x = torch.randn(2, 4)
    before = x.clone()
    g = torchscope.trace(Rebinds(), x)
    assert g.error is None
    assert x.shape == (2, 4) and torch.equal(x, before)


class _LazyModel(nn.Module):
    """Lazy layers (their parameters and buffers made by the first forward) beside the
    parametrized kinds that write their weight as they run."""

    def __init__(self) -> None:
        super().__init__()
        self.lazy = nn.LazyLinear(8)
        self.spectral = nn.utils.spectral_norm(nn.Linear(8, 8))
        self.norm = nn.utils.parametrizations.weight_norm(nn.Linear(8, 4))
        self.bn = nn.LazyBatchNorm1d()

    def forward(self, x):
        return self.bn(self.norm(self.spectral(self.lazy(x))))


def test_lazy_modules_are_traced_and_stay_lazy():
    """A model whose lazy layers were never run: the graph has their shapes and parameter
    counts, and the model is left as lazy as it was (its first own forward still sizes it)."""
    model = _LazyModel()
    x = torch.randn(3, 5)
    graph = torchscope.trace(model, x)
    modules = {n.path: n for n in graph.nodes if n.kind == "module"}
    assert modules["lazy"].params == 5 * 8 + 8  # counted once the forward sized it
    assert modules["bn"].params == 4 + 4
    assert graph.model.params == sum(n.params for p, n in modules.items() if p and "." not in p)
    assert modules["lazy"].attrs["in_features"] == 5  # as sized, not LazyLinear's 0
    linear = next(n for n in graph.nodes if n.name == "linear" and n.parent == modules["lazy"].id)
    assert [3, 5] in [e.shape for e in graph.edges if e.dst == linear.id]
    assert type(model.lazy) is nn.LazyLinear
    assert type(model.bn) is nn.LazyBatchNorm1d
    assert isinstance(model.lazy.weight, nn.parameter.UninitializedParameter)
    assert isinstance(model.bn.running_mean, nn.parameter.UninitializedBuffer)
    assert model.lazy.has_uninitialized_params()
    model(x)  # the user's own first forward sizes it, as if torchscope had never run
    assert type(model.lazy) is nn.Linear and model.lazy.weight.shape == (8, 5)
    assert model.bn.running_mean.shape == (4,)


def test_a_sized_lazy_model_is_left_sized():
    model = _LazyModel()
    x = torch.randn(3, 5)
    model(x)
    snap = Snapshot(model, (x,), {})
    torchscope.trace(model, x)
    snap.check(model, (x,), {})


class BnNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return self.bn(self.fc(x)) * self.scale


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_a_backward_pending_when_the_trace_ran_still_runs(training):
    """Paused between a forward and its backward (a training loop, a breakpoint on
    `loss.backward()`): the trace put the BatchNorm buffers back with `copy_`, which bumped
    their versions, and the program's own backward failed ("modified by an inplace
    operation"). Their values and versions are as they were now; and the same gradients."""
    torch.manual_seed(0)
    model = BnNet().train(training)
    x = torch.randn(8, 4)
    twin = BnNet().train(training)
    twin.load_state_dict(model.state_dict())
    loss = model(x).pow(2).sum()
    twin(x).pow(2).sum().backward()
    versions = {k: b._version for k, b in model.named_buffers()}
    torchscope.trace(model, x)
    assert {k: b._version for k, b in model.named_buffers()} == versions
    loss.backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert torch.equal(p.grad, q.grad), name
    for (name, b), c in zip(model.named_buffers(), twin.buffers()):
        assert torch.equal(b, c), name
