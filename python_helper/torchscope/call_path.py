"""A lean module call path while a trace runs.

The recorder hooks every module call through two global module hooks. With any global hook
registered, torch's `Module._call_impl` takes its general path for every call (a closure,
hook tables merged and searched, always-called bookkeeping): on 2,000 residual blocks that
was ~6% of the trace. While a trace runs, `_call_impl` is replaced by `lean_call`, which
makes exactly the calls torch's path would make when the recorder's two hooks are the only
hooks that apply to the call (no hook of the module's own, no other global hook, no JIT
tracing), and hands every other call to torch's path unchanged; the recorder's hooks stay
registered, so a call that takes torch's path (or a class with a `_call_impl` of its own)
is recorded as before. On the lean path, a torch.nn layer whose one call the recorder has
checked goes to the recorder whole (`layer`): the hooks' work and the forward in one call.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from typing import Any, Optional

import torch
from torch import nn

_torch_call_impl = nn.Module._call_impl
_g = nn.modules.module
_tracing_state = torch._C._get_tracing_state
_is_compiling = torch.compiler.is_compiling
PASS: Any = object()  # a layer call's answer: not taken, the call goes the hooks' way


@contextlib.contextmanager
def lean_calls(
    pre: Callable[[nn.Module, Any], None],
    post: Callable[..., None],
    ours: int,
    layer: Optional[Callable[[nn.Module, Any, tuple], Any]] = None,
    layers: Optional[dict[type, Any]] = None,
) -> Iterator[None]:
    """Module calls take the lean path while the block runs, when `pre` (a forward pre
    hook) and `post` (a forward hook registered with_kwargs and always_call) are the only
    global hooks: `ours` of them. Put back as it was however the block is left.

    A call with one positional argument of a module whose class is in `layers` goes to
    `layer(module, layers[its class], args)` instead, which makes the whole call (what
    `pre`, the forward and `post` would) or answers PASS, untouched, for the hooks' way.
    The caller may add classes to `layers` while the block runs."""
    pre_hooks, hooks = _g._global_forward_pre_hooks, _g._global_forward_hooks
    backward, backward_pre = _g._global_backward_hooks, _g._global_backward_pre_hooks

    def lean_call(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__  # (a dict lookup: attribute access on a module walks its class first)
        if (
            d.get("_forward_pre_hooks")
            or d.get("_forward_hooks")
            or d.get("_backward_hooks")
            or d.get("_backward_pre_hooks")
            or len(pre_hooks) + len(hooks) != ours
            or backward
            or backward_pre
            or _tracing_state()
            or _is_compiling()
        ):
            return _torch_call_impl(self, *args, **kwargs)
        if layers:
            how = layers.get(type(self))
            if how is not None and len(args) == 1 and not kwargs:
                result = layer(self, how, args)  # type: ignore[misc]
                if result is not PASS:
                    return result
        try:
            pre(self, args)  # (the recorder's hooks return None: args and result stand)
            result = self.forward(*args, **kwargs)
        except Exception:
            # as torch runs an always-called hook when a pre hook or the forward raised
            try:
                post(self, args, None)
            except Exception as e:
                warnings.warn(
                    "global module forward hook with ``always_call=True`` raised an "
                    f"exception that was silenced as another error was raised in forward: {e}",
                    stacklevel=2,
                )
            raise
        post(self, args, kwargs, result)
        return result

    if nn.Module._call_impl is not _torch_call_impl:  # another tool's, or a trace inside one
        yield
        return
    nn.Module._call_impl = lean_call  # type: ignore[method-assign]
    try:
        yield
    finally:
        nn.Module._call_impl = _torch_call_impl  # type: ignore[method-assign]
