"""`summary` lists every tensor crossing a module call, also when one op made several
(split, chunk, unbind, sort, pack_padded_sequence)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import torch
from torch import nn

import torchscope
from torchscope.summary import boundary_shapes, summarize

ROOT = Path(__file__).resolve().parents[2]

SPLIT_MODELS = """
import torch
from torch import nn

class Splitter(nn.Module):
    def forward(self, x):
        a, b = torch.split(x, [3, 5], dim=-1)
        return a, b

class Joiner(nn.Module):
    def forward(self, a, b):
        return (a.sum(-1) + b.sum(-1))

class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.split = Splitter(); self.join = Joiner()
    def forward(self, x):
        return self.join(*self.split(x))
"""


class Splitter(nn.Module):
    def forward(self, x):
        a, b = torch.split(x, [3, 5], dim=-1)
        return a, b


class Joiner(nn.Module):
    def forward(self, a, b):
        return a.sum(-1) + b.sum(-1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.split = Splitter()
        self.join = Joiner()

    def forward(self, x):
        return self.join(*self.split(x))


def _line(text: str, path: str) -> str:
    found = [line for line in text.splitlines() if f" {path}: " in line]
    assert len(found) == 1, text
    return found[0]


def _by_path(graph: torchscope.Graph) -> dict[str, tuple[list, list]]:
    shapes = boundary_shapes(graph)
    return {graph.nodes[i].path: v for i, v in shapes.items()}


def test_both_outputs_of_a_split_cross_the_boundaries() -> None:
    graph = torchscope.trace(Net(), torch.randn(2, 8))
    shapes = _by_path(graph)
    assert shapes["split"] == ([[2, 8]], [[2, 3], [2, 5]])
    assert shapes["join"] == ([[2, 3], [2, 5]], [[2]])
    assert shapes[""] == ([[2, 8]], [[2]])
    text = summarize(graph)
    assert text == graph.summary()
    assert "split: Splitter  [2, 8] → [2, 3], [2, 5]  params 0" in _line(text, "split")
    assert "join: Joiner  [2, 3], [2, 5] → [2]  params 0" in _line(text, "join")


def test_the_cli_prints_both_outputs_of_a_split(tmp_path: Path) -> None:
    src = tmp_path / "split_models.py"
    src.write_text(textwrap.dedent(SPLIT_MODELS))
    proc = subprocess.run(
        [sys.executable, "-m", "torchscope", "summary", f"{src}:Net"]
        + ["--input", "torch.randn(2, 8)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "split: Splitter  [2, 8] → [2, 3], [2, 5]  params 0" in proc.stdout, proc.stdout
    assert "join: Joiner  [2, 3], [2, 5] → [2]  params 0" in proc.stdout, proc.stdout


class Packed(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 10)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, _ = self.lstm(packed)
        return out.data


def test_a_packed_sequence_brings_its_data_and_its_batch_sizes() -> None:
    graph = torchscope.trace(Packed(), torch.randn(7, 3, 6), torch.tensor([7, 5, 3]))
    ins, outs = _by_path(graph)["lstm"]
    assert [15, 6] in ins and [7] in ins, ins
    assert outs == [[15, 10]]
    assert "[15, 6]" in _line(summarize(graph), "lstm")


class Halves(nn.Module):
    def forward(self, x):
        return torch.chunk(x, 2, dim=-1)


class CatBoth(nn.Module):
    """One op reads both halves (two edges from one producer, alike in shape); another
    reads the first half again (the same tensor: no third tensor)."""

    def forward(self, a, b):
        return torch.cat([a, b], -1).sum(-1) + (a * a).sum(-1)


class HalvesNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.halves = Halves()
        self.cat = CatBoth()

    def forward(self, x):
        return self.cat(*self.halves(x))


def test_two_same_shaped_outputs_read_by_one_op_count_twice() -> None:
    graph = torchscope.trace(HalvesNet(), torch.randn(2, 8))
    shapes = _by_path(graph)
    assert shapes["halves"] == ([[2, 8]], [[2, 4], [2, 4]])
    assert shapes["cat"] == ([[2, 4], [2, 4]], [[2]])


class Unbind(nn.Module):
    def forward(self, x):
        return x.unbind(0)


class SumAll(nn.Module):
    def forward(self, a, b, c):
        return a.sum() + b.sum() + c.sum()


class UnbindNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.unbind = Unbind()
        self.sum = SumAll()

    def forward(self, x):
        return self.sum(*self.unbind(x))


def test_same_shaped_outputs_read_by_separate_ops_show_each() -> None:
    """Three same-shaped outputs of one op, each read by its own op: the edges say which
    output each is (`output`), so they are three tensors (QA: `chunk` into two layers
    showed one output)."""
    graph = torchscope.trace(UnbindNet(), torch.randn(3, 4))
    shapes = _by_path(graph)
    assert shapes["unbind"] == ([[3, 4]], [[4], [4], [4]])
    assert shapes["sum"] == ([[4], [4], [4]], [[]])


class Chunks(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).chunk(2, -1)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.split = Chunks()
        self.a = nn.Linear(4, 3)
        self.b = nn.Linear(4, 5)

    def forward(self, x):
        p, q = self.split(x)
        return self.a(p), self.b(q)


def test_a_modules_two_same_shaped_outputs_read_by_two_layers_show_both() -> None:
    graph = torchscope.trace(TwoHeads(), torch.randn(2, 8))
    assert _by_path(graph)["split"] == ([[2, 8]], [[2, 4], [2, 4]])
    assert "split: Chunks  [2, 8] → [2, 4], [2, 4]" in graph.summary(), graph.summary()


class Twice(nn.Module):
    def forward(self, x):
        return x.relu() + x.sigmoid() + x.tanh()


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.twice = Twice()

    def forward(self, x):
        y = x * 2
        return self.twice(y)


def test_one_tensor_read_by_several_ops_inside_counts_once() -> None:
    graph = torchscope.trace(Shared(), torch.randn(2, 3))
    assert _by_path(graph)["twice"] == ([[2, 3]], [[2, 3]])


class TwoKinds(nn.Module):
    def forward(self, x):
        values, indices = torch.sort(x, dim=-1)
        return values, indices


class SortNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.sort = TwoKinds()

    def forward(self, x):
        values, indices = self.sort(x)
        return values * indices


def test_same_shape_other_dtype_is_another_tensor() -> None:
    graph = torchscope.trace(SortNet(), torch.randn(2, 5))
    assert _by_path(graph)["sort"] == ([[2, 5]], [[2, 5], [2, 5]])
