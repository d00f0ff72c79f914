"""Random numbers a build draws, seeded by the line of code that draws them.

A model built from a file gets random weights; two builds of two versions of the file
(Compare with HEAD, `torchscope diff`) must get the same weights wherever the code is the
same, so that values differ only where the code does. One seed before the build is not
enough: a layer added first in `__init__` draws its weights first and shifts the stream, so
every weight after it (and an `example_input_array` drawn last) would differ. Here each
random call is seeded from the text of the innermost line outside torch that made it (the
user's `nn.Linear(16, 4)`, a library's `module.weight.data.normal_(…)`), the call's name,
the shape it fills and how many times that key came before: an unchanged line draws the
same numbers wherever it moved. A seed the user's code sets (`torch.manual_seed(1)` in a
factory) is part of the key from then on: another seed, other weights."""

from __future__ import annotations

import hashlib
import linecache
import os
import sys
from typing import Any, Optional

import torch
from torch.overrides import TorchFunctionMode

# torch calls that draw from the default generator (an nn.init function is one call: its
# own draws run under its seed)
RANDOM = frozenset(
    {
        "rand",
        "randn",
        "randint",
        "randperm",
        "rand_like",
        "randn_like",
        "randint_like",
        "normal",
        "bernoulli",
        "multinomial",
        "poisson",
        "uniform_",
        "normal_",
        "bernoulli_",
        "random_",
        "exponential_",
        "cauchy_",
        "log_normal_",
        "geometric_",
        "trunc_normal_",
        "kaiming_uniform_",
        "kaiming_normal_",
        "xavier_uniform_",
        "xavier_normal_",
        "orthogonal_",
        "sparse_",
    }
)

_INSIDE = (
    os.path.dirname(torch.__file__) + os.sep,
    os.path.dirname(os.path.abspath(__file__)) + os.sep,
)


class SeedByLine(TorchFunctionMode):
    """While a model is built: each random call seeded as the module docstring says (a call
    given its own `generator=` is left alone)."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}
        self.base = 0  # the seed set before the build, or the one the user's code set since
        self.last: Optional[int] = None  # the seed set here last

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in RANDOM and kwargs.get("generator") is None:
            now = torch.initial_seed()
            if now != self.last:  # (the user's own `torch.manual_seed(…)`: its seed counts)
                self.base = now
            key = f"{self.base}\0{_line(sys._getframe(1))}\0{name}\0{_shape(args)}"
            n = self.counts.get(key, 0)
            self.counts[key] = n + 1
            self.last = _seed(f"{key}\0{n}")
            torch.manual_seed(self.last)
        return func(*args, **kwargs)


def _line(frame: Optional[Any]) -> str:
    """The text of the innermost line outside torch (and torchscope) on the stack."""
    while frame is not None and frame.f_code.co_filename.startswith(_INSIDE):
        frame = frame.f_back
    if frame is None:
        return ""
    file = frame.f_code.co_filename
    return (
        linecache.getline(file, frame.f_lineno, frame.f_globals).strip()
        or f"{file}:{frame.f_lineno}"
    )


def _shape(args: tuple) -> str:
    first = args[0] if args else None
    if isinstance(first, torch.Tensor):
        return str(tuple(first.shape))
    return str(tuple(a for a in args if isinstance(a, (int, tuple, list, torch.Size))))


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1
