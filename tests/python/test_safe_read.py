"""safe_read: a paused line's arguments read without running the program's own code (its
__getitem__, properties, __getattr__), while library code (torch, dict, transformers'
BatchEncoding, a namedtuple's fields, nn.Module's submodules) reads as usual."""

from __future__ import annotations

import ast
import collections
import functools
from typing import Any, NamedTuple

import pytest
import torch
from torch import nn
from transformers import BatchEncoding

from torchscope.line_call import TENSOR_METHODS
from torchscope.safe_read import Unsafe, call_arguments, read


class Pair(NamedTuple):
    x: torch.Tensor
    y: int


class Counting:
    def __init__(self) -> None:
        self.calls = 0
        self.plain = torch.ones(2)

    def __getitem__(self, i: int) -> int:
        self.calls += 1
        return i

    @property
    def prop(self) -> int:
        self.calls += 1
        return 1

    @functools.cached_property
    def cached(self) -> int:
        self.calls += 1
        return 2


class Decorated:
    """The program's own reads behind a decorator: torch's no_grad, functools' lru_cache."""

    def __init__(self) -> None:
        self.calls = 0

    @torch.no_grad()
    def __getitem__(self, i: int) -> int:
        self.calls += 1
        return i

    @property
    @functools.cache  # noqa: B019 - a dataset's, as users write them
    def batch(self) -> int:
        self.calls += 1
        return 1


class Items(list):
    def __iter__(self):
        raise AssertionError("the program's __iter__ ran")


class Keys(dict):
    def __contains__(self, key: object) -> bool:
        raise AssertionError("the program's __contains__ ran")

    def __missing__(self, key: str) -> int:
        return 0


class Angles(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise AssertionError("the program's __torch_function__ ran")


class Lazy:
    def __getattr__(self, name: str) -> int:
        raise AssertionError("the program's __getattr__ ran")


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)


def _read(expr: str, **ns: Any) -> Any:
    return read(ast.parse(expr, mode="eval").body, ns, TENSOR_METHODS)


def test_library_reads_are_read() -> None:
    t = torch.arange(6.0).reshape(2, 3)
    batch = BatchEncoding({"input_ids": torch.ones(1, 4, dtype=torch.long)})
    net = Net()
    assert _read("t[0, 1:]", t=t).tolist() == [1.0, 2.0]
    assert _read("-t[1]", t=t).tolist() == [-3.0, -4.0, -5.0]
    assert _read("b['input_ids'].float().unsqueeze(0)", b=batch).shape == (1, 1, 4)
    assert _read("net.fc", net=net) is net.fc  # (nn.Module's __getattr__: torch's)
    layers = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
    assert _read("layers[1]", layers=layers) is layers[1]  # (a ModuleList's: torch's)
    assert _read("p.x", p=Pair(t, 3)) is t
    assert _read("{'a': d['k'], **d}", d={"k": 1}) == {"a": 1, "k": 1}
    assert _read("[c.plain, None, (1, 2)]", c=Counting())[2] == (1, 2)
    assert _read("len", **{"__builtins__": {"len": len}}) is len


@pytest.mark.parametrize(
    "expr",
    [
        "c[0]",
        "c.prop",
        "c.cached",
        "lazy.anything",
        "dd['missing']",
        "f(x)",
        "x.numpy()",
        "d[0]",  # behind torch.no_grad()
        "d.batch",  # behind lru_cache
        "subset[0]",  # torch's Subset calls the program's dataset
        "keys['k']",  # its own __contains__ (and __missing__)
        "angles[0]",  # a tensor subclass: its __torch_function__
        "angles.float()",
        "Decorated[0]",  # a class: __class_getitem__
        "[*items]",  # a list subclass's own __iter__
    ],
)
def test_the_programs_own_code_is_never_run(expr: str) -> None:
    c, d = Counting(), Decorated()
    dd: collections.defaultdict[str, list[int]] = collections.defaultdict(list)
    ns = {
        "c": c,
        "d": d,
        "lazy": Lazy(),
        "dd": dd,
        "f": print,
        "x": torch.ones(1),
        "subset": torch.utils.data.Subset(c, [0]),  # type: ignore[arg-type]
        "keys": Keys(),
        "angles": torch.ones(2).as_subclass(Angles),
        "Decorated": Decorated,
        "items": Items([1]),
    }
    with pytest.raises(Unsafe):
        _read(expr, **ns)
    assert c.calls == 0 and d.calls == 0 and not dd  # (nor a defaultdict's key inserted)


def test_call_arguments_stars_and_keywords() -> None:
    call = ast.parse("m(*xs, y, mask=m2, **kw)", mode="eval").body
    assert isinstance(call, ast.Call)
    ns = {"xs": (1, 2), "y": 3, "m2": 4, "kw": {"scale": 5}}
    assert call_arguments(call, ns, TENSOR_METHODS) == ((1, 2, 3), {"mask": 4, "scale": 5})
    with pytest.raises(Unsafe):  # * of an iterator: iterating it draws from it
        call_arguments(call, {**ns, "xs": iter([1])}, TENSOR_METHODS)
