"""Find an input for a model that was given none: its own example, or a guess from its first layer."""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import nn

HOW_TO = "pass one with --input, e.g. --input 'torch.randn(1, 3, 224, 224)'"


class NoInputError(Exception):
    pass


def example_input(model: nn.Module, device: str = "cpu") -> Any:
    """`example_input_array`, then transformers' `dummy_inputs`, then a first-layer guess."""
    example = getattr(model, "example_input_array", None)
    if example is not None:
        return example
    dummy = _transformers_dummy(model)
    if dummy is not None:
        return dummy
    guess = guess_from_first_layer(model, device)
    if guess is None:
        raise NoInputError(f"cannot tell what input {type(model).__name__} takes: {HOW_TO}")
    return guess


def _transformers_dummy(model: nn.Module) -> Optional[dict[str, Any]]:
    dummy = getattr(type(model), "dummy_inputs", None)
    if dummy is None or not hasattr(model, "config"):
        return None
    try:
        value = model.dummy_inputs
    except Exception:
        return None
    if not isinstance(value, dict) or not value:
        return None
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in value.items()}


def guess_from_first_layer(model: nn.Module, device: str = "cpu") -> Optional[Any]:
    config = getattr(model, "config", None)
    with torch.device(device):
        for m in model.modules():
            if isinstance(m, nn.Embedding):
                return torch.randint(0, m.num_embeddings, (1, 16))
            if isinstance(m, nn.Linear):
                return torch.randn(1, m.in_features)
            if isinstance(m, nn.Conv1d):
                return torch.randn(1, m.in_channels, 64)
            if isinstance(m, nn.Conv2d):
                size = getattr(config, "image_size", None) or 64
                size = size[0] if isinstance(size, (list, tuple)) else size
                return torch.randn(1, m.in_channels, size, size)
            if isinstance(m, nn.Conv3d):
                return torch.randn(1, m.in_channels, 8, 32, 32)
            if isinstance(m, (nn.LSTM, nn.GRU, nn.RNN)):
                shape = (1, 8, m.input_size) if m.batch_first else (8, 1, m.input_size)
                return torch.randn(*shape)
    return None
