"""A zoo of small architectures for the tracer tests.

Every factory returns a fresh `(model, args, kwargs)` with random weights (seeded).
Forwards written here keep one call per line: test_sites.py checks that an op's
`site.line` points at the line of this file that contains the call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

Factory = Callable[[], tuple[nn.Module, tuple, dict]]
ZOO: dict[str, Factory] = {}


def register(name: str) -> Callable[[Factory], Factory]:
    def deco(fn: Factory) -> Factory:
        ZOO[name] = fn
        return fn

    return deco


def build(name: str) -> tuple[nn.Module, tuple, dict]:
    torch.manual_seed(0)
    return ZOO[name]()


def clockless_wire(g: Any) -> dict[str, Any]:
    """A graph on the wire less what a clock says (the trace's time, each call's), for
    tests that compare two traces of one model."""
    wire = g.to_wire()
    wire["stats"].pop("trace_ms", None)
    for item in wire["nodes"] + wire["groups"]:
        if item.get("cost"):
            item["cost"].pop("time_ns")
    return wire


def structure_trace(name: str, costs: bool) -> Callable[[], Any]:
    """Builds zoo model `name` once; the function returned traces it (values off, costs as
    asked, an error kept in the graph), for tests that trace one model two ways."""
    from torchscope.tracer import trace_call

    model, args, kwargs = build(name)
    return lambda: trace_call(model, args, kwargs, values=False, costs=costs, raise_errors=False)


# ---------------------------------------------------------------------------
# plain torch models
# ---------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        h = self.fc1(x)
        h = torch.relu(h)
        return self.fc2(h)


@register("mlp")
def mlp():
    return MLP(), (torch.randn(2, 16),), {}


class ConvBN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8, momentum=0.5)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(8, momentum=0.5)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        h = self.conv1(x)
        h = self.bn1(h)
        h = torch.relu(h)
        h = self.conv2(h)
        h = self.bn2(h)
        h = h.relu()
        h = self.pool(h)
        h = h.flatten(1)
        return self.head(h)


@register("cnn_bn_eval")
def cnn_bn_eval():
    return ConvBN().eval(), (torch.randn(2, 3, 16, 16),), {}


@register("cnn_bn_train")
def cnn_bn_train():
    # train mode: BatchNorm updates running_mean/var/num_batches_tracked in the forward
    return ConvBN().train(), (torch.randn(4, 3, 16, 16),), {}


class ResBlock(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = out + x
        return self.relu(out)


class ResidualCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(ResBlock(8), ResBlock(8), ResBlock(8))
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        h = self.stem(x)
        h = self.blocks(h)
        h = h.mean(dim=(2, 3))
        return self.head(h)


@register("residual_cnn")
def residual_cnn():
    return ResidualCNN().eval(), (torch.randn(1, 3, 12, 12),), {}


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.gru = nn.GRU(16, 12, num_layers=2, batch_first=True)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        out2, h2 = self.gru(out)
        return out2, h2


@register("lstm_gru")
def lstm_gru():
    return Recurrent().eval(), (torch.randn(2, 5, 8),), {}


@register("transformer_encoder")
def transformer_encoder():
    layer = nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
    )
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    # train mode (dropout 0): eval + no_grad would take torch's fused fast path, which
    # torch itself disables whenever a torch-function mode is active
    return model.train(), (torch.randn(2, 6, 32),), {}


# ---------------------------------------------------------------------------
# models with a specific tracing feature
# ---------------------------------------------------------------------------


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 8)
        self.pos = nn.Linear(8, 8)
        self.neg = nn.Linear(8, 4)
        self.loop = nn.Linear(8, 8)

    def forward(self, x):
        h = self.inp(x)
        if h.sum() > 0:
            h = self.pos(h)
        else:
            h = self.neg(h)
        steps = int(x.abs().sum().item()) % 3 + 2
        for _ in range(steps):
            h = self.loop(h) if h.shape[-1] == 8 else h
        return h


@register("data_dependent")
def data_dependent():
    return DataDependent().eval(), (torch.randn(3, 8),), {}


class SharedTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.shared = nn.Linear(8, 8)
        self.alias = self.shared  # the same module under a second name
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        h = self.shared(x)
        h = torch.tanh(h)
        h = self.shared(h)
        h = self.alias(h)
        return self.out(h)


@register("shared_module")
def shared_module():
    return SharedTwice().eval(), (torch.randn(2, 8),), {}


class WithModuleDict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.heads = nn.ModuleDict({"cls": nn.Linear(16, 3), "reg": nn.Linear(16, 1)})

    def forward(self, x):
        h = self.body(x)
        h = torch.sigmoid(h)
        cls = self.heads["cls"](h)
        reg = self.heads["reg"](h)
        return {"cls": cls, "reg": reg}


@register("module_dict")
def module_dict():
    return WithModuleDict().eval(), (torch.randn(2, 8),), {}


class Nest(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.inner = Nest(depth - 1) if depth > 1 else nn.Identity()

    def forward(self, x):
        h = self.lin(x)
        h = torch.relu(h)
        return self.inner(h)


@register("deep_nesting")
def deep_nesting():
    return Nest(7).eval(), (torch.randn(1, 4),), {}


class InPlace(nn.Module):
    """In-place ops on a tensor and on a view of it; readers must get their edge from the write."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        y = self.lin(x)
        y.add_(1)
        a = y * 2
        y[0] = 0
        b = y.sum(dim=1)
        v = y.view(-1)
        v.mul_(3)
        c = y.exp()
        return a, b, c


@register("inplace_view")
def inplace_view():
    return InPlace().eval(), (torch.randn(3, 6),), {}


class WithIdentity(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.skip = nn.Identity()
        self.post = nn.Linear(8, 8)

    def forward(self, x):
        h = self.pre(x)
        h = self.skip(h)
        return self.post(h)


@register("identity")
def identity():
    return WithIdentity().eval(), (torch.randn(2, 8),), {}


class Gated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.gate = nn.Parameter(torch.randn(8))
        self.register_buffer("offset", torch.ones(8))

    def forward(self, x):
        h = self.proj(x)
        h = h * self.gate
        h = h + self.offset
        return h


@register("param_direct")
def param_direct():
    return Gated().eval(), (torch.randn(2, 8),), {}


@dataclasses.dataclass
class DCOut:
    logits: torch.Tensor
    hidden: torch.Tensor
    extra: Any = None


class DataclassOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = self.enc(x)
        logits = self.head(h)
        return DCOut(logits=logits, hidden=h)


@register("dataclass_out")
def dataclass_out():
    return DataclassOut().eval(), (torch.randn(2, 8),), {}


class NestedInputs(nn.Module):
    """Positional, nested tuple, nested dict and keyword-only tensor inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x, pair, batch=None, *, scale=None):
        h = self.a(x)
        h = h + pair[0]
        h = h * pair[1][0]
        h = self.b(h)
        h = h + batch["bias"]
        h = h * scale
        return h, [h.sum(), batch["ids"]]


@register("nested_inputs")
def nested_inputs():
    x = torch.randn(2, 4)
    pair = (torch.randn(2, 4), (torch.randn(4),))
    batch = {"bias": torch.randn(4), "ids": torch.arange(6).reshape(2, 3)}
    return NestedInputs().eval(), (x, pair), {"batch": batch, "scale": torch.tensor(2.0)}


class SetsAttribute(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.counter = 0

    def forward(self, x):
        h = self.lin(x)
        self.cache = h
        self.counter += 1
        return h


@register("sets_attribute")
def sets_attribute():
    return SetsAttribute().eval(), (torch.randn(2, 4),), {}


def _tag(*names):
    """A class decorator (transformers decorates most of its modules)."""

    def deco(cls):
        cls.tags = names
        return cls

    return deco


@_tag(
    "decorated",
    "multi-line decorator",
)
class DecoratedKwargs(nn.Module):
    """A decorated class; submodules called with keyword tensor arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.skip = nn.Identity()
        self.norm = nn.LayerNorm(6)

    def forward(self, x, mask=None):
        h = self.proj(input=x)
        h = self.skip(input=h)
        h = self.norm(input=h)
        return h.masked_fill(mask, 0.0)


@register("decorated_kwargs")
def decorated_kwargs():
    x = torch.randn(2, 6)
    return DecoratedKwargs().eval(), (x,), {"mask": x > 1}


class VarArgs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, *xs, **extras):
        h = self.lin(xs[0])
        h = h + xs[1]
        h = h * extras["weight"]
        return h


@register("varargs")
def varargs():
    return VarArgs().eval(), (torch.randn(2, 3), torch.randn(2, 3)), {"weight": torch.randn(3)}


class CaughtError(nn.Module):
    """Exceptions raised and caught inside the forward: the forward itself succeeds."""

    def __init__(self) -> None:
        super().__init__()
        self.fragile = nn.Linear(5, 3)
        self.backup = nn.Linear(4, 3)

    def forward(self, x):
        try:
            h = self.fragile(x)
        except RuntimeError:
            h = self.backup(x)
        try:
            h = torch.matmul(h, torch.ones(4, 4))
        except RuntimeError:
            h = h * 2
        return h


@register("caught_error")
def caught_error():
    return CaughtError().eval(), (torch.randn(2, 4),), {}


# -- errors raised mid-forward ---------------------------------------------------


class BadMatmul(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Linear(8, 8)

    def forward(self, x):
        h = self.w(x)
        h = torch.tanh(h)
        return torch.matmul(h, torch.ones(5, 3))


class ErrorByOp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(8, 8)
        self.block = BadMatmul()
        self.never = nn.Linear(3, 3)

    def forward(self, x):
        h = self.first(x)
        h = self.block(h)
        return self.never(h)


@register("error_op")
def error_op():
    return ErrorByOp().train(), (torch.randn(2, 8),), {}


class Raiser(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x):
        h = self.lin(x)
        h = self.bn(h)
        if h.shape[0] > 1:
            raise ValueError("batch too large for Raiser")
        return h


class ErrorByRaise(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.stage = nn.Sequential(nn.ReLU(), Raiser())

    def forward(self, x):
        h = self.pre(x)
        self.partial = h
        return self.stage(h)


@register("error_raise")
def error_raise():
    return ErrorByRaise().train(), (torch.randn(4, 8),), {}


ERRORS = {"error_op": RuntimeError, "error_raise": ValueError}


# -- folding helpers ---------------------------------------------------------------


class Block(nn.Module):
    def __init__(self, dim_in: int, dim_out: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim_in, dim_out)
        self.norm = nn.LayerNorm(dim_out)

    def forward(self, x):
        h = self.fc(x)
        h = self.norm(h)
        return torch.nn.functional.gelu(h)


class GrowingBlocks(nn.Module):
    """Blocks of the same class whose shapes differ: no folding group over them."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(8, 12), Block(12, 16), Block(16, 20)])

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


class ManyOps(nn.Module):
    """Hundreds of cheap ops: for the cancel / time-budget checks."""

    def __init__(self, n: int = 300) -> None:
        super().__init__()
        self.n = n
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        for _ in range(self.n):
            h = h + 1
        return h


# ---------------------------------------------------------------------------
# transformers models (random weights from small configs)
# ---------------------------------------------------------------------------


def _ids(n: int = 6, vocab: int = 100, batch: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, n))


@register("gpt2")
def gpt2(n_layer: int = 2):
    from transformers import GPT2Config, GPT2Model

    model = GPT2Model(
        GPT2Config(
            n_layer=n_layer,
            n_embd=32,
            n_head=2,
            vocab_size=100,
            n_positions=32,
            bos_token_id=0,
            eos_token_id=1,
        )
    )
    return model.eval(), (_ids(),), {}


@register("bert")
def bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )
    ids = _ids()
    return BertModel(cfg).eval(), (ids,), {"attention_mask": torch.ones_like(ids)}


@register("t5")
def t5():
    from transformers import T5Config, T5Model

    cfg = T5Config(
        vocab_size=100,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        decoder_start_token_id=0,
    )
    return T5Model(cfg).eval(), (), {"input_ids": _ids(7), "decoder_input_ids": _ids(4)}


@register("vit")
def vit():
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(
        image_size=16,
        patch_size=4,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
    )
    return ViTModel(cfg).eval(), (torch.randn(1, 3, 16, 16),), {}


@register("resnet")
def resnet():
    from transformers import ResNetConfig, ResNetModel

    cfg = ResNetConfig(
        num_channels=3,
        embedding_size=8,
        hidden_sizes=[8, 16],
        depths=[1, 2],
        layer_type="basic",
    )
    return ResNetModel(cfg).eval(), (torch.randn(1, 3, 32, 32),), {}


def llama_config(hidden: int = 32, layers: int = 2, vocab: int = 100):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )


@register("llama")
def llama():
    from transformers import LlamaModel

    return LlamaModel(llama_config()).eval(), (_ids(),), {}


@register("mixtral")
def mixtral():
    from transformers import MixtralConfig, MixtralModel

    cfg = MixtralConfig(
        vocab_size=100,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        max_position_embeddings=64,
    )
    return MixtralModel(cfg).eval(), (_ids(8),), {}


@register("whisper")
def whisper():
    from transformers import WhisperConfig, WhisperModel

    cfg = WhisperConfig(
        vocab_size=100,
        num_mel_bins=16,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=16,
        max_target_positions=16,
        decoder_start_token_id=1,
        pad_token_id=0,
    )
    kwargs = {"input_features": torch.randn(1, 16, 32), "decoder_input_ids": _ids(4)}
    return WhisperModel(cfg).eval(), (), kwargs


@register("clip")
def clip():
    from transformers import CLIPConfig, CLIPModel

    cfg = CLIPConfig(
        text_config={
            "vocab_size": 100,
            "hidden_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 64,
            "max_position_embeddings": 16,
            "bos_token_id": 0,
            "eos_token_id": 1,
            "pad_token_id": 1,
        },
        vision_config={
            "image_size": 16,
            "patch_size": 8,
            "hidden_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 64,
        },
        projection_dim=16,
    )
    kwargs = {"input_ids": _ids(5), "pixel_values": torch.randn(1, 3, 16, 16)}
    return CLIPModel(cfg).eval(), (), kwargs


# models whose forward succeeds (the structural tests run over these)
WORKING = [name for name in ZOO if name not in ERRORS]
TRANSFORMERS = ["gpt2", "bert", "t5", "vit", "resnet", "llama", "mixtral", "whisper", "clip"]


# ---------------------------------------------------------------------------
# independent ground truth: our own per-module hooks on a plain forward
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class TensorSeen:
    shape: tuple[int, ...]
    dtype: str
    ident: int  # id() of the tensor object (valid while `keep` holds it)
    version: int


@dataclasses.dataclass
class CallSeen:
    path: str
    call: int
    qualname: str
    module: nn.Module
    depth: int
    parent: int  # index (in call order) of the call that was open around this one; -1 at top
    inputs: list[TensorSeen] = dataclasses.field(default_factory=list)
    outputs: list[TensorSeen] = dataclasses.field(default_factory=list)
    finished: int = -1  # order in which the call returned


def flat_tensors(value: Any, depth: int = 0) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 8:
        return []
    if isinstance(value, dict):
        return [t for v in value.values() for t in flat_tensors(v, depth + 1)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flat_tensors(v, depth + 1)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            t
            for f in dataclasses.fields(value)
            for t in flat_tensors(getattr(value, f.name), depth + 1)
        ]
    return []


def named_outputs(
    value: Any, name: str = "output", depth: int = 0
) -> list[tuple[str, torch.Tensor]]:
    """Output names as docs/graph-format.md spells them."""
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if depth > 8:
        return []
    top = depth == 0
    out: list[tuple[str, torch.Tensor]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += named_outputs(v, str(k) if top else f"{name}.{k}", depth + 1)
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            out += named_outputs(v, f"{name}[{i}]", depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            out += named_outputs(
                getattr(value, f.name), f.name if top else f"{name}.{f.name}", depth + 1
            )
    return out


def _seen(t: torch.Tensor) -> TensorSeen:
    return TensorSeen(tuple(t.shape), str(t.dtype).removeprefix("torch."), id(t), t._version)


def record_calls(model: nn.Module, args: tuple, kwargs: dict) -> tuple[list[CallSeen], Any, list]:
    """Run `model` under no_grad with our own forward pre/post hooks on every module.

    Returns (calls in call order, the result, keep-alive list). Restores nothing: pass a copy
    when the forward has side effects you care about.
    """
    paths = {id(m): p for p, m in model.named_modules()}
    calls: list[CallSeen] = []
    counts: dict[int, int] = {}
    open_calls: list[CallSeen] = []
    keep: list[Any] = []
    finished = [0]

    def pre(mod, a, kw):
        n = counts.get(id(mod), 0)
        counts[id(mod)] = n + 1
        cls = type(mod)
        parent = calls.index(open_calls[-1]) if open_calls else -1
        c = CallSeen(
            paths[id(mod)], n, f"{cls.__module__}.{cls.__qualname__}", mod, len(open_calls), parent
        )
        ts = flat_tensors((a, kw))
        keep.append(ts)
        c.inputs = [_seen(t) for t in ts]
        calls.append(c)
        open_calls.append(c)

    def post(mod, a, kw, result=None):
        for i in range(len(open_calls) - 1, -1, -1):
            if open_calls[i].module is mod:
                c = open_calls.pop(i)
                break
        ts = flat_tensors(result)
        keep.append(ts)
        c.outputs = [_seen(t) for t in ts]
        c.finished = finished[0]
        finished[0] += 1

    handles = []
    for _, m in model.named_modules():
        handles.append(m.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(m.register_forward_hook(post, with_kwargs=True, always_call=True))
    try:
        with torch.no_grad():
            result = model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    keep.append(result)
    return calls, result, keep


# -- reading a Graph (no tracer logic: only the documented fields) -------------------


def children_map(graph) -> dict[Any, list[int]]:
    out: dict[Any, list[int]] = {}
    for n in graph.nodes:
        out.setdefault(n.parent, []).append(n.id)
    return out


def subtree(graph, nid: int) -> set[int]:
    kids = children_map(graph)
    seen = {nid}
    todo = [nid]
    while todo:
        for c in kids.get(todo.pop(), []):
            seen.add(c)
            todo.append(c)
    return seen


def ancestors(graph, nid: int) -> list[int]:
    out = []
    p = graph.nodes[nid].parent
    while p is not None:
        out.append(p)
        p = graph.nodes[p].parent
    return out


def module_nodes(graph) -> list:
    return [n for n in graph.nodes if n.kind == "module"]


def record_ops(model: nn.Module, args: tuple, kwargs: dict) -> list[tuple[str, int]]:
    """(short name, index of the innermost running module call) of every outermost torch call
    that takes a tensor and returns one (or writes its first argument): our own minimal
    TorchFunctionMode next to per-module hooks, as an independent reference for op parents."""
    from torch.overrides import TorchFunctionMode

    open_calls: list[int] = []
    n_calls = [0]
    ops: list[tuple[str, int]] = []

    def pre(mod, a):
        open_calls.append(n_calls[0])
        n_calls[0] += 1

    def post(mod, a, result):
        open_calls.pop()

    class Ops(TorchFunctionMode):
        def __torch_function__(self, func, types, a=(), kw=None):
            result = func(*a, **(kw or {}))
            name = getattr(func, "__name__", "") or ""
            takes = flat_tensors((a, kw or {}))
            gives = flat_tensors(result) if isinstance(result, (torch.Tensor, tuple, list)) else []
            writes = name in ("__setitem__",) or (name.endswith("_") and not name.startswith("_"))
            if takes and (gives or (result is None and writes)):
                short = name.strip("_") if name.startswith("__") else name
                ops.append((short, open_calls[-1] if open_calls else -1))
            return result

    handles = []
    for _, m in model.named_modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post, always_call=True))
    try:
        with torch.no_grad(), Ops():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return ops
