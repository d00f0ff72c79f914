"""The input of a Hugging Face transformers model, made from its config.

Such models are built from a config with random weights as often as loaded, and
transformers' `dummy_inputs` is `{"input_ids": …}` for every one of them: a ViT, Whisper
or CLIP raises on it. The forward's main input (`main_input_name`) says what it takes, the
config how big: pixel values of its image size, mel frames of its length, a waveform, or
token ids (and the decoder's, for an encoder-decoder), and the image a text-and-image
model takes beside its text. `dummy_inputs` stays what is traced wherever it holds all of
that (a text model).

Every input comes with its expression, which the editor's input box and a paused program's
can start with.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import nn

TOKENS = 16  # ids of a made text input
DECODER_TOKENS = 4  # ids the decoder of a speech model starts with
WAVEFORM = 16_000  # samples of a made waveform (a second at 16 kHz)
FRAMES = 64  # filterbank frames of a made speech input
IMAGE = 224  # side of a made image when the config names no image size
LITERAL_LIMIT = 256  # elements: a dummy input written out as a literal up to this size
# the inputs _expression can make from a config
MADE = ("input_ids", "decoder_input_ids", "pixel_values", "input_features", "input_values")


@dataclass(frozen=True)
class HfInput:
    expr: str  # a dict expression in `torch` that makes the input
    source: str  # "ViTModel's config" | "BertModel's dummy_inputs"
    device: torch.device  # the model's
    dummy: Optional[dict[str, torch.Tensor]] = None  # dummy_inputs, when they are the input

    def value(self) -> dict[str, Any]:
        """The input itself: made only when asked for (its random numbers are drawn then: a
        paused program's models are listed with the expression alone)."""
        if self.dummy is not None:
            made: dict[str, Any] = {}
            for k, v in self.dummy.items():
                t = v.to(self.device)
                # one tensor under two names (T5's ids for its encoder and decoder): two
                # inputs, as the expression makes them
                made[k] = t.clone() if any(t is u for u in made.values()) else t
            return made
        with torch.device(self.device):
            return eval(self.expr, {"torch": torch})  # noqa: S307 - our own expression


def is_hf_model(model: nn.Module) -> bool:
    """A transformers `PreTrainedModel` (it has a config and `dummy_inputs`)."""
    return getattr(type(model), "dummy_inputs", None) is not None and hasattr(model, "config")


def hf_input(model: nn.Module) -> Optional[HfInput]:
    """The input for a transformers model, or None for any other model, one whose forward
    takes none of those names (a subclass's own `forward(self, x)`: its first layer says
    more), or one whose config sizes nothing and whose dummy_inputs is no dict of tensors."""
    if not is_hf_model(model):
        return None
    signature = _signature(model)
    params = _parameters(signature)
    dummy = _dummy(model)
    if dummy is not None and params is None and signature is not None:
        # a forward that also takes **kwargs (transformers' attention flags) is given only
        # the dummy inputs it names: T5's encoder gets no decoder ids it never reads
        named = {k: v for k, v in dummy.items() if k in signature}
        dummy = named or dummy
    if dummy is not None and not _takes(params, dummy):
        dummy = None  # (a forward of the user's own: `forward(self, x)`)
    wanted = _wanted(model, params, _named(signature))
    if not _takes(params, wanted):
        wanted = []
    name = type(model).__name__
    if dummy is not None and all(w in dummy for w in wanted) and _ids_fit(dummy, model.config):
        return _from_dummy(model, dummy)
    made = {w: _expression(w, model.config) for w in wanted}
    if made and all(made.values()):
        expr = "{" + ", ".join(f"{k!r}: {e}" for k, e in made.items()) + "}"
        return HfInput(expr, f"{name}'s config", _device(model))
    if dummy is not None:  # a main input the config can't size: as before
        return _from_dummy(model, dummy)
    return None


def _from_dummy(model: nn.Module, dummy: dict[str, torch.Tensor]) -> Optional[HfInput]:
    expr = _literal(dummy)
    if expr is None:
        return None
    return HfInput(expr, f"{type(model).__name__}'s dummy_inputs", _device(model), dummy)


def _ids_fit(dummy: dict[str, torch.Tensor], config: Any) -> bool:
    """Whether dummy_inputs' token ids (transformers' fixed ones, up to 7) are all in the
    config's vocabulary (a tiny `vocab_size=5` has no id 7)."""
    text = _sub(config, "text_config") or config
    vocab = _int(text, "vocab_size") or _int(config, "vocab_size")
    for key in ("input_ids", "decoder_input_ids"):
        ids = dummy.get(key)
        if vocab and ids is not None and ids.numel() and not ids.is_meta:
            if int(ids.max()) >= vocab:  # (meta ids have no values: taken as they are)
                return False
    return True


def _dummy(model: nn.Module) -> Optional[dict[str, Any]]:
    try:
        value = model.dummy_inputs
    except Exception:
        return None
    if not isinstance(value, dict) or not value:
        return None
    if not all(isinstance(v, torch.Tensor) for v in value.values()):
        return None
    return value


def _signature(model: nn.Module) -> Optional[Mapping[str, inspect.Parameter]]:
    """The forward's parameters; None when it can't say."""
    try:
        return inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return None


def _parameters(
    signature: Optional[Mapping[str, inspect.Parameter]],
) -> Optional[Mapping[str, Any]]:
    """The forward's parameters; None when it takes any keyword (`**kwargs`) or can't say."""
    if signature is None:
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.values()):
        return None
    return signature


def _takes(params: Optional[Mapping[str, Any]], names: Iterable[str]) -> bool:
    return params is None or all(n in params for n in names)


def _wanted(
    model: nn.Module, params: Optional[Mapping[str, Any]], named: dict[str, bool]
) -> list[str]:
    """The inputs the forward needs: its main one; the image beside a text model's ids (CLIP);
    the decoder's ids of an encoder-decoder (Whisper; Pegasus, whose dummy_inputs lack
    them: BART makes them from input_ids, Pegasus does not); any other input it requires
    that a config can size (Grounding DINO's text beside its image)."""
    main = getattr(model, "main_input_name", None) or "input_ids"
    config = model.config
    wanted = [main]
    if main == "input_ids" and _takes(params, ["pixel_values"]) and _sub(config, "vision_config"):
        wanted.append("pixel_values")
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in named:
        wanted.append("decoder_input_ids")
    wanted += [n for n, required in named.items() if required and n in MADE and n not in wanted]
    return wanted


def _named(signature: Optional[Mapping[str, inspect.Parameter]]) -> dict[str, bool]:
    """The forward's named parameters (its `**kwargs` aside), each with whether it is
    required (has no default)."""
    if signature is None:
        return {}
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {
        n: p.default is inspect.Parameter.empty for n, p in signature.items() if p.kind in named
    }


def _expression(name: str, config: Any) -> Optional[str]:
    """An expression for one input, sized by the config; None when it says nothing usable."""
    if name in ("input_ids", "decoder_input_ids"):
        text = _sub(config, "text_config") or config
        vocab = _int(text, "vocab_size") or _int(config, "vocab_size")
        if not vocab:
            return None
        n = TOKENS if name == "input_ids" else DECODER_TOKENS
        longest = _int(text, "max_position_embeddings")
        if name == "decoder_input_ids":
            longest = _int(config, "max_target_positions") or longest
        if longest:
            n = min(n, longest)
        return f"torch.randint(0, {vocab}, (1, {n}))"
    if name == "pixel_values":
        vision = _sub(config, "vision_config") or config
        size = getattr(vision, "image_size", None)
        if isinstance(size, int) and size > 0:
            h = w = size
        elif (
            isinstance(size, (list, tuple))
            and len(size) == 2
            and all(isinstance(s, int) and s > 0 for s in size)
        ):
            h, w = size
        elif size is None:  # a convolutional net (ResNet, SegFormer): any size, ImageNet's
            h = w = IMAGE
        else:
            return None
        channels = _int(vision, "num_channels") or 3
        frames = _int(vision, "num_frames")
        if frames:  # a video model (VideoMAE, TimeSformer): frames × channels × height × width
            return f"torch.randn(1, {frames}, {channels}, {h}, {w})"
        return f"torch.randn(1, {channels}, {h}, {w})"
    if name == "input_features":
        # Whisper: mel bins × twice the encoder's positions (its second conv has stride 2)
        mel, positions = _int(config, "num_mel_bins"), _int(config, "max_source_positions")
        if mel and positions:
            return f"torch.randn(1, {mel}, {2 * positions})"
        # Speech2Text: frames × filterbank features per channel × channels
        features = _int(config, "input_feat_per_channel")
        if features:
            channels = _int(config, "input_channels") or 1
            return f"torch.randn(1, {FRAMES}, {features * channels})"
        return None
    if name == "input_values":
        mel, frames = _int(config, "num_mel_bins"), _int(config, "max_length")
        if mel and frames:  # a spectrogram transformer (AST): frames × mel bins
            return f"torch.randn(1, {frames}, {mel})"
        channels = _int(config, "audio_channels")
        if channels or _int(config, "codebook_size"):  # an audio codec (EnCodec, DAC, Mimi)
            return f"torch.randn(1, {channels or 1}, {WAVEFORM})"
        return f"torch.randn(1, {WAVEFORM})"  # a waveform (wav2vec 2.0, HuBERT)
    return None


def _literal(value: dict[str, torch.Tensor]) -> Optional[str]:
    """dummy_inputs written out (`torch.tensor([[7, 6, 0]])`); None when too big to."""
    parts = []
    for k, t in value.items():
        if t.numel() > LITERAL_LIMIT or t.device.type == "meta":  # (transformers makes them on CPU)
            return None
        # a literal of ints, floats or bools makes int64, float32 or bool by itself
        dtype = "" if t.dtype in (torch.int64, torch.float32, torch.bool) else f", dtype={t.dtype}"
        parts.append(f"{k!r}: torch.tensor({t.tolist()!r}{dtype})")
    return "{" + ", ".join(parts) + "}"


def _sub(config: Any, name: str) -> Any:
    return getattr(config, name, None)


def _int(config: Any, name: str) -> Optional[int]:
    value = getattr(config, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _device(model: nn.Module) -> torch.device:
    return next((p.device for p in model.parameters()), torch.device("cpu"))
