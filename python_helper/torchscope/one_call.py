"""torch.nn layers whose forward is one functional call, and that call for a given input.

A trace records such a layer's call from its module hooks instead of intercepting it (see
`Recorder.pre_hook`): on a model of many small layers, intercepting each call through the
function mode is a large part of the cost.
Each entry gives the call exactly as the layer's forward makes it (the function, its
positional and keyword arguments), or None when this instance's forward does something
else (an in-place activation, a padded convolution). The recorder checks each entry against
the layer's real call once per trace before relying on it, so a torch whose layers call
something else only loses the shortcut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn

Call = tuple[Callable[..., Any], tuple, Optional[dict[str, Any]]]


def _param(m: Any, name: str) -> Any:
    """`m.<name>` for a weight, read from the parameter table where it is (`m.weight` goes
    through Module.__getattr__: a few times slower, on every layer call)."""
    d = m.__dict__
    table = d["_parameters"]
    # (an instance attribute of that name comes first, as for `m.weight`)
    return table[name] if name in table and name not in d else getattr(m, name)


def _linear(m: Any, x: torch.Tensor) -> Optional[Call]:
    return F.linear, (x, _param(m, "weight"), _param(m, "bias")), None


def _layer_norm(m: Any, x: torch.Tensor) -> Optional[Call]:
    # F.layer_norm hands itself to the mode with weight, bias and eps as keywords
    weight, bias = _param(m, "weight"), _param(m, "bias")
    return F.layer_norm, (x, m.normalized_shape), {"weight": weight, "bias": bias, "eps": m.eps}


def _gelu(m: Any, x: torch.Tensor) -> Optional[Call]:
    return F.gelu, (x,), {"approximate": m.approximate}


def _not_in_place(func: Callable[..., Any]) -> Callable[[Any, torch.Tensor], Optional[Call]]:
    def call(m: Any, x: torch.Tensor) -> Optional[Call]:
        if m.inplace:  # writes its input: the recorder must see the write as it happens
            return None
        return func, (x,), {"inplace": False}

    return call


def _plain(func: Callable[..., Any]) -> Callable[[Any, torch.Tensor], Optional[Call]]:
    return lambda m, x: (func, (x,), None)


def _dropout(m: Any, x: torch.Tensor) -> Optional[Call]:
    if m.inplace:
        return None
    return F.dropout, (x,), {"p": m.p, "training": m.training, "inplace": False}


def _conv(func: Callable[..., Any]) -> Callable[[Any, torch.Tensor], Optional[Call]]:
    def call(m: Any, x: torch.Tensor) -> Optional[Call]:
        if m.padding_mode != "zeros":  # F.pad first: two calls
            return None
        weight, bias = _param(m, "weight"), _param(m, "bias")
        return func, (x, weight, bias, m.stride, m.padding, m.dilation, m.groups), None

    return call


# by exact class: a subclass may have its own forward
ONE_CALL: dict[type, Callable[[Any, torch.Tensor], Optional[Call]]] = {
    nn.Linear: _linear,
    nn.LayerNorm: _layer_norm,
    nn.GELU: _gelu,
    nn.ReLU: _not_in_place(F.relu),
    nn.SiLU: _not_in_place(F.silu),
    nn.Tanh: _plain(torch.tanh),
    nn.Sigmoid: _plain(torch.sigmoid),
    nn.Dropout: _dropout,
    nn.Conv1d: _conv(F.conv1d),
    nn.Conv2d: _conv(F.conv2d),
}


def _torch_forward(cls: type) -> Optional[Callable[..., Any]]:
    """The layer class's forward as torch defines it; None if something replaced it (a library
    patching `nn.Linear.forward` before torchscope was imported)."""
    forward = cls.__dict__.get("forward")
    return forward if getattr(forward, "__module__", "").startswith("torch.nn.modules.") else None


# each class's own forward, while it is torch's: a layer whose class still has it is called
# as its one call directly (its forward would make the same call, reading its weights
# through Module.__getattr__ again)
TORCH_FORWARD: dict[type, Optional[Callable[..., Any]]] = {
    cls: _torch_forward(cls) for cls in ONE_CALL
}


def plain_call(module: nn.Module) -> bool:
    """Nothing of the user's runs around this module's forward: no hooks of its own, no
    forward set on the instance."""
    d = module.__dict__  # (a dict lookup: attribute access on a module walks its class first)
    return not (
        d.get("_forward_pre_hooks")
        or d.get("_forward_hooks")
        or d.get("_backward_hooks")
        or d.get("_backward_pre_hooks")
        or "forward" in d
    )


def torch_hooks_only_ours(ours: int) -> bool:
    """No global module hooks but the `ours` forward ones the recorder registered: another
    tool's global hook might run torch calls around a layer's call."""
    g = nn.modules.module
    return (
        len(g._global_forward_pre_hooks) + len(g._global_forward_hooks) == ours
        and not g._global_backward_hooks
        and not g._global_backward_pre_hooks
    )
