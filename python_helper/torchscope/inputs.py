"""A model's input when none was given: its own example, a guess from its first layer (a
transformers model's from its config: hf_inputs.py), or (in a paused program) a value in the
frame that fits. One table of layer types serves both
making a guess and checking a candidate, so the editor, the CLI and the paused-debugger
entry agree on what a model takes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import nn

from .hf_inputs import hf_input
from .state import ModelState, unsized_layer
from .wrappers import find_wrappers


def how_to(example: str = "torch.randn(1, 3, 224, 224)") -> str:
    """The end of a message that asks for an input, in words for the editor's input box;
    `on_the_command_line` says it with --input."""
    return f"give one, e.g. {example}"


HOW_TO = how_to()
_ASKED = re.compile(re.escape(how_to("")) + r"(\S.*)$")  # how_to's words, then the example


def on_the_command_line(message: str) -> str:
    """A message asking for an input (ending in `how_to`), as the command line says it."""
    return _ASKED.sub(lambda m: f"pass one with --input, e.g. --input '{m.group(1)}'", message)


# an input a lazy first layer takes (any size where the layer sizes itself), by its class
_LAZY_EXAMPLES = {
    "LazyLinear": "torch.randn(1, 16)",
    "LazyConv1d": "torch.randn(1, 3, 64)",
    "LazyConv2d": "torch.randn(1, 3, 224, 224)",
    "LazyConv3d": "torch.randn(1, 3, 16, 64, 64)",
    "LazyConvTranspose1d": "torch.randn(1, 3, 64)",
    "LazyConvTranspose2d": "torch.randn(1, 3, 64, 64)",
    "LazyBatchNorm1d": "torch.randn(2, 16)",
    "LazyBatchNorm2d": "torch.randn(2, 3, 64, 64)",
}
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
    # (layer, model config) → an input expression; None: none can be made (a lazy layer)
    make: Callable[[Any, Any], Optional[str]]
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


# A lazy layer (nn.LazyLinear …) its first forward has not sized: it takes any size, so no
# input can be made from it, and any floating tensor of two or more dimensions fits it.
LAZY = LayerInput(
    (nn.Module,), lambda _layer, _c: None, lambda _layer, t: _floating(t) and t.dim() >= 2
)


def first_layer(model: nn.Module) -> Optional[tuple[nn.Module, LayerInput]]:
    """The first submodule (in definition order) of a type in the table, with its entry."""
    for m in model.modules():
        if unsized_layer(m):
            return m, LAZY
        for entry in LAYERS:
            if isinstance(m, entry.types):
                return m, entry
    return None


# -- making an input -------------------------------------------------------------------------


class GuessError(NoInputError):
    """No single tensor can be guessed: `guess` is a template the user can start from."""

    def __init__(
        self, message: str, guess: Optional[str] = None, source: Optional[str] = None
    ) -> None:
        super().__init__(message)
        self.guess = guess
        # for a forward of several arguments, where the template comes from: a guess to try
        # (build_target.choose_input runs it; traced when the model accepts it)
        self.source = source


@dataclass(frozen=True)
class Guess:
    expr: str  # an input expression in `torch`
    source: str  # where it came from: "the first layer stem.0 (Conv2d)"


def takes_nothing(model: nn.Module) -> bool:
    """`forward(self)`: a forward with no parameters at all (no *args or **kwargs either)."""
    import inspect

    try:
        return not inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def nothing_said(model: nn.Module) -> str:
    """How an empty input is said: "none: Table.forward() takes no arguments"."""
    return f"none: {type(model).__name__}.forward() takes no arguments"


def _forward_parameters(model: nn.Module) -> list[Any]:
    """The forward's parameters (inspect.Parameter); none when its signature can't be read."""
    import inspect

    try:
        return list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return []


def unknown_names(model: nn.Module, names: Iterable[str]) -> tuple[list[str], list[str]]:
    """The names among `names` the forward takes no argument of, and the names it takes;
    none unknown when it takes `**kwargs` or its signature can't be read."""
    params = _forward_parameters(model)
    if not params or any(p.kind is p.VAR_KEYWORD for p in params):
        return [], []
    takes = [p.name for p in params if p.kind is not p.VAR_POSITIONAL]
    return [n for n in names if n not in takes], takes


def by_name(value: Mapping[str, Any], model: Optional[nn.Module]) -> tuple[tuple, dict]:
    """Call arguments for a dict of the forward's parameter names: keywords, except those of
    its positional-only parameters (`forward(self, x, /, *, t)`), which only take a position
    (one left out before a named one: its default). Beside `**kwargs`, which takes any
    name, a positional-only parameter with a default keeps its key as a keyword."""
    kwargs = dict(value)
    params = _forward_parameters(model) if model is not None else []
    anything = any(p.kind is p.VAR_KEYWORD for p in params)
    given = [
        p
        for p in params
        if p.kind is p.POSITIONAL_ONLY
        and p.name in kwargs
        and not (anything and p.default is not p.empty)
    ]
    if not given:
        return (), kwargs
    args = []
    for p in params[: params.index(given[-1]) + 1]:
        if p in given:
            args.append(kwargs.pop(p.name))
        elif p.default is not p.empty:
            args.append(p.default)
        else:  # (a required one not given: the call says so)
            break
    return tuple(args), kwargs


def fits_positionally(model: nn.Module, count: int) -> bool:
    """Whether the forward takes `count` positional arguments (True when it can't say)."""
    params = _forward_parameters(model)
    if not params or any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    return count <= sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def required_arguments(model: nn.Module) -> list[str]:
    """The forward's parameters a call must give (no default, not *args/**kwargs)."""
    import inspect

    params = _forward_parameters(model)
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and (p.kind in kinds or p.kind is inspect.Parameter.KEYWORD_ONLY)
    ]


def _keyword_only(model: nn.Module) -> set[str]:
    """The forward's keyword-only parameters (after `*`)."""
    import inspect

    return {p.name for p in _forward_parameters(model) if p.kind is inspect.Parameter.KEYWORD_ONLY}


def guess(model: nn.Module) -> Guess:
    """The first-layer guess for a forward that takes one tensor; GuessError when it takes
    several (never call those with a guess for one) or no layer says what it takes."""
    found = first_layer(model)
    one = None
    if found is not None:
        layer, entry = found
        one = _in_dtype(entry.make(layer, getattr(model, "config", None)), layer)
    required = required_arguments(model)
    if len(required) > 1:
        # keyword-only ones (`forward(self, x, *, t)`) can only be given as keywords: a dict
        # (every other one can be a keyword too)
        as_keywords = not _keyword_only(model).isdisjoint(required)
        each = [_for_argument(name, one) for name in required]
        if as_keywords:
            template = "{" + ", ".join(f"{n!r}: {e}" for n, e in zip(required, each)) + "}"
        else:
            template = "(" + ", ".join(each) + ")"
        source = None
        if found is not None and one is not None:
            source = f"the first layer {_where(model, found[0])}, for {', '.join(required)}"
        how = "a dict of keywords" if as_keywords else "a tuple"
        raise GuessError(
            f"{type(model).__name__}.forward({', '.join(required)}) takes {len(required)} "
            f"arguments: give them as {how}, e.g. {template}",
            template,
            source,
        )
    if found is None:
        raise GuessError(f"cannot tell what input {type(model).__name__} takes: {HOW_TO}")
    where = _where(model, found[0])
    if one is None:
        example = _LAZY_EXAMPLES.get(type(found[0]).__name__, "")
        how = how_to(example) if example else HOW_TO
        raise GuessError(
            f"cannot tell what input {type(model).__name__} takes: its first layer {where} is "
            f"lazy (its first forward sizes it); {how}"
        )
    tree = _forward_tree(model) if len(required) == 1 else None  # (read once: two uses)
    batch = keys_read(model, tree)
    if batch is not None:
        name, keys = batch
        read = ", ".join(f"{name}[{k!r}]" for k in keys)
        each = _own_inputs(model, tree, name, one)
        source = f"the layers that read {read}" if each else f"the first layer {where}, as {read}"
        return _keyword_if_must(model, required, Guess(_as_batch(one, keys, each), source))
    return _keyword_if_must(model, required, Guess(one, f"the first layer {where}"))


def _in_dtype(expr: Optional[str], layer: nn.Module) -> Optional[str]:
    """A `torch.randn(…)` guess in the dtype of the layer's weights when that is not float32
    (a model made `.half()`): a float32 input fails its first call."""
    if expr is None or not expr.startswith("torch.randn("):
        return expr
    weight = next((p for p in layer.parameters(recurse=False) if p.is_floating_point()), None)
    if weight is None or weight.dtype is torch.float32:
        return expr
    return f"{expr[:-1]}, dtype={weight.dtype})"


def _keyword_if_must(model: nn.Module, required: list[str], made: Guess) -> Guess:
    """The guess for a forward whose one argument is keyword-only (`forward(self, *, x)`)
    given by its name: a dict of keywords."""
    if len(required) == 1 and required[0] in _keyword_only(model):
        return Guess(f"{{{required[0]!r}: {made.expr}}}", made.source)
    return made


# names of a diffusion model's timestep argument: ids of a step, not the input's shape (not
# `steps`, often a count a loop runs for)
TIME_ARGUMENTS = frozenset(("t", "ts", "time", "times", "timestep", "timesteps"))


def _for_argument(name: str, one: Optional[str]) -> str:
    """One argument of a template for several: timesteps for `t`; for a graph network's
    `edge_index`, one edge from the one node the first layer's guess makes to itself; else
    the first layer's guess."""
    if name in TIME_ARGUMENTS:
        return "torch.randint(0, 1000, (1,))"
    if name == "edge_index":
        return "torch.tensor([[0], [0]])"
    return one or "torch.randn(1, 16)"


def _where(model: nn.Module, layer: nn.Module) -> str:
    """`blocks.0.up (Linear)`: the layer's path and class as the graph shows them (inside a
    wrapper, never `module.` or `_orig_mod.`; FSDP2's `FSDPLinear` is a Linear)."""
    named = list(model.named_modules())
    wrapping = find_wrappers(named)
    if wrapping is not None:
        path = wrapping.paths.get(id(layer), "")
        cls = wrapping.classes.get(id(layer), type(layer))
    else:
        path = next((p for p, m in named if m is layer), "")
        cls = type(layer)
    return f"{path} ({cls.__name__})" if path else cls.__name__


def keys_read(model: nn.Module, tree: Any = None) -> Optional[tuple[str, list[str]]]:
    """A forward that takes one batch dict: `(its argument's name, the string keys it reads by
    subscript)` — `batch["features"]`, never `batch.get("weight", …)`, which may be missing.
    None for any other forward (or one whose source can't be read). `tree`: its syntax tree,
    when read already (`_forward_tree`)."""
    import ast

    required = required_arguments(model)
    if len(required) != 1:
        return None
    name = required[0]
    if tree is None:
        tree = _forward_tree(model)
    if tree is None:
        return None
    keys: list[str] = []
    for node in ast.walk(tree):
        key = _key_of(node, name)
        if key is not None and isinstance(getattr(node, "ctx", None), ast.Load) and key not in keys:
            keys.append(key)
    return (name, keys) if keys else None


def _forward_tree(model: nn.Module) -> Optional[Any]:
    """The syntax tree of the model's forward; None when its source can't be read."""
    import ast
    import inspect
    import textwrap
    import tokenize

    try:
        source = textwrap.dedent(inspect.getsource(inspect.unwrap(type(model).forward)))
        return ast.parse(source)
    except (OSError, TypeError, SyntaxError, ValueError, IndexError, tokenize.TokenError):
        # (lines changed on disk since the import: inspect reads the file as it is now)
        return None


def _key_of(node: Any, name: str) -> Optional[str]:
    """`k` when `node` is `name["k"]`."""
    import ast

    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == name
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


def _own_inputs(model: nn.Module, tree: Any, name: str, first: Optional[str]) -> dict[str, str]:
    """For a key of the batch dict that a layer of the model reads first hand
    (`self.enc(batch["meta"])`), the input that layer's first layer takes; only the keys
    whose input is not the first layer's guess `first`. `tree`: the forward's syntax tree."""
    import ast

    made: dict[str, str] = {}
    self_name = _self_name(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        key = _key_of(node.args[0], name)
        if key is None or key in made:
            continue
        layer = _attribute_of_self(model, node.func, self_name)
        found = first_layer(layer) if layer is not None else None
        if found is None or found[1] is LAZY:
            continue
        try:
            expr = found[1].make(found[0], getattr(model, "config", None))
        except Exception:  # (a layer whose input can't be made: the first layer's stays)
            continue
        if expr:
            made[key] = expr
    return {k: v for k, v in made.items() if v != first}


def _self_name(tree: Any) -> str:
    """What the forward calls its module (`def forward(s, batch)`: `s`), from its syntax tree."""
    import ast

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args:
            return node.args.args[0].arg
    return "self"


def _attribute_of_self(model: nn.Module, func: Any, self_name: str) -> Optional[nn.Module]:
    """The submodule `self.a.b` names (`self`: the forward's own name for it), for a call's
    `func`; None for anything else."""
    from .definitions import dotted

    self_, *names = (dotted(func) or "").split(".")
    if self_ != self_name or not names:
        return None
    found: Any = model
    for attr in names:
        found = getattr(found, attr, None)
    return found if isinstance(found, nn.Module) else None


def _as_batch(expr: str, keys: list[str], each: Optional[dict[str, str]] = None) -> str:
    """One input expression as the forward's one batch dict: `({'features': expr},)`; a key
    in `each` gets its own."""
    each = each or {}
    return "({" + ", ".join(f"{k!r}: {each.get(k, expr)}" for k in keys) + "},)"


def alternatives(model: nn.Module) -> list[str]:
    """Other input expressions to try when the first-layer guess makes the forward raise: a
    later layer may fix the image size (a Linear after flatten) or a sequence length; a
    BatchNorm in training mode needs a batch of two (the guess's, then each size's)."""
    found = first_layer(model)
    if found is None:
        return []
    layer, entry = found
    try:
        guessed = entry.make(layer, getattr(model, "config", None))
    except Exception:
        guessed = None
    sizes = _sizes(layer)
    exprs = [(e, False) for e in sizes]
    exprs += [(two, True) for e in ([guessed] if guessed else []) + sizes if (two := _two(e)) != e]
    # (a batch dict is one argument: a forward of several needs no reading of its source)
    tree = _forward_tree(model) if len(required_arguments(model)) == 1 else None
    batch = keys_read(model, tree) if tree is not None else None
    if batch is None:
        return [e for e, _ in exprs]
    # the keys other layers read keep their own inputs (a batch of two with the others)
    own = _own_inputs(model, tree, batch[0], guessed)
    return [
        _as_batch(e, batch[1], {k: _two(v) if two else v for k, v in own.items()})
        for e, two in exprs
    ]


def _two(expr: str) -> str:
    """A guess with a batch of two: `torch.randn(2, …)`, `torch.randint(0, V, (2, …))`."""
    if expr.startswith("torch.randn(1, "):
        return "torch.randn(2, " + expr[len("torch.randn(1, ") :]
    if expr.startswith("torch.randint(") and ", (1, " in expr:
        return expr.replace(", (1, ", ", (2, ", 1)
    return expr


def _sizes(layer: nn.Module) -> list[str]:
    """Other sizes of a convolution's input: image sides, sequence lengths, clip shapes."""
    exprs: list[str] = []
    if isinstance(layer, (nn.Conv2d, nn.ConvTranspose2d)):
        c = layer.in_channels
        exprs = [_randn(1, c, side, side) for side in (32, 28, 224, 96, 128, 256, 299, 512)]
    elif isinstance(layer, (nn.Conv1d, nn.ConvTranspose1d)):
        c = layer.in_channels
        exprs = [_randn(1, c, n) for n in (16, 32, 128, 256, 1024, 16000)]
        if c == 1:  # a waveform [batch, samples] the forward gives its channel (unsqueeze)
            exprs += [_randn(1, n) for n in (16000, 1024)]
    elif isinstance(layer, (nn.Conv3d, nn.ConvTranspose3d)):
        c = layer.in_channels
        exprs = [_randn(1, c, d, s, s) for d, s in ((16, 112), (8, 64), (16, 224))]
    return exprs


def first_that_runs(model: nn.Module, exprs: list[str], device: str = "cpu") -> Optional[str]:
    """The first expression the model's plain forward accepts, without side effects (the
    model's state, RNG and torch's settings as before). Only used after a guess failed."""
    named = list(model.named_modules())
    for expr in exprs:
        state = ModelState(named)
        state.keep_held()
        try:
            with torch.no_grad(), torch.device(device):
                x = eval(expr, {"torch": torch})  # noqa: S307 - our own expression
                model(*x) if isinstance(x, tuple) else model(x)
            return expr
        except Exception:
            continue
        finally:
            state.restore()
    return None


def guess_expression(model: nn.Module) -> Optional[str]:
    """What an input box can start with: the guess, or the template for several arguments."""
    made = hf_input(model)  # a transformers model: from its config
    if made is not None:
        return made.expr
    if takes_nothing(model):
        return "()"
    try:
        return guess(model).expr
    except GuessError as exc:
        return exc.guess


def guess_from_first_layer(model: nn.Module, device: str = "cpu") -> Optional[Any]:
    """The first-layer guess as a tensor (None when there is none)."""
    try:
        expr = guess(model).expr
    except GuessError:
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
            return (*by_name(v, model), f"{k} (keywords {', '.join(v)})")
    batch = keys_read(model)
    if batch is not None:  # the forward takes the whole dict, never a tensor out of it
        keys = batch[1]
        for k, v in named:
            if isinstance(v, Mapping) and all(key in v for key in keys):
                return (v,), {}, f"{k} ({describe_value(v)})"
        return None
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


def input_expression(value: Any, depth: int = 0) -> Optional[str]:
    """An expression that makes an input of the same kind and shape as `value` (a tensor, a
    tuple or list of positionals, a dict of keywords): `torch.randn(2, 16)`,
    `torch.randint(0, 8, (1, 3))` for ids up to 7: an input box's placeholder for an input
    given as a value (a factory's example, `example_input_array`), whose values no
    expression gives again; None for anything else (never raises: it describes, it does not
    check)."""
    try:
        return _expression(value, depth)
    except Exception:  # a tensor that won't say its sizes or values (nested, uint16 …)
        return None


def _expression(value: Any, depth: int) -> Optional[str]:
    if isinstance(value, torch.Tensor):
        return _tensor_expression(value)
    if depth >= 2:
        return None
    if isinstance(value, (tuple, list)) and 0 < len(value) <= 8:
        items = [input_expression(v, depth + 1) for v in value]
        if any(i is None for i in items):
            return None
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"  # type: ignore[arg-type]
    if type(value) is dict and 0 < len(value) <= 16 and all(type(k) is str for k in value):
        items = [input_expression(v, depth + 1) for v in value.values()]
        if any(i is None for i in items):
            return None
        return "{" + ", ".join(f"{k!r}: {i}" for k, i in zip(value, items)) + "}"
    return None


def _tensor_expression(t: torch.Tensor) -> Optional[str]:
    if type(t) not in (torch.Tensor, torch.nn.Parameter) or t.layout is not torch.strided:
        return None  # a subclass, nested, sparse: no plain expression makes one
    if t.is_quantized:
        return None
    shape = [int(n) for n in t.shape]
    dtype = t.dtype
    if dtype.is_floating_point:
        sizes = ", ".join(map(str, shape)) if shape else "()"
        kind = "" if dtype == torch.float32 else f", dtype={dtype}"
        return f"torch.randn({sizes}{kind})"
    size = f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"
    if dtype == torch.bool:
        return f"torch.ones({', '.join(map(str, shape)) or '()'}, dtype=torch.bool)"
    if dtype.is_complex:
        return None
    lo, hi = 0, 1
    if t.numel() and not t.is_meta:
        lo, hi = min(0, int(t.min())), max(1, int(t.max()) + 1)
    kind = "" if dtype == torch.int64 else f", dtype={dtype}"
    return f"torch.randint({lo}, {hi}, {size}{kind})"


def describe_value(v: Any) -> str:
    """`tensor [2, 3] float32`, a dict's keys and values, or the type's name."""
    if isinstance(v, torch.Tensor):
        dtype = str(v.dtype).replace("torch.", "")
        try:
            return f"tensor {list(v.shape)} {dtype}"
        except Exception:  # a nested tensor's ragged sizes
            return f"tensor (nested) {dtype}"
    if type(v) is dict and len(v) <= 8:
        return "{" + ", ".join(f"{k}: {describe_value(x)}" for k, x in v.items()) + "}"
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
