"""The tensors among a call's arguments and the key of its plain ones (tracer._tensors_in,
tracer._plain_key): scalars are passed over by their exact type, anything else is looked
into as before."""

from __future__ import annotations

import torch
from torch import nn

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
