"""What a user's file may change in the whole process as it is imported — torch's defaults
(dtype, device, grad mode, matmul precision, deterministic algorithms, backend flags, anomaly
mode), the recursion limit, the warnings filters, the environment, sys.path — taken when the
runner starts and put back before each import of a file. The runner is one long-lived process for
every file of a workspace: without this, a file that sets float64 at import made every other
file's next trace float64, as no fresh `python` would. (The thread count is the runner's own
business: threads.core_spared.)"""

from __future__ import annotations

import os
import sys
import warnings
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

    def restore(self) -> None:
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
