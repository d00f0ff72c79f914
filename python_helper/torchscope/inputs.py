"""A model's input when none was given: its own example, a guess from its first layer, or
(in a paused program) a value in the frame that fits. One table of layer types serves both
making a guess and checking a candidate, so the editor, the CLI and the paused-debugger
entry agree on what a model takes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import nn

HOW_TO = "pass one with --input, e.g. --input 'torch.randn(1, 3, 224, 224)'"
SEQUENCE = 16  # tokens of a guessed sequence
STEPS = 8  # time steps of a guessed RNN / attention sequence
IMAGE = 64  # side of a guessed image when the model's config names none


class NoInputError(Exception):
    pass


# -- the layer table -------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerInput:
    """What a layer type takes as its first input: how to make one (an expression in `torch`,
    which the editor evaluates and a paused program's input box can show), how to recognise one."""

    types: tuple[type, ...]
    make: Callable[[Any, Any], str]  # (layer, model config) → an input expression
    fits: Callable[[Any, torch.Tensor], bool]  # (layer, tensor) → it looks like one


def _floating(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def _ids_fit(layer: Any, t: torch.Tensor) -> bool:
    if _floating(t) or t.dtype == torch.bool or t.numel() == 0:
        return False
    return bool(t.min() >= 0) and bool(t.max() < layer.num_embeddings)


def _last_dim_fits(size: Callable[[Any], int], ranks: tuple[int, ...] = ()) -> Callable[..., bool]:
    def fits(layer: Any, t: torch.Tensor) -> bool:
        shape = tuple(t.shape)
        ok_rank = len(shape) in ranks if ranks else len(shape) >= 1
        return _floating(t) and ok_rank and shape[-1] == size(layer)

    return fits


def _randn(*shape: int) -> str:
    return f"torch.randn({', '.join(map(str, shape))})"


def _image_side(config: Any) -> int:
    size = getattr(config, "image_size", None) or IMAGE
    return int(size[0] if isinstance(size, (list, tuple)) else size)


def _conv(spatial: int) -> tuple[Callable[..., str], Callable[..., bool]]:
    def make(layer: Any, config: Any) -> str:
        if spatial == 1:
            return _randn(1, layer.in_channels, IMAGE)
        if spatial == 2:
            side = _image_side(config)
            return _randn(1, layer.in_channels, side, side)
        return _randn(1, layer.in_channels, 8, 32, 32)

    def fits(layer: Any, t: torch.Tensor) -> bool:
        shape = tuple(t.shape)
        return (
            _floating(t)
            and len(shape) in (spatial + 1, spatial + 2)
            and shape[-(spatial + 1)] == layer.in_channels
        )

    return make, fits


def _sequence(layer: Any, width: int) -> str:
    first = getattr(layer, "batch_first", False)
    return _randn(1, STEPS, width) if first else _randn(STEPS, 1, width)


def _layer_norm(layer: Any, _config: Any) -> str:
    shape = tuple(layer.normalized_shape)
    return _randn(1, SEQUENCE, *shape) if len(shape) == 1 else _randn(1, *shape)


def _layer_norm_fits(layer: Any, t: torch.Tensor) -> bool:
    shape, ns = tuple(t.shape), tuple(layer.normalized_shape)
    return _floating(t) and len(shape) >= len(ns) and shape[len(shape) - len(ns) :] == ns


def _batch_norm(layer: Any, _config: Any) -> str:
    # batch 2: a training-mode BatchNorm refuses one value per channel
    spatial = {nn.BatchNorm1d: (), nn.BatchNorm2d: (32, 32), nn.BatchNorm3d: (8, 16, 16)}
    return _randn(2, layer.num_features, *spatial.get(type(layer), (32, 32)))


_CONV = {n: _conv(n) for n in (1, 2, 3)}

LAYERS: tuple[LayerInput, ...] = (
    LayerInput(
        (nn.Embedding, nn.EmbeddingBag),
        lambda layer, _c: f"torch.randint(0, {layer.num_embeddings}, (1, {SEQUENCE}))",
        _ids_fit,
    ),
    LayerInput(
        (nn.Linear,),
        lambda layer, _c: _randn(1, layer.in_features),
        _last_dim_fits(lambda layer: layer.in_features),
    ),
    LayerInput(
        (nn.Bilinear,),
        lambda layer, _c: _randn(1, layer.in1_features),
        _last_dim_fits(lambda layer: layer.in1_features),
    ),
    LayerInput((nn.Conv1d, nn.ConvTranspose1d), *_CONV[1]),
    LayerInput((nn.Conv2d, nn.ConvTranspose2d), *_CONV[2]),
    LayerInput((nn.Conv3d, nn.ConvTranspose3d), *_CONV[3]),
    LayerInput(
        (nn.RNNBase,),
        lambda layer, _c: _sequence(layer, layer.input_size),
        _last_dim_fits(lambda layer: layer.input_size, (2, 3)),
    ),
    LayerInput((nn.LayerNorm,), _layer_norm, _layer_norm_fits),
    LayerInput(
        (nn.MultiheadAttention,),
        lambda layer, _c: _sequence(layer, layer.embed_dim),
        _last_dim_fits(lambda layer: layer.embed_dim, (2, 3)),
    ),
    LayerInput(
        (nn.modules.batchnorm._BatchNorm,),  # pyright: ignore[reportPrivateUsage]
        _batch_norm,
        lambda layer, t: _floating(t) and t.dim() >= 2 and t.shape[1] == layer.num_features,
    ),
)


def first_layer(model: nn.Module) -> Optional[tuple[nn.Module, LayerInput]]:
    """The first submodule (in definition order) of a type in the table, with its entry."""
    for m in model.modules():
        for entry in LAYERS:
            if isinstance(m, entry.types):
                return m, entry
    return None


# -- making an input -------------------------------------------------------------------------


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


def guess_expression(model: nn.Module) -> Optional[str]:
    """The first-layer guess as an input expression in `torch` ("torch.randn(1, 64)")."""
    found = first_layer(model)
    if found is None:
        return None
    layer, entry = found
    return entry.make(layer, getattr(model, "config", None))


def guess_from_first_layer(model: nn.Module, device: str = "cpu") -> Optional[Any]:
    expr = guess_expression(model)
    if expr is None:
        return None
    with torch.device(device):
        return eval(expr, {"torch": torch})  # noqa: S307 - our own expression


# -- recognising one among a paused program's values -----------------------------------------


def fitting_value(
    model: nn.Module, named: Iterable[tuple[str, Any]]
) -> Optional[tuple[tuple[Any, ...], dict[str, Any], str]]:
    """Call arguments for `model` among `(name, value)` pairs, best names first: a mapping of
    tensors whose keys the forward takes (a tokenizer batch) as keywords, else a tensor (alone,
    or inside a list or dict) that fits the first layer. `(args, kwargs, what)` or None."""
    named = list(named)
    try:
        import inspect

        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        params = {}
    for k, v in named:
        if (
            isinstance(v, Mapping)
            and v
            and params
            and all(isinstance(key, str) and key in params for key in v)
            and any(isinstance(t, torch.Tensor) for t in v.values())
        ):
            return (), dict(v), f"{k} (keywords {', '.join(v)})"
    found = first_layer(model)
    if found is None:
        return None
    layer, entry = found
    own = {id(p) for p in model.parameters()} | {id(b) for b in model.buffers()}
    for name, t in _tensors(named, own):
        try:
            ok = entry.fits(layer, t)
        except Exception:
            ok = False
        if ok:
            return (t,), {}, f"{name} ({describe_value(t)})"
    return None


def _tensors(named: list[tuple[str, Any]], own: set[int]) -> list[tuple[str, torch.Tensor]]:
    """Tensors among the values, one level into lists and dicts; never a parameter or buffer."""
    out: list[tuple[str, torch.Tensor]] = []
    seen: set[int] = set()

    def add(name: str, v: Any) -> None:
        if (
            isinstance(v, torch.Tensor)
            and not isinstance(v, nn.Parameter)
            and id(v) not in own
            and id(v) not in seen
        ):
            seen.add(id(v))
            out.append((name, v))

    for k, v in named:
        add(k, v)
        if isinstance(v, (list, tuple)):
            for i, item in enumerate(v[:8]):
                add(f"{k}[{i}]", item)
        elif isinstance(v, dict):
            for key, item in list(v.items())[:16]:
                if isinstance(key, (str, int)):
                    add(f"{k}[{key!r}]", item)
    return out


# -- saying which input was used -------------------------------------------------------------


def describe_value(v: Any) -> str:
    """`tensor [2, 3] float32`, or the type's name."""
    if isinstance(v, torch.Tensor):
        return f"tensor {list(v.shape)} {str(v.dtype).replace('torch.', '')}"
    return type(v).__name__


def describe_input(value: Any) -> str:
    """An input value as given (a tensor, a tuple of positionals, a dict of keywords)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {describe_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(describe_value(v) for v in value) + ")"
    return describe_value(value)


def describe_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """Call arguments: `(tensor [4, 4] float32, log=list)`."""
    parts = [describe_value(a) for a in args] + [
        f"{k}={describe_value(v)}" for k, v in kwargs.items()
    ]
    return "(" + ", ".join(parts) + ")"
