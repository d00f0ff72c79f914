"""`summary`'s `ops N` counts every op inside a module call, at all depths (on a "×N" line:
inside all N blocks), as its flops/out/time sum everything inside; and tensors of the
dtypes torch has few kernels for (uint16, uint32, uint64, complex32) get statistics, with
their integer or complex meaning, checked against values computed here."""

from __future__ import annotations

import math
import re
import statistics
from typing import Any, Optional

import pytest
import torch
from torch import nn

import torchscope
from torchscope.stats import STAGED_MAX

# -- summary: inclusive op counts --------------------------------------------------------


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) + x  # 3 ops, 1 of them inside fc


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.tail = nn.Sequential(nn.Linear(2, 2), nn.ReLU())  # no direct op of its own

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(torch.tanh(self.fc(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(3))
        self.head = Head()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * 2
        for block in self.blocks:
            x = block(x)
        return self.head(x).sum()


def _ops_inside(graph: torchscope.Graph, module_id: int) -> int:
    """Op nodes with `module_id` among their ancestors, found by walking each op's parents."""
    count = 0
    for n in graph.nodes:
        if n.kind != "op":
            continue
        parent = n.parent
        while parent is not None and parent != module_id:
            parent = graph.nodes[parent].parent
        count += parent == module_id
    return count


def _line(summary: str, label: str) -> str:
    """The summary line of the module call (or run) labelled `label`."""
    found = [ln for ln in summary.splitlines() if re.match(rf"^[│├└─ ]*{re.escape(label)}: ", ln)]
    assert len(found) == 1, (label, summary)
    return found[0]


def _ops_on(line: str) -> Optional[int]:
    m = re.search(r"  ops (\d+)  ", line)
    return int(m.group(1)) if m else None


@pytest.fixture(scope="module")
def traced() -> tuple[torchscope.Graph, str]:
    torch.manual_seed(0)
    graph = torchscope.trace(Net(), torch.randn(3, 8))
    return graph, graph.summary()


def _module(graph: torchscope.Graph, path: str) -> int:
    (node,) = [n for n in graph.nodes if n.kind == "module" and n.path == path]
    return node.id


def test_root_line_counts_every_op_of_the_model(traced: tuple[torchscope.Graph, str]) -> None:
    graph, summary = traced
    total = sum(n.kind == "op" for n in graph.nodes)
    root = _module(graph, "")
    assert total == 1 + 3 * 3 + 4 + 1  # mul, 3 blocks, head, sum
    assert _ops_inside(graph, root) == total
    assert _ops_on(_line(summary, "(root)")) == total
    assert f", {total} ops, " in summary.splitlines()[-1]


def test_plain_module_line_counts_ops_at_all_depths(
    traced: tuple[torchscope.Graph, str],
) -> None:
    graph, summary = traced
    head = _module(graph, "head")
    assert sum(c.kind == "op" for c in graph.children(head)) == 1  # tanh alone is direct
    assert _ops_inside(graph, head) == 4
    assert _ops_on(_line(summary, "head")) == 4
    # a module whose ops are all inside its children says so too (it said nothing)
    tail = _module(graph, "head.tail")
    assert not any(c.kind == "op" for c in graph.children(tail))
    assert _ops_on(_line(summary, "head.tail")) == _ops_inside(graph, tail) == 2
    # a leaf's count is its direct ops, as before
    assert _ops_on(_line(summary, "head.fc")) == _ops_inside(graph, _module(graph, "head.fc")) == 1


def test_folded_line_sums_its_blocks(traced: tuple[torchscope.Graph, str]) -> None:
    graph, summary = traced
    (group,) = graph.groups
    assert [graph.nodes[m].path for m in group.members] == ["blocks.0", "blocks.1", "blocks.2"]
    line = _line(summary, "blocks.0 … blocks.2")
    assert "Block ×3" in line
    inside = sum(_ops_inside(graph, m) for m in group.members)
    assert inside == 9
    assert _ops_on(line) == inside


# -- statistics of uint16/uint32/uint64/complex32 tensors ----------------------------------


class Copy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()


def _edges(x: torch.Tensor) -> tuple[Any, Any]:
    """(the input's edge into clone, clone's output edge) of a traced `x.clone()`."""
    graph = torchscope.trace(Copy(), x)
    (clone,) = [n for n in graph.nodes if n.kind == "op" and n.name == "clone"]
    (into,) = [e for e in graph.edges if e.dst == clone.id]
    (out,) = [e for e in graph.edges if e.src == clone.id]
    return into, out


def _integer_truth(values: list[int], repeats: int = 1) -> dict[str, Any]:
    return {
        "min": min(values),
        "max": max(values),
        "mean": sum(values) / len(values),
        "numel": len(values) * repeats,
    }


UNSIGNED = {
    "uint16": (torch.uint16, [1, 2, 65535, 7, 0, 40000]),
    "uint32": (torch.uint32, [1, 2, 4_000_000_000, 7, 2**32 - 1, 2**31]),
    "uint64 past int64": (torch.uint64, [1, 2, 2**63 + 5, 7, 2**64 - 1, 2**63 - 1]),
    "uint64 all below 2**63": (torch.uint64, [3, 9, 2**62, 5]),
    "uint64 all from 2**63": (torch.uint64, [2**63, 2**63 + 1, 2**64 - 2]),
}


def _check_integer(stats: Optional[dict[str, Any]], truth: dict[str, Any]) -> None:
    assert stats is not None
    assert set(stats) == {"min", "max", "mean", "numel"}  # as any integer tensor's
    for key in ("min", "max", "numel"):
        assert type(stats[key]) is int and stats[key] == truth[key], key
    assert stats["mean"] == pytest.approx(truth["mean"], rel=1e-12)


@pytest.mark.parametrize("case", list(UNSIGNED))
def test_unsigned_integer_statistics(case: str) -> None:
    dtype, values = UNSIGNED[case]
    x = torch.tensor(values, dtype=dtype)
    into, out = _edges(x)
    assert into.dtype == out.dtype == str(dtype).removeprefix("torch.")
    truth = _integer_truth(values)
    for edge in (into, out):
        _check_integer(edge.stats, truth)
        assert edge.hist is None  # integers have no histogram


@pytest.mark.parametrize("case", list(UNSIGNED))
def test_unsigned_broadcast_views(case: str) -> None:
    """A broadcast view past STAGED_MAX is read from the values it repeats; its copy whole."""
    dtype, values = UNSIGNED[case]
    rows = STAGED_MAX // len(values) + 1
    x = torch.tensor(values, dtype=dtype).expand(rows, len(values))
    assert x.numel() > STAGED_MAX and x.stride()[0] == 0
    into, out = _edges(x)
    truth = _integer_truth(values, rows)
    for edge in (into, out):
        _check_integer(edge.stats, truth)


def _complex_truth(values: list[complex], repeats: int = 1) -> dict[str, Any]:
    """Statistics of the magnitudes |z| (values exact in half precision), from Python's own
    arithmetic: NaN and ±Inf counted, the rest over the finite magnitudes."""
    mags = [abs(z) for z in values]
    finite = [m for m in mags if math.isfinite(m)]
    return {
        "min": min(finite),
        "max": max(finite),
        "mean": statistics.fmean(finite),
        "std": statistics.pstdev(finite),
        "absmax": max(finite),
        "zeros": sum(m == 0 for m in mags) / len(mags),
        "nan": sum(math.isnan(m) for m in mags) * repeats,
        "inf": sum(math.isinf(m) for m in mags) * repeats,
        "numel": len(mags) * repeats,
    }


COMPLEX = {
    "finite": [3 + 4j, 0j, 1 + 0j, -5 + 12j, 0.5 - 0.5j, -2j],
    "with NaN and Inf": [3 + 4j, complex(math.inf, 0), complex(math.nan, 0), 0j, 1 - 1j],
}


def _check_complex(edge: Any, truth: dict[str, Any]) -> None:
    stats = edge.stats
    assert stats is not None
    assert set(stats) == set(truth)
    for key in ("nan", "inf", "numel"):
        assert stats[key] == truth[key], key
    for key in ("min", "max", "mean", "std", "absmax", "zeros"):
        assert stats[key] == pytest.approx(truth[key], rel=1e-6, abs=1e-7), key
    hist = edge.hist
    assert hist is not None
    assert hist["lo"] == pytest.approx(truth["min"]) and hist["hi"] == pytest.approx(truth["max"])
    assert 0 < sum(hist["counts"]) <= truth["numel"] - truth["nan"] - truth["inf"]


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("case", list(COMPLEX))
def test_complex32_statistics_are_of_the_magnitude(case: str) -> None:
    values = COMPLEX[case]
    x = torch.tensor(values, dtype=torch.complex64).to(torch.complex32)
    assert [complex(z) for z in x.to(torch.complex64).tolist()] == pytest.approx(
        values, nan_ok=True
    )
    into, out = _edges(x)
    assert into.dtype == out.dtype == "complex32"
    truth = _complex_truth(values)
    for edge in (into, out):
        _check_complex(edge, truth)
        assert sum(edge.hist["counts"]) == truth["numel"] - truth["nan"] - truth["inf"]


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("case", list(COMPLEX))
def test_complex32_broadcast_views(case: str) -> None:
    values = COMPLEX[case]
    rows = STAGED_MAX // len(values) + 1
    x = torch.tensor(values, dtype=torch.complex64).to(torch.complex32).expand(rows, len(values))
    assert x.numel() > STAGED_MAX and x.stride()[0] == 0
    into, out = _edges(x)
    truth = _complex_truth(values, rows)
    for edge in (into, out):
        _check_complex(edge, truth)
