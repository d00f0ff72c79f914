"""The golden graph file: decodes, and matches what the tracer writes today.

Regenerate after an intended format change: pytest tests/python/test_golden.py --update-golden
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

import msgpack
import pytest

import torchscope
from torchscope.graph import FORMAT, VERSION, Graph

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"
GOLDEN = GOLDEN_DIR / "mlp.graph.msgpack"
sys.path.insert(0, str(GOLDEN_DIR))


def portable(wire: dict[str, Any]) -> dict[str, Any]:
    """Site files relative to the repo or to torch, so the file is the same on any machine."""
    root = str(GOLDEN_DIR.parent.parent) + os.sep

    def fix(site: Any) -> Any:
        if site is None:
            return None
        f = site["file"]
        if f.startswith(root):
            f = f[len(root) :]
        elif "/torch/" in f:
            f = "torch/" + f.split("/torch/", 1)[1]
        return {**site, "file": f}

    for n in wire["nodes"]:
        n["site"], n["defn"] = fix(n["site"]), fix(n["defn"])
    wire["stats"]["trace_ms"] = 0.0
    for item in wire["nodes"] + wire["groups"]:
        if "cost" in item:
            item["cost"]["time_ns"] = 0  # wall time: differs on every run
    for e in wire["edges"]:
        # float sums may differ in the last bits between CPUs: keep 6 significant digits
        if "stats" in e:
            e["stats"] = {k: _rounded(v) for k, v in e["stats"].items()}
        if "hist" in e:
            e["hist"] = {k: _rounded(v) for k, v in e["hist"].items()}
    wire["model"]["qualname"] = wire["model"]["qualname"].rsplit(".", 1)[-1]
    for n in wire["nodes"]:
        if n["target"].startswith("golden_model."):
            n["target"] = n["target"].rsplit(".", 1)[-1]
    return wire


def _rounded(v: Any) -> Any:
    return float(f"{v:.6g}") if isinstance(v, float) else v


def current() -> dict[str, Any]:
    from golden_model import make_graph

    return portable(make_graph().to_wire())


def test_update_or_compare(update_golden: bool) -> None:
    wire = current()
    if update_golden:
        GOLDEN.write_bytes(msgpack.packb(wire, use_bin_type=True))
    stored = msgpack.unpackb(GOLDEN.read_bytes(), raw=False)
    assert stored == wire, "the tracer's output changed; if intended, rerun with --update-golden"


def test_golden_decodes() -> None:
    g = Graph.from_wire(msgpack.unpackb(GOLDEN.read_bytes(), raw=False))
    assert (g.model.name, FORMAT, VERSION) == ("GoldenMLP", "torchscope.graph", 1)
    kinds = [n.kind for n in g.nodes]
    assert kinds.count("input") == 1 and kinds.count("output") == 2
    assert {n.name for n in g.nodes if n.kind == "output"} == {"logits", "hidden"}
    # two Block calls fold into one group
    assert [(gr.name, len(gr.members)) for gr in g.groups] == [("Block ×2", 2)]
    gate = g.find("constant", "gate")
    assert len(gate) == 1 and gate[0].target == "gate"
    skip = g.module_call("skip")
    assert any(e.dst == skip.id for e in g.edges) and any(e.src == skip.id for e in g.edges)
    x = g.find("input", "x")[0]
    first = [e for e in g.edges if e.src == x.id]
    assert first and first[0].shape == [3, 4] and first[0].dtype == "float32"
    # values and costs (docs/graph-format.md): statistics of the input, FLOPs of the model
    assert (g.values.stats, g.values.costs, g.nan_origin) == (True, True, None)
    stats, hist = first[0].stats, first[0].hist
    assert stats is not None and hist is not None
    assert stats["numel"] == 12 and stats["nan"] == 0 and stats["min"] <= stats["mean"]
    assert len(hist["counts"]) == 16 and sum(hist["counts"]) == 12
    # three Linear layers on 3 rows: 2 * 3 * (4*8 + 2 * 8*8 + 8*2) multiply-adds
    root = g.module_call("")
    assert root.cost is not None and root.cost.flops == 2 * 3 * (4 * 8 + 2 * 8 * 8 + 8 * 2)
    assert root.cost.bytes > 0


def test_rejects_other_formats() -> None:
    wire = msgpack.unpackb(GOLDEN.read_bytes(), raw=False)
    with pytest.raises(torchscope.GraphFormatError, match="version"):
        Graph.from_wire({**wire, "version": VERSION + 1})
    with pytest.raises(torchscope.GraphFormatError, match="format"):
        Graph.from_wire({**wire, "format": "something.else"})
    with pytest.raises(torchscope.GraphFormatError):
        Graph.from_wire({**wire, "nodes": [{"id": 0}]})
    with pytest.raises(torchscope.GraphFormatError):
        torchscope.graph.unpack(b"\xc1not msgpack")


MALFORMED = GOLDEN_DIR / "malformed.json"


def _malformed_cases() -> list[dict[str, Any]]:
    return json.loads(MALFORMED.read_text(encoding="utf-8"))["cases"]


def _mutate(wire: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(wire)
    path, value = case.get("set") or case["append"]
    obj: Any = out
    for k in path[:-1]:
        obj = obj[k]
    if "set" in case:
        obj[path[-1]] = value
    else:
        obj[path[-1]].append(value)
    return out


@pytest.mark.parametrize("case", _malformed_cases(), ids=lambda c: c["name"])
def test_rejects_the_shared_malformed_cases(case: dict[str, Any]) -> None:
    """The viewer's reader (format.ts) rejects the same files: tests/webview/unit/format.test.ts."""
    wire = msgpack.unpackb(GOLDEN.read_bytes(), raw=False)
    Graph.from_wire(wire)  # the unchanged file is fine
    with pytest.raises(torchscope.GraphFormatError):
        Graph.from_wire(_mutate(wire, case))


def test_malformed_values_are_dropped_as_the_viewer_drops_them() -> None:
    """Values only decorate (docs/graph-format.md): a count of 1e999 in `stats` or of 10**30
    in `hist` was kept as read, and `diff` then failed with an internal error (int() of
    infinity, msgpack's integer range). Read as format.ts reads them: a field that is no
    finite number is nil (min, max, mean, std, absmax) or absent (zeros, nan, inf), a count
    that is none is 0, stats without a numel and a hist without lo, hi or counts are absent."""
    from torchscope.diff import diff_graphs

    wire = msgpack.unpackb(GOLDEN.read_bytes(), raw=False)
    bad = copy.deepcopy(wire)
    edge = next(e for e in bad["edges"] if "stats" in e and "hist" in e)
    edge["stats"].update(min=float("inf"), mean="0.5", inf=float("inf"), nan=10**30, extra=1)
    edge["hist"]["counts"][:3] = [10**30, "x", -(2**70)]
    second = next(e for e in bad["edges"] if "stats" in e and e is not edge)
    second["stats"].pop("numel")
    second["hist"]["lo"] = None
    g = Graph.from_wire(bad)
    i = bad["edges"].index(edge)
    st, hist = g.edges[i].stats, g.edges[i].hist
    assert st is not None and hist is not None
    assert (st["min"], st["mean"], "inf" in st, "nan" in st, "extra" in st) == (
        None,
        None,
        False,
        False,
        False,
    )
    assert st["max"] == edge["stats"]["max"] and st["numel"] == edge["stats"]["numel"]
    assert hist["counts"][:3] == [0, 0, 0] and hist["counts"][3:] == edge["hist"]["counts"][3:]
    j = bad["edges"].index(second)
    assert (g.edges[j].stats, g.edges[j].hist) == (None, None)
    Graph.from_wire(msgpack.unpackb(g.to_msgpack(), raw=False))  # written again as read
    diff = diff_graphs(Graph.from_wire(wire), g)  # (raised OverflowError)
    assert msgpack.unpackb(msgpack.packb(diff.to_wire("a", "b")), raw=False)["format"] == (
        "torchscope.diff"
    )
