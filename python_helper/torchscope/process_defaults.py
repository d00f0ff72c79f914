"""What a user's file may change in the whole process as it is imported — torch's defaults
(dtype, device, grad mode, matmul precision, deterministic algorithms, backend flags, anomaly
mode), the recursion limit, the warnings filters, the environment, sys.path — taken when the
runner starts and put back before each import of a file. The runner is one long-lived process for
every file of a workspace: without this, a file that sets float64 at import made every other
file's next trace float64, as no fresh `python` would. (The thread count is the runner's own
business: threads.core_spared.)"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Collection
from typing import Any

import torch

from .state import GlobalSettings

__all__ = ["ProcessDefaults"]


class ProcessDefaults:
    def __init__(self) -> None:
        self.torch = GlobalSettings(threads=False)
        self.grad = torch.is_grad_enabled()
        self.recursion_limit = sys.getrecursionlimit()
        self.warning_filters = list(warnings.filters)
        self.environ = dict(os.environ)
        self.sys_path = list(sys.path)  # (the runner then puts the traced file's folder first)
        # torch's namespaces a file may patch at import (`F.gelu = fast_gelu`)
        self.namespaces = [(owner, dict(vars(owner))) for owner in _patchable()]

    def restore(self, forgotten: Collection[str] = ()) -> None:
        """As the runner started; `forgotten`: the user's modules just dropped (their patches
        of torch go with them)."""
        if forgotten:
            self._undo_patches(set(forgotten))
        for warning in self.torch.restore():  # (the server's log: no trace to say it in)
            print(f"torchscope: {warning}", file=sys.stderr)
        torch.set_grad_enabled(self.grad)
        sys.setrecursionlimit(self.recursion_limit)
        if warnings.filters != self.warning_filters:
            filters: Any = warnings.filters  # (typed read-only; a list, changed in place)
            filters[:] = self.warning_filters
            warnings._filters_mutated()  # type: ignore[attr-defined]  # (drops cached decisions)
        if sys.path != self.sys_path:
            sys.path[:] = self.sys_path
        if os.environ != self.environ:
            for key in [k for k in os.environ if k not in self.environ]:
                del os.environ[key]
            for key, value in self.environ.items():
                if os.environ.get(key) != value:
                    os.environ[key] = value

    def _undo_patches(self, forgotten: set[str]) -> None:
        """Names of torch's namespaces that hold a function or class of the dropped modules
        (`F.gelu = fast_gelu`, `torch.Tensor.gelu = …`): put back as they were, or taken off.
        A library's patch stays (it is imported once for the runner's life), and so does a
        plain value a file set (nothing says whose it is)."""
        for owner, before in self.namespaces:
            for key, value in list(vars(owner).items()):
                try:
                    theirs = getattr(value, "__module__", None) in forgotten
                except Exception:  # (an object that won't say)
                    continue
                if not theirs:
                    continue
                with contextlib.suppress(Exception):
                    if key in before:
                        setattr(owner, key, before[key])
                    else:
                        delattr(owner, key)


def _patchable() -> list[Any]:
    """torch's namespaces users patch: the package, nn, its functional and init, and Tensor."""
    import torch.nn.functional
    import torch.nn.init

    return [torch, torch.nn, torch.nn.functional, torch.nn.init, torch.Tensor]
