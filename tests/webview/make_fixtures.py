"""Write the graphs and standalone HTML pages the browser tests open.

Models are built from transformers configs with random weights: nothing is downloaded.
Usage: python tests/webview/make_fixtures.py [--html-only] [OUT_DIR]
(OUT_DIR defaults to tests/artifacts/fixtures)
--html-only re-renders the pages from the saved graphs (after a viewer rebuild);
--large also writes a 32-layer Llama (hub tensors in every layer) for timing by hand.
Besides traced models: crafted files no tracer writes (a 10,000-deep chain of module calls,
a model too big to draw expanded), built as wire maps.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgpack
import torch
from torch import nn

import torchscope
from torchscope.html import render_html


class Boom(nn.Module):
    """Fails half-way: the graph stops at the failing call."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        return self.fc2(h)  # 16 features into a Linear(32, ...): raises


HOSTILE_NAME = "<img src=x onerror=alert(1)>"


def _double(self: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return x * 2


# A class whose name is markup: the viewer shows it as the module's name.
Evil = type(HOSTILE_NAME, (nn.Module,), {"forward": _double})


class Hostile(nn.Module):
    """A module whose attribute path and class-like name are markup."""

    def __init__(self) -> None:
        super().__init__()
        self.add_module(HOSTILE_NAME, Evil())
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        return getattr(self, HOSTILE_NAME)(x)


class RootBlock(nn.Module):
    """sqrt(|fc(x)| * sign): the block whose sign is -1 makes NaN; all blocks fold as ×N."""

    def __init__(self, sign: float) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("sign", torch.tensor(sign))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        root = torch.sqrt(h.abs() * self.sign)
        return x + torch.tanh(root)


class NanDeep(nn.Module):
    """NaN made deep inside (the 4th of 6 folded blocks): "Find NaN origin" must unfold it."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(4, 8)
        self.blocks = nn.Sequential(*[RootBlock(-1.0 if i == 3 else 1.0) for i in range(6)])
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.embed(x)))


class Flat(nn.Module):
    """`for _ in range(n): x = x + 1`: n ops at one level (an unrolled loop)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.n):
            x = x + 1
        return x


class Wide(nn.Module):
    """Parallel branches side by side: wider than tall, opened or not."""

    def __init__(self, branches: int = 5) -> None:
        super().__init__()
        self.branches = nn.ModuleList(
            nn.Sequential(nn.Linear(8, 8 + i), nn.GELU(), nn.Linear(8 + i, 4))
            for i in range(branches)
        )
        self.head = nn.Linear(4 * branches, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([b(x) for b in self.branches], dim=-1))


HUGE_NAME = "N" * 1_000_000

# A class whose name is a megabyte long, under an attribute name as long.
Huge = type(HUGE_NAME, (nn.Module,), {"forward": _double})


class HugeLabel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.add_module("p" * 1_000_000, Huge())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return getattr(self, "p" * 1_000_000)(x)


class WritesBehindTorch(nn.Module):
    """Writes its weight through a numpy view made before the trace: nothing can undo it, so
    the graph carries a warning."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.view = self.fc.weight.detach().numpy()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.view[:] = 1.0
        return self.fc(x)


class CmpBlock(nn.Module):
    """A residual block; `gelu` swaps its activation (one changed block of six)."""

    def __init__(self, gelu: bool = False) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.act = nn.GELU() if gelu else nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.act(self.fc(x))


class Cmp(nn.Module):
    """Two versions of one model for the compare page. After the edit: block 3's activation
    is a GELU (a change inside a ×6 group), the norm is gone (removed), a dropout is new
    (added) and the head is wider (changed)."""

    def __init__(self, after: bool) -> None:
        super().__init__()
        self.after = after
        self.embed = nn.Linear(8, 16)
        self.blocks = nn.Sequential(*[CmpBlock(gelu=after and i == 3) for i in range(6)])
        if after:
            self.drop = nn.Dropout(0.1)
        else:
            self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 6 if after else 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.blocks(self.embed(x))
        h = self.drop(h) if self.after else self.norm(h)
        return self.head(h)


def compare_page() -> bytes:
    """The compare view of Cmp before and after its edit (as `torchscope diff --format html`)."""
    from torchscope.compare import compare_view
    from torchscope.diff import diff_graphs

    x = torch.randn(2, 8)
    # the structure only: each version's own random weights would change every value
    a = torchscope.trace(Cmp(after=False).eval(), x, values=False)
    b = torchscope.trace(Cmp(after=True).eval(), x, values=False)
    return compare_view(diff_graphs(a, b), "cmp.py:Cmp (HEAD)", "cmp.py:Cmp").to_msgpack()


def compare_inner_page() -> bytes:
    """A comparison whose edit stays inside: block 1 of three got a GELU, so the input and
    the output are the same on both sides."""
    from torchscope.compare import compare_view
    from torchscope.diff import diff_graphs

    x = torch.randn(2, 16)
    a, b = (
        torchscope.trace(
            nn.Sequential(*[CmpBlock(gelu=after and i == 1) for i in range(3)]).eval(),
            x,
            values=False,
        )
        for after in (False, True)
    )
    return compare_view(diff_graphs(a, b), "inner.py:Net (HEAD)", "inner.py:Net").to_msgpack()


class Hub(nn.Module):
    """One tensor (m) read by many calls: drawn once, the other reads as reference boxes."""

    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.a, self.b, self.c = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.pre(x) * 2
        h = torch.relu(self.a(x) + m) * m
        h = torch.maximum(torch.tanh(self.b(h) - m), m)
        h = torch.minimum(self.c(h), m)
        return torch.hypot(torch.atan2(torch.sigmoid(h), m), m)


class CmpHead(nn.Module):
    """The head of CmpRaised: wider after the edit, and raising after its layer there."""

    def __init__(self, after: bool) -> None:
        super().__init__()
        self.after = after
        self.fc = nn.Linear(16, 6 if after else 4)

    def extra_repr(self) -> str:
        return f"width={6 if self.after else 4}"  # (the module itself changed, not only its fc)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if self.after:
            raise ValueError("the edited head fails here")
        return y


class CmpRaised(nn.Module):
    def __init__(self, after: bool) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.head = CmpHead(after)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.embed(x)))


def compare_raised_page(a_raised: bool = False) -> bytes:
    """A comparison whose version b raised inside a module the edit changed (the head); with
    `a_raised`, the other way round: version a (HEAD) raised, b is fixed."""
    from torchscope.compare import compare_view
    from torchscope.diff import diff_graphs

    x = torch.randn(2, 8)
    fine = torchscope.trace(CmpRaised(after=False).eval(), x, values=False)
    try:
        torchscope.trace(CmpRaised(after=True).eval(), x, values=False)
    except ValueError as e:
        raised = e.torchscope_graph  # type: ignore[attr-defined]
    else:
        raise SystemExit("the edited CmpRaised did not raise")
    a, b = (raised, fine) if a_raised else (fine, raised)
    return compare_view(
        diff_graphs(a, b), "raised.py:CmpRaised (HEAD)", "raised.py:CmpRaised"
    ).to_msgpack()


def _wire(nodes: list[dict], edges: list[dict], name: str) -> bytes:
    model = {"name": name, "qualname": f"crafted.{name}", "params": 0, "device": "cpu", "dtype": ""}
    stats = {"trace_ms": 0.0, "ops": 0, "modules": 0}
    graph = {"format": "torchscope.graph", "version": 1, "model": model, "nodes": nodes}
    return msgpack.packb({**graph, "edges": edges, "groups": [], "error": None, "stats": stats})


def _node(i: int, kind: str, name: str, parent: int | None, path: str = "") -> dict:
    where = {"id": i, "kind": kind, "name": name, "parent": parent, "path": path}
    return {**where, "target": "", "call": 0, "site": None, "defn": None, "params": 0, "attrs": {}}


def crafted_deep(depth: int = 10_000) -> bytes:
    """A chain of `depth` module calls, each inside the one before, around one op."""
    nodes = [_node(0, "input", "x", None)]
    for i in range(depth):
        nodes.append(_node(i + 1, "module", f"M{i}", i if i else None, f"m{i}"))
    nodes.append(_node(depth + 1, "op", "relu", depth))
    nodes.append(_node(depth + 2, "output", "output", None))
    edge = {"shape": [2], "dtype": "float32"}
    return _wire(
        nodes,
        [{"src": 0, "dst": depth + 1, **edge}, {"src": depth + 1, "dst": depth + 2, **edge}],
        "Deep",
    )


def crafted_too_many(modules: int = 70, ops: int = 95) -> bytes:
    """modules × ops ops: opened all at once, more boxes than the viewer draws at once."""
    nodes = [_node(0, "input", "x", None), _node(1, "module", "Big", None)]
    edges = []
    prev = 0
    for m in range(modules):
        mid = len(nodes)
        nodes.append(_node(mid, "module", f"Part{m}", 1, f"part{m}"))
        for _ in range(ops):
            nodes.append(_node(len(nodes), "op", "add", mid))
            edges.append({"src": prev, "dst": len(nodes) - 1, "shape": [2], "dtype": "float32"})
            prev = len(nodes) - 1
    nodes.append(_node(len(nodes), "output", "output", None))
    edges.append({"src": prev, "dst": len(nodes) - 1, "shape": [2], "dtype": "float32"})
    return _wire(nodes, edges, "Big")


def gpt2() -> tuple[nn.Module, tuple, dict]:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_layer=12)).eval()
    ids = torch.randint(0, 1000, (1, 16))
    return model, (ids,), {}


def resnet50() -> tuple[nn.Module, tuple, dict]:
    from transformers import ResNetConfig, ResNetModel

    torch.manual_seed(0)
    model = ResNetModel(ResNetConfig()).eval()
    return model, (torch.randn(1, 3, 224, 224),), {}


def llama32() -> tuple[nn.Module, tuple, dict]:
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=1000,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=32,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    return LlamaModel(cfg).eval(), (torch.randint(0, 1000, (1, 16)),), {}


def t5() -> tuple[nn.Module, tuple, dict]:
    from transformers import T5Config, T5Model

    torch.manual_seed(0)
    cfg = T5Config(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=6, num_heads=4)
    ids = torch.randint(0, 1000, (1, 12))
    return T5Model(cfg).eval(), (), {"input_ids": ids, "decoder_input_ids": ids[:, :8]}


def traced_rank0(builder: str) -> bytes:
    """Rank 0's graph of a real 2-rank torchrun program (gloo, CPU) from
    tests/python/distributed/models.py, through `python -m torchscope trace --rank 0`."""
    import os
    import socket
    import subprocess
    import tempfile

    here = Path(__file__).resolve().parent
    programs = here.parent / "python" / "distributed"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(programs), str(here.parent.parent / "python_helper"), env.get("PYTHONPATH", "")]
    )
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
        cmd += ["--master_addr", "127.0.0.1", "--master_port", str(port), "-m", "torchscope"]
        cmd += ["trace", f"{programs / 'models.py'}:{builder}", "--rank", "0", "-o", "g.msgpack"]
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise SystemExit(f"torchrun {builder} failed:\n{proc.stdout}{proc.stderr}")
        return (Path(tmp) / "g.msgpack").read_bytes()


def write(out: Path, name: str, graph: torchscope.Graph | bytes) -> None:
    data = graph if isinstance(graph, bytes) else graph.to_msgpack()
    (out / f"{name}.msgpack").write_bytes(data)
    (out / f"{name}.html").write_text(render_html(data, f"{name} · torchscope"), encoding="utf-8")
    nodes = "crafted" if isinstance(graph, bytes) else f"{len(graph.nodes)} nodes"
    print(f"{name}: {nodes}, {len(data)} bytes")


def main() -> None:
    argv = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = Path(argv[0] if argv else "tests/artifacts/fixtures")
    out.mkdir(parents=True, exist_ok=True)
    if "--html-only" in sys.argv:
        for f in sorted(out.glob("*.msgpack")):
            page = render_html(f.read_bytes(), f"{f.stem} · torchscope")
            f.with_suffix(".html").write_text(page, encoding="utf-8")
        return
    with torch.no_grad():
        models = [("gpt2", gpt2), ("resnet50", resnet50), ("t5", t5)]
        if "--large" in sys.argv:  # for timing by hand, not in the tests
            models += [("llama32", llama32)]
        for name, make in models:
            model, args, kwargs = make()
            write(out, name, torchscope.trace(model, *args, **kwargs))
        write(out, "hostile", torchscope.trace(Hostile().eval(), torch.randn(2, 4)))
        torch.manual_seed(0)
        write(out, "nan", torchscope.trace(NanDeep().eval(), torch.randn(3, 4)))
        write(out, "hugelabel", torchscope.trace(HugeLabel().eval(), torch.randn(2, 4)))
        write(out, "wide", torchscope.trace(Wide().eval(), torch.randn(1, 8)))
        for n in (5_000, 50_000):
            write(out, f"flat{n}", torchscope.trace(Flat(n), torch.randn(2, 3)))
        write(out, "warned", torchscope.trace(WritesBehindTorch(), torch.randn(1, 3)))
        write(out, "compare", compare_page())
        write(out, "compare_raised", compare_raised_page())
        write(out, "compare_a_raised", compare_raised_page(a_raised=True))
        write(out, "compare_inner", compare_inner_page())
        write(out, "hub", torchscope.trace(Hub().eval(), torch.randn(2, 8)))
        sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
        from mlp import MLP  # the project's own example: Linear layers wrap one op each

        write(out, "mlp", torchscope.trace(MLP().eval(), torch.randn(2, 64)))
        write(out, "fsdp2", traced_rank0("fsdp2"))  # real 2-rank programs: collectives, DTensors
        write(out, "tensor_parallel", traced_rank0("tensor_parallel"))
        write(out, "deep10000", crafted_deep())
        write(out, "toomany", crafted_too_many())
        try:
            torchscope.trace(Boom().eval(), torch.randn(2, 8))
        except RuntimeError as e:
            graph = getattr(e, "torchscope_graph", None)
            if graph is None:
                raise SystemExit(f"trace error carries no graph: {e!r}") from e
            write(out, "error", graph)
        else:
            raise SystemExit("the error model did not raise")


if __name__ == "__main__":
    main()
