"""Snapshot and restore everything a forward may change, so a trace has no side effects."""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from typing import Any, Optional

import torch
from torch import nn


class RngState:
    """Every random number generator a forward may draw from: torch's (CPU, and CUDA when it
    is initialised), Python's `random` and numpy's (only if the program already uses it)."""

    def __init__(self) -> None:
        self.cpu = torch.get_rng_state()
        self.cuda: Optional[list[torch.Tensor]] = (
            torch.cuda.get_rng_state_all()
            if torch.cuda.is_available() and torch.cuda.is_initialized()
            else None
        )
        self.py = random.getstate()
        numpy = sys.modules.get("numpy")
        self.np = numpy.random.get_state() if numpy is not None else None

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
        random.setstate(self.py)
        if self.np is not None:
            sys.modules["numpy"].random.set_state(self.np)


@contextlib.contextmanager
def rng_kept() -> Iterator[None]:
    """Every RNG as it was when the block is left, however it is left: around code that is
    not a traced forward but draws random numbers (an input expression `torch.randn(1, 8)`)."""
    state = RngState()
    try:
        yield
    finally:
        state.restore()


class ModelState:
    """Training flags, buffers (BatchNorm running stats), RNG states (torch, CUDA, Python's
    random, numpy's) and grad mode.

    Buffers are copied up front (they are small next to parameters). Parameters are
    copied only when an in-place call is about to write one (`protect`), so tracing
    a large model does not double its memory.
    """

    def __init__(self, modules: list[nn.Module]) -> None:
        self.training = [(m, m.training) for m in modules]
        self.buffers: list[tuple[torch.Tensor, torch.Tensor, int]] = []
        self.param_versions: dict[int, tuple[torch.Tensor, int]] = {}
        for m in modules:
            for b in m._buffers.values():
                if b is not None and b.device.type != "meta":
                    self.buffers.append((b, b.detach().clone(), b._version))
            for p in m._parameters.values():
                if p is not None:
                    self.param_versions[id(p)] = (p, p._version)
        self.saved_params: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.rng = RngState()
        self.grad_enabled = torch.is_grad_enabled()
        self.module_dicts = [(m, m.__dict__.copy()) for m in modules]

    def protect(self, t: Any) -> None:
        """Called before an in-place call on `t`: keep a copy if it is one of our parameters."""
        key = id(t)
        if key in self.param_versions and key not in self.saved_params and t.device.type != "meta":
            self.saved_params[key] = (t, t.detach().clone())

    def restore(self) -> list[str]:
        """Put everything back; returns warnings about what could not be restored."""
        warnings: list[str] = []
        with torch.no_grad():
            for b, copy, _version in self.buffers:
                b.copy_(
                    copy
                )  # kernels such as batch_norm update running stats without a version bump
            for p, copy in self.saved_params.values():
                p.copy_(copy)
        for p, version in self.param_versions.values():
            if p._version != version and id(p) not in self.saved_params and p.device.type != "meta":
                warnings.append("a parameter was written by the forward and could not be restored")
        for m, saved in self.module_dicts:
            now = m.__dict__
            try:
                same = now == saved  # C-speed; identical values compare equal without __eq__
            except Exception:  # a changed tensor value makes == ambiguous
                same = False
            if not same:
                # the forward rebound or added plain attributes (a cache, a counter)
                now.clear()
                now.update(saved)
        for m, flag in self.training:
            if m.training != flag:
                m.training = flag
        self.rng.restore()
        torch.set_grad_enabled(self.grad_enabled)
        return warnings
