"""One model, three ways of tracing it: the editor's runner, the paused-debugger entry and the
CLI agree on the input guess, the error location and the parameter count's format
(issue "one trace path"). The debugger's transport (DAP) is tested in test_debug_dap.py; here
the entry is called in process, on a frame that holds the model, as the debuggee runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from test_runner import RunnerProcess  # noqa: E402 - tests/python is on sys.path (rootdir)

from torchscope import debug
from torchscope.build_target import build
from torchscope.graph import Graph
from torchscope.summary import format_count

MODELS = """
import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 5)
        self.fc2 = nn.Linear(5, 3)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.conv(x).mean(dim=(2, 3)))


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 8)
        self.out = nn.Linear(8, 4)

    def forward(self, ids):
        return self.out(self.emb(ids))


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(6, 5, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(10)
        self.fc = nn.Linear(10, 2)

    def forward(self, x):
        return self.fc(self.norm(x))


class Lazy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.LazyLinear(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.fc(x))


class Batched(nn.Module):  # one batch dict, as a data loader gives it
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(12, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, batch):
        h = self.enc(batch["features"]).relu()
        return self.head(h) * batch.get("weight", 1.0)


class Digits(nn.Module):  # 28×28 images: the Linear after flatten fixes the size
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 26 * 26, 10)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


class DigitBatch(Digits):
    def forward(self, batch):
        return super().forward(batch["image"])


class Table(nn.Module):  # a forward that takes nothing: a learned table, a NeRF grid

    def __init__(self):
        super().__init__()
        self.rows = nn.Parameter(torch.randn(6, 4))
        self.proj = nn.Linear(4, 2)

    def forward(self):
        return self.proj(self.rows)


class SelfAttend(nn.Module):  # several arguments of one shape: the guess for each runs
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(8, 8)

    def forward(self, q, k, v):
        w = (self.q(q) @ k.transpose(-1, -2)).softmax(-1)
        return w @ v


class Denoiser(nn.Module):  # forward(x, t): an image and diffusion timesteps
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.time = nn.Embedding(1000, 3)

    def forward(self, x, t):
        return self.conv(x) + self.time(t)[:, :, None, None]


class Waveform(nn.Module):  # a raw waveform [batch, samples], given its channel in forward
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 8, 400, stride=160)
        self.gru = nn.GRU(8, 16, batch_first=True)

    def forward(self, wav):
        return self.gru(self.conv(wav.unsqueeze(1)).transpose(1, 2))[0]


class Graphs(nn.Module):  # forward(x, edge_index), as PyTorch Geometric's layers take
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 4)

    def forward(self, x, edge_index):
        src, dst = edge_index
        return self.lin(torch.zeros_like(x).index_add_(0, dst, x[src]))


class Projection(nn.Module):  # BatchNorm1d in training mode: a batch of one has no statistics
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 20)
        self.bn = nn.BatchNorm1d(20)

    def forward(self, x):
        return torch.relu(self.bn(self.fc(x)))


class ConvProjection(nn.Module):  # the same after a convolution and global pooling
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.fc(self.conv(x).mean(dim=(2, 3))))


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 4)

    def forward(self, x):
        h = self.fc(x)
        return h @ torch.ones(5, 5)  # BROKEN: a shape error at the user's line
"""

NAMES = ["Mlp", "Cnn", "Tokens", "Recurrent", "Normed"]
GUESSED = [*NAMES, "Batched"]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("one_path") / "onepath_models.py"
    path.write_text(textwrap.dedent(MODELS))
    return path


@pytest.fixture(scope="module")
def runner():
    r = RunnerProcess()
    yield r
    r.close()


def _input_shapes(g: Graph) -> list[Any]:
    ids = [n.id for n in g.nodes if n.kind == "input"]
    return [e.shape for e in g.edges if e.src in ids]


def _each_input(g: Graph) -> list[Any]:
    """Each input node's shape, in the forward's order (an input used twice: once)."""
    ids = [n.id for n in g.nodes if n.kind == "input"]
    first = {e.src: e.shape for e in reversed(g.edges) if e.src in ids}
    return [first[i] for i in ids if i in first]


def _editor(runner: RunnerProcess, path: Path, name: str, out: Path) -> dict[str, Any]:
    reply = runner.ask(op="trace", file=str(path), target=name, out=str(out))
    assert reply["ok"], reply
    return reply["result"]


def _paused(out: Path, **request: Any) -> dict[str, Any]:
    """The debug entry paused in the caller's frame, which holds the `model`."""
    frame = sys._getframe(1)
    candidates = json.loads(debug.handle(json.dumps({"op": "candidates"}), frame=frame))
    assert candidates["ok"], candidates
    reply = json.loads(
        debug.handle(
            json.dumps({"op": "trace", "expr": "model", "out": str(out), **request}), frame=frame
        )
    )
    return {"candidates": candidates["modules"], "reply": reply}


def _cli(path: Path, name: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", "trace", f"{path}:{name}", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("name", GUESSED)
def test_the_same_input_guess_everywhere(runner, models, tmp_path, name):
    """The editor infers an input from the first layer; the CLI makes the same one; at a
    breakpoint with no input in the frame the candidate offers that same guess (what the
    input box starts with), and tracing with it gives the same input shapes."""
    editor = _editor(runner, models, name, tmp_path / "editor.msgpack")
    assert editor["summary"]["input"].startswith("guessed from the first layer ")
    shapes = _input_shapes(Graph.load(tmp_path / "editor.msgpack"))

    run = _cli(models, name, tmp_path / "cli.msgpack")
    assert run.returncode == 0, run.stderr
    assert _input_shapes(Graph.load(tmp_path / "cli.msgpack")) == shapes

    model = build(f"{models}:{name}").model  # noqa: F841 - the paused frame holds it
    seen = _paused(tmp_path / "paused-probe.msgpack")
    first = next(c for c in seen["candidates"] if c["expr"] == "model")
    assert first["inputs"] is False and first["guess"], first
    paused = _paused(tmp_path / "paused.msgpack", input=first["guess"])["reply"]
    assert paused["ok"], paused
    assert _input_shapes(Graph.load(tmp_path / "paused.msgpack")) == shapes


def test_a_tensor_the_editor_guesses_is_found_in_a_paused_frame(models, tmp_path):
    """One table makes and checks inputs: the editor's guess, lying in a paused frame under
    any name, is the input the entry picks."""
    from torchscope.inputs import guess_from_first_layer

    for name in NAMES:
        model = build(f"{models}:{name}").model
        batch = guess_from_first_layer(model)  # noqa: F841 - found in this frame by the entry
        seen = _paused(tmp_path / f"{name}.msgpack")
        assert seen["reply"]["ok"], seen
        assert seen["reply"]["summary"]["input"].startswith("from the frame: batch"), name


def test_a_forward_that_reads_keys_of_its_one_argument_gets_a_dict(runner, models, tmp_path):
    """`forward(self, batch)` reading `batch["features"]`: the guess is a dict with that key
    (never a tensor, which failed with "too many indices"; never `.get`'s optional keys), said
    so in the editor and the box's template; at a breakpoint before `model(batch)`, the
    frame's dict is passed whole as the one argument, not a tensor taken out of it."""
    editor = _editor(runner, models, "Batched", tmp_path / "editor.msgpack")
    assert editor["summary"]["error"] is None, editor["summary"]
    assert editor["summary"]["input"] == (
        "guessed from the first layer enc (Linear), as batch['features']: "
        "({features: tensor [1, 12] float32})"
    ), editor["summary"]["input"]
    assert _input_shapes(Graph.load(tmp_path / "editor.msgpack")) == [[1, 12]]

    model = build(f"{models}:Batched").model  # noqa: F841 - the paused frame holds it
    batch = {"features": torch.randn(3, 12), "label": torch.zeros(3)}  # noqa: F841 - and this
    seen = _paused(tmp_path / "paused.msgpack")
    assert seen["reply"]["ok"], seen
    assert seen["reply"]["summary"]["error"] is None, seen["reply"]["summary"]
    assert seen["reply"]["summary"]["input"].startswith("from the frame: batch"), seen
    assert _input_shapes(Graph.load(tmp_path / "paused.msgpack")) == [[3, 12]]


@pytest.mark.parametrize(
    "name, shapes",
    [
        ("Digits", [[1, 1, 28, 28]]),
        ("DigitBatch", [[1, 1, 28, 28]]),
        # a Conv1d of one channel after `wav.unsqueeze(1)`: a waveform without it
        ("Waveform", [[1, 16000]]),
        # a model in training mode with BatchNorm after its first layer: a batch of two
        ("Projection", [[2, 10]]),
        ("ConvProjection", [[2, 3, 64, 64]]),
    ],
)
def test_a_guess_that_fails_is_tried_again_with_other_sizes_everywhere(
    runner, models, tmp_path, name, shapes
):
    """The first layer (Conv2d) says the channels, not the size a later Linear needs: the
    editor and the CLI both try the usual image sizes and trace with the first that runs
    (before, only the editor did; the CLI stopped at the shape error)."""
    editor = _editor(runner, models, name, tmp_path / "editor.msgpack")
    assert editor["summary"]["error"] is None, editor["summary"]
    assert "a size the model accepts" in editor["summary"]["input"], editor["summary"]
    assert _input_shapes(Graph.load(tmp_path / "editor.msgpack")) == shapes

    run = _cli(models, name, tmp_path / "cli.msgpack")
    assert run.returncode == 0, run.stderr
    assert _input_shapes(Graph.load(tmp_path / "cli.msgpack")) == shapes


def test_a_forward_that_takes_nothing_is_called_with_nothing(runner, models, tmp_path):
    """`forward(self)`: no input is guessed from its first layer (it failed with "takes 1
    positional argument but 2 were given") or asked for; the editor, the CLI and the paused
    entry call it with nothing."""
    editor = _editor(runner, models, "Table", tmp_path / "editor.msgpack")
    assert editor["summary"]["error"] is None, editor["summary"]
    assert editor["summary"]["input"] == "none: Table.forward() takes no arguments"
    graph = Graph.load(tmp_path / "editor.msgpack")
    assert _input_shapes(graph) == [] and any(n.kind == "op" for n in graph.nodes)

    run = _cli(models, "Table", tmp_path / "cli.msgpack")
    assert run.returncode == 0, run.stderr
    assert "input none: Table.forward() takes no arguments" in run.stdout

    model = build(f"{models}:Table").model  # noqa: F841 - the paused frame holds it
    x = torch.randn(3, 4)  # noqa: F841 - fits the first layer, but the forward takes nothing
    seen = _paused(tmp_path / "paused.msgpack")
    first = next(c for c in seen["candidates"] if c["expr"] == "model")
    assert first["inputs"] is True, first
    assert seen["reply"]["ok"] and seen["reply"]["summary"]["error"] is None, seen
    assert seen["reply"]["summary"]["input"] == "none: Table.forward() takes no arguments"


@pytest.mark.parametrize(
    "name, said, shapes",
    [
        (
            "SelfAttend",
            "guessed from the first layer q (Linear), for q, k, v: "
            "(tensor [1, 8] float32, tensor [1, 8] float32, tensor [1, 8] float32)",
            [[1, 8], [1, 8], [1, 8]],
        ),
        (
            "Denoiser",
            "guessed from the first layer conv (Conv2d), for x, t: "
            "(tensor [1, 3, 64, 64] float32, tensor [1] int64)",
            [[1, 3, 64, 64], [1]],
        ),
        (
            "Graphs",
            "guessed from the first layer lin (Linear), for x, edge_index: "
            "(tensor [1, 16] float32, tensor [2, 1] int64)",
            [[1, 16], [2, 1]],
        ),
    ],
)
def test_a_forward_of_several_arguments_runs_with_the_template_when_it_fits(
    runner, models, tmp_path, name, said, shapes
):
    """forward(q, k, v), forward(x, t): the template the input box would start with (the
    first layer's guess for each argument, timesteps for `t`) is tried with a plain forward;
    when the model accepts it, it is traced as a guess without a question, by the editor and
    the CLI alike. (When it does not, the box asks as before: test_loading.py.)"""
    editor = _editor(runner, models, name, tmp_path / "editor.msgpack")
    assert editor["summary"]["error"] is None, editor["summary"]
    assert editor["summary"]["input"] == said
    assert editor["summary"]["inputKind"] == "guess"
    assert _each_input(Graph.load(tmp_path / "editor.msgpack")) == shapes

    run = _cli(models, name, tmp_path / "cli.msgpack")
    assert run.returncode == 0, run.stderr
    assert f"input {said}" in run.stdout
    assert _each_input(Graph.load(tmp_path / "cli.msgpack")) == shapes


def test_a_lazy_first_layer_is_never_guessed_from(runner, models, tmp_path):
    """nn.LazyLinear's in_features is 0 until its first forward: no input is made from it
    (the editor and the CLI say why), a tensor in a paused frame fits it, and the graph shows
    the layer as that forward sized it."""
    reply = runner.ask(op="trace", file=str(models), target="Lazy", out=str(tmp_path / "e.mp"))
    assert not reply["ok"] and "fc (LazyLinear) is lazy" in reply["message"], reply
    # the editor's input box shows it: in its words, not the command line's (--input)
    assert reply["message"].endswith("give one, e.g. torch.randn(1, 16)"), reply["message"]
    run = _cli(models, "Lazy", tmp_path / "cli.msgpack")
    assert run.returncode != 0 and "fc (LazyLinear) is lazy" in run.stderr, run.stderr
    # the example fits the layer: features for a Linear, not an image
    assert "--input 'torch.randn(1, 16)'" in run.stderr, run.stderr

    model = build(f"{models}:Lazy").model
    batch = torch.randn(3, 7)  # noqa: F841 - found in this frame by the entry
    seen = _paused(tmp_path / "paused.msgpack")
    assert seen["reply"]["ok"], seen
    assert seen["reply"]["summary"]["input"].startswith("from the frame: batch")
    g = Graph.load(tmp_path / "paused.msgpack")
    fc = next(n for n in g.nodes if n.path == "fc")
    assert fc.params == 7 * 4 + 4 and fc.attrs["in_features"] == 7
    assert _input_shapes(g) == [[3, 7]]
    assert type(model.fc) is torch.nn.LazyLinear  # the paused program's model still lazy


def test_the_same_error_location_everywhere(runner, models, tmp_path):
    """A forward that raises at the user's line: the editor's summary, the paused entry's and
    the CLI's message point at that line of the user's file, not into torch."""
    line = next(
        i for i, text in enumerate(models.read_text().splitlines(), 1) if "# BROKEN" in text
    )
    editor = _editor(runner, models, "Broken", tmp_path / "editor.msgpack")["summary"]["error"]
    assert (editor["file"], editor["line"]) == (str(models), line)

    model = build(f"{models}:Broken").model  # noqa: F841 - the paused frame holds it
    x = torch.randn(1, 12)  # noqa: F841 - the paused frame's input
    paused = _paused(tmp_path / "paused.msgpack")["reply"]
    assert paused["ok"], paused
    error = paused["summary"]["error"]
    assert (error["file"], error["line"]) == (str(models), line)

    run = _cli(models, "Broken", tmp_path / "cli.msgpack")
    assert run.returncode == 1
    assert f"{models}:{line}" in run.stderr


def test_the_same_parameter_count_and_format_everywhere(runner, models, tmp_path):
    """The count is the same number from the editor, the paused entry's candidates, the graph
    and the CLI summary, which writes it as format_count does (the viewer and the extension
    format it the same way: tests/webview/unit, tests/extension/unit)."""
    editor = _editor(runner, models, "Mlp", tmp_path / "editor.msgpack")["summary"]["params"]
    model = build(f"{models}:Mlp").model  # noqa: F841 - the paused frame holds it
    candidates = _paused(tmp_path / "paused.msgpack")["candidates"]
    listed = next(c for c in candidates if c["expr"] == "model")["params"]
    graph = Graph.load(tmp_path / "editor.msgpack").model.params
    assert editor == listed == graph == 12 * 5 + 5 + 5 * 3 + 3
    run = subprocess.run(
        [sys.executable, "-m", "torchscope", "summary", f"{models}:Mlp"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert f"params {format_count(editor)} " in run.stdout.splitlines()[0]


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0"),
        (999, "999"),
        (1000, "1K"),
        (1250, "1.3K"),
        (786_432, "786.4K"),
        (999_950, "1M"),
        (124_439_808, "124.4M"),
        (70_553_706_496, "70.6B"),
    ],
)
def test_format_count(n, text):
    assert format_count(n) == text
