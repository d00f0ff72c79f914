"""The tensors among a call's arguments and the key of its plain ones (tracer._tensors_in,
tracer._plain_key): scalars are passed over by their exact type, anything else is looked
into as before."""

from __future__ import annotations

import torch
from torch import nn

import torchscope
from torchscope.tracer import _is_plain, _plain_key, _tensors_in


class Sub(torch.Tensor):
    pass


def test_tensors_are_found_among_scalars_and_in_nested_arguments() -> None:
    x, y, z = torch.ones(2), torch.zeros(2), torch.ones(3)
    p = nn.Parameter(torch.ones(2))
    s = torch.ones(2).as_subclass(Sub)
    args = (x, (64,), p, None, 1e-5, True, "mean", torch.float16, torch.device("cpu"), [y, [z]])
    assert [id(t) for t in _tensors_in(args, None)] == [id(x), id(p), id(y), id(z)]
    assert [id(t) for t in _tensors_in((s, (s, 2)), {"w": p, "eps": 0.1, "l": [x]})] == [
        id(s),
        id(s),
        id(p),
        id(x),
    ]
    assert _tensors_in((1, 2.0, "a", None), {"dtype": torch.int8}) == []
    assert [id(t) for t in _tensors_in(({"a": x, "b": 3},), None)] == [id(x)]


def test_a_one_int_shape_is_plain_and_keys_keep_each_value_s_type() -> None:
    assert _is_plain((64,))
    assert _is_plain((2, 3))
    assert _is_plain(())
    assert not _is_plain((64.0,))
    assert not _is_plain((True,)) and not _is_plain((torch.ones(1),))
    assert not _is_plain(0.0)
    x = torch.ones(2)
    assert _plain_key((x, (64,), 1e-5), None) != _plain_key((x, (64,), 1), None)
    assert _plain_key((x, (64,)), None) == _plain_key((torch.zeros(2), (64,)), None)
    assert _plain_key((x, (64.0,)), None) is None


class _SpelledTwoWays(torch.nn.Module):
    """The same calls, their arguments given one way (`one`) or another."""

    def __init__(self, one: bool) -> None:
        super().__init__()
        self.one = one

    def forward(self, x):
        if self.one:
            s = torch.stack([x, x * 2], 0)
            c = torch.cat([x, x], 1)
            v = x.view(2, 4, 8).permute(0, 2, 1).reshape(2, -1)
            m = v.mean(-1, True)
            r = m.repeat(1, 2)
        else:
            s = torch.stack([x, x * 2], dim=0)
            c = torch.cat([x, x], dim=1)
            v = x.view((2, 4, 8)).permute((0, 2, 1)).reshape((2, -1))
            m = v.mean(-1, keepdim=True)
            r = m.repeat((1, 2))
        return s.sum() + c.sum() + r.sum()


def test_arguments_given_by_position_or_by_name_record_the_same_attrs():
    # (QA: `torch.stack([x, y], 0)` recorded no dim (its two tensors, in a list, counted as
    # its two arguments); `x.view(2, 4, 8)` was `size: 2, arg2: 4, arg3: 8`; `x.mean(-1,
    # True)` named keepdim `arg2`: `diff` saw changes where there were none, and none where
    # the dim changed)
    x = torch.randn(2, 32)
    one = torchscope.trace(_SpelledTwoWays(True), x)
    other = torchscope.trace(_SpelledTwoWays(False), x)
    attrs = {n.name: n.attrs for n in one.nodes if n.kind == "op"}
    assert attrs["stack"] == {"dim": 0}
    assert attrs["cat"] == {"dim": 1}
    assert attrs["view"] == {"size": [2, 4, 8]}
    assert attrs["permute"] == {"dims": [0, 2, 1]}
    assert attrs["reshape"] == {"shape": [2, -1]}
    assert attrs["mean"] == {"dim": -1, "keepdim": True}
    assert attrs["repeat"] == {"repeats": [1, 2]}
    assert [n.attrs for n in one.nodes] == [n.attrs for n in other.nodes]


class _FirstArgumentsNamed(torch.nn.Module):
    def forward(self, x):
        n = torch.arange(16)
        r = torch.randint(10, (2,))
        return x.var(False) + n.sum() + r.sum()


def test_an_overload_that_names_more_does_not_rename_the_first_s_arguments():
    # (review: the longest overload named `torch.arange(16)`'s one argument `start`,
    # `torch.randint(10, (2,))`'s `low, high`, `x.var(False)`'s `dim`)
    g = torchscope.trace(_FirstArgumentsNamed(), torch.randn(4))
    attrs = {n.name: n.attrs for n in g.nodes if n.kind in ("op", "constant")}
    assert attrs["arange"] == {"end": 16}
    assert attrs["randint"] == {"high": 10, "size": [2]}
    assert attrs["var"] == {"unbiased": False}


class _OverloadedByTypes(torch.nn.Module):
    def forward(self, x):
        a = x.max(-1).values + x.max(-1, True).values.squeeze(-1)
        b = torch.arange(0, 4) + torch.arange(4)
        return a.sum() + b.sum() + x.std(0).sum() + x.max(x).sum()


def test_arguments_are_named_after_the_overload_the_call_s_types_pick():
    # (`x.max(-1)` was `other: -1`, its first overload's name, though torch called max.dim)
    g = torchscope.trace(_OverloadedByTypes(), torch.randn(3, 4))
    attrs = [(n.name, n.attrs) for n in g.nodes if n.kind in ("op", "constant")]
    maxes = [a for name, a in attrs if name == "max"]
    assert maxes == [{"dim": -1}, {"dim": -1, "keepdim": True}, {}], maxes
    assert [a for name, a in attrs if name == "arange"] == [{"start": 0, "end": 4}, {"end": 4}]
    assert [a for name, a in attrs if name == "std"] == [{"dim": 0}]
