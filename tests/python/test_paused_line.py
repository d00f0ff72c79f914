"""Paused on the line that calls the model (`out = model(x, mask=m)`, a breakpoint stops before
it runs): the model is traced with that call's arguments, read in the frame. Before, only a
value in the frame that fits the first layer was found: a forward of two arguments, or of
keywords, got one tensor or none. Arguments that would run the program's code to evaluate
(`next(loader)`) are never evaluated. The real debugger's path: test_debug_dap.py (the
trainer, paused on `out = self.model(inputs)`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torchscope import debug
from torchscope.graph import Graph
from torchscope.line_call import calls_on_line


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(5, 3)

    def forward(self, x, mask, scale=1.0):
        return self.fc(x * mask.unsqueeze(-1)) * scale


class Holder:
    def __init__(self) -> None:
        self.net = Masked()


def _here(request: dict[str, Any]) -> dict[str, Any]:
    """The debug entry, paused in the caller's frame at the caller's current line."""
    frame = sys._getframe(1)
    reply = json.loads(debug.handle(json.dumps(request), frame=frame))
    reply["line"] = frame.f_lineno
    return reply


def _inputs(path: str) -> list[Any]:
    g = Graph.load(Path(path))
    ids = [n.id for n in g.nodes if n.kind == "input"]
    first = {e.src: (e.shape, e.dtype) for e in reversed(g.edges) if e.src in ids}
    return [first[i] for i in ids if i in first]


def test_a_call_on_the_paused_line_gives_the_model_its_arguments(tmp_path):
    model = Masked()
    x = torch.randn(2, 4, 5)
    mask = torch.ones(2, 4)
    out = str(tmp_path / "g.msgpack")
    request = {"op": "trace", "expr": "model", "out": out}
    reply = _here(request) or model(x, mask, scale=2.0)
    assert reply["ok"], reply
    summary = reply["summary"]
    assert summary["error"] is None, summary
    assert summary["input"] == (
        f"from line {reply['line']}: model(x, mask, scale=2.0) "
        "(tensor [2, 4, 5] float32, tensor [2, 4] float32, scale=float)"
    ), summary["input"]
    assert _inputs(out) == [([2, 4, 5], "float32"), ([2, 4], "float32")]

    listed = _here({"op": "candidates"}) or model(x, mask, scale=2.0)
    first = next(c for c in listed["modules"] if c["expr"] == "model")
    assert first["inputs"] is True and first["input"].startswith("from line "), first


def test_a_trace_names_the_live_model_it_traced(tmp_path):
    """Compare with the previous paused trace paired traces by their expression alone
    (`self` in Block's forward, then in Net's): a reply says which live model it traced,
    the same one for two traces of one model, another for another model."""
    a, b = Masked(), Masked()
    x, mask = torch.randn(2, 4, 5), torch.ones(2, 4)
    out = str(tmp_path / "g.msgpack")
    first = _here({"op": "trace", "expr": "a", "out": out}) or a(x, mask)
    again = _here({"op": "trace", "expr": "a", "out": out}) or a(x, mask)
    other = _here({"op": "trace", "expr": "b", "out": out}) or b(x, mask)
    assert first["ok"] and again["ok"] and other["ok"]
    assert first["modelId"] == again["modelId"] != other["modelId"]
    assert first["modelId"].startswith(f"{os.getpid()}:")


class Wrapper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Masked()


def test_a_submodule_called_on_the_paused_line_is_offered(tmp_path):
    """Paused on `out = wrapper.inner(x, mask)` (in a forward: `self.lm(input_ids=…)`): only
    the root model was offered, not the module the line is about to call with known
    arguments."""
    wrapper = Wrapper()
    x, mask = torch.randn(2, 4, 5), torch.ones(2, 4)
    listed = _here({"op": "candidates"}) or wrapper.inner(x, mask)
    exprs = [c["expr"] for c in listed["modules"]]
    assert "wrapper.inner" in exprs, exprs
    inner = listed["modules"][exprs.index("wrapper.inner")]
    assert inner["reason"] == "called on this line" and inner["input"].startswith("from line ")
    assert exprs.index("wrapper.inner") < exprs.index("wrapper")


def test_a_loss_called_on_the_line_does_not_come_before_the_model(tmp_path):
    """Paused on `loss = criterion(out, y)`: the loss (a root, no parameters) was listed
    first, the default pick; the roots keep their order by size."""
    model, criterion = Masked(), nn.MSELoss()
    out, y = torch.randn(2, 3), torch.randn(2, 3)
    listed = _here({"op": "candidates"}) or (model, criterion(out, y))
    exprs = [c["expr"] for c in listed["modules"]]
    assert exprs.index("model") < exprs.index("criterion"), exprs


def test_a_smaller_model_called_on_the_line_comes_before_a_bigger_one(tmp_path):
    """Paused on `logits = head(feats)` with a bigger `backbone` in the frame: the head, a
    root the line calls, was listed after the backbone (roots by size), so Enter traced the
    backbone. A root with weights the line calls comes first; a loss (none) does not."""
    backbone = nn.Sequential(nn.Linear(48, 8), nn.ReLU(), nn.Linear(8, 16))
    head = nn.Linear(16, 10)
    feats = torch.randn(2, 16)
    listed = _here({"op": "candidates"}) or head(feats)
    exprs = [c["expr"] for c in listed["modules"]]
    assert exprs.index("head") < exprs.index("backbone"), exprs
    assert backbone is not None


def test_a_model_the_line_calls_on_a_call_is_still_called_on_this_line(tmp_path):
    """Paused on `logits = head(torch.randn(2, 16))` (an argument that is a call, never
    evaluated): the head was listed as a local after the bigger backbone, as if the line did
    not call it. Only its input falls to the next rule; the model is the line's."""
    backbone = nn.Sequential(nn.Linear(48, 8), nn.ReLU(), nn.Linear(8, 16))
    head = nn.Linear(16, 10)
    listed = _here({"op": "candidates"}) or head(torch.randn(2, 16))
    exprs = [c["expr"] for c in listed["modules"]]
    assert exprs.index("head") < exprs.index("backbone"), exprs
    first = next(c for c in listed["modules"] if c["expr"] == "head")
    assert first["reason"] == "called on this line", first
    assert backbone is not None


def test_a_value_that_is_no_model_is_named_with_its_article(tmp_path):
    """ "a is a int, not an nn.Module" (Visualize on a variable in the Variables view)."""
    a, h = 3, torch.ones(1)
    out = str(tmp_path / "g.msgpack")
    reply = _here({"op": "trace", "expr": "a", "out": out}) or (a, h)
    assert reply["error"] == "a is an int, not an nn.Module", reply
    reply = _here({"op": "trace", "expr": "h", "out": out}) or (a, h)
    assert reply["error"] == "h is a Tensor, not an nn.Module", reply
    from torchscope.failure import a_or_an

    assert [a_or_an(w) for w in ("UserDict", "Embedding", "NoneType", "OrderedDict")] == [
        "a UserDict",
        "an Embedding",
        "a NoneType",
        "an OrderedDict",
    ]


def test_attributes_subscripts_stars_and_tensor_methods_are_read(tmp_path):
    holder = Holder()
    batch = {"x": torch.randn(3, 5, dtype=torch.float64), "mask": torch.ones(3)}
    rest = (batch["mask"],)
    out = str(tmp_path / "g.msgpack")
    reply = _here({"op": "trace", "expr": "holder.net", "out": out}) or holder.net(
        batch["x"].float().unsqueeze(1), *rest
    )
    assert reply["ok"] and reply["summary"]["error"] is None, reply
    assert "holder.net(batch['x'].float().unsqueeze(1), *rest)" in reply["summary"]["input"]
    assert _inputs(out) == [([3, 1, 5], "float32"), ([3], "float32")]


def test_arguments_that_run_code_are_never_evaluated(tmp_path):
    model = Masked()
    loader = iter([(torch.randn(2, 5), torch.ones(2))] * 3)
    left = 3
    reply = _here({"op": "candidates"}) or model(*next(loader))
    first = next(c for c in reply["modules"] if c["expr"] == "model")
    assert first["inputs"] is False, first  # nothing in the frame fits either
    assert len(list(loader)) == left  # the loader did not advance


class Data:
    """A dataset whose indexing and `batch` property are the program's own code, with side
    effects (a counter, an iterator drawn from)."""

    def __init__(self) -> None:
        self.reads = 0
        self.it = iter([torch.randn(2, 5) for _ in range(3)])
        self.cache = {"x": torch.randn(2, 5)}

    def __getitem__(self, i: int) -> torch.Tensor:
        self.reads += 1
        return torch.randn(2, 5) + i

    @property
    def batch(self) -> torch.Tensor:
        return next(self.it)


def test_the_programs_own_indexing_and_properties_are_never_run(tmp_path):
    """`model(ds[0])` and `model(ds.batch)` on the paused line: listing the models and
    tracing one ran Data.__getitem__ and the property (the program then read other
    batches). Indexing, attributes and properties of the program's own classes are not
    evaluated; a dict's entry and a plain attribute still are."""
    model = nn.Linear(5, 3)
    ds = Data()
    listed = _here({"op": "candidates"}) or model(ds[0])
    first = next(c for c in listed["modules"] if c["expr"] == "model")
    assert not (first["input"] or "").startswith("from line "), first
    out = str(tmp_path / "g.msgpack")
    # the trace reads the line's arguments too: refused, so no input (not the next batch)
    reply = _here({"op": "trace", "expr": "model", "out": out}) or model(ds.batch)
    assert reply["kind"] == "needs-input", reply
    _here({"op": "candidates"}) or model(ds.batch)
    assert ds.reads == 0
    assert len(list(ds.it)) == 3  # the iterator did not advance
    # a plain attribute holding a dict, and its entry: read
    listed = _here({"op": "candidates"}) or model(ds.cache["x"])
    first = next(c for c in listed["modules"] if c["expr"] == "model")
    assert first["input"].startswith("from line "), first


@pytest.mark.parametrize(
    "source, line, expected",
    [
        ("out = model(x, mask=m)\n", 1, ["model(x, mask=m)"]),
        # a statement over several lines, paused at any of them
        (
            "out = self.model(\n    x,\n    mask=m[:, None],\n)\n",
            3,
            ["self.model(x, mask=m[:, None])"],
        ),
        # a compound statement: its header, not its body
        ("for b in batches:\n    y = net(b)\n", 1, []),
        ("for b in batches:\n    y = net(b)\n", 2, ["net(b)"]),
        ("if net(x.to(dev)).sum() > 0:\n    pass\n", 1, ["net(x.to(dev))", "x.to(dev)"]),
        # calls and lambdas among the arguments: not read
        ("y = model(next(it))\n", 1, ["next(it)"]),
        ("y = model(make(x))\n", 1, ["make(x)"]),
        ("y = f(x, key=lambda v: model(v))\n", 1, []),
        ("y = model(*xs, **batch)\n", 1, ["model(*xs, **batch)"]),
        ("not python (\n", 1, []),
    ],
)
def test_calls_on_line(source, line, expected):
    assert [c.text for c in calls_on_line(source, line)] == expected


def test_what_a_call_passes_is_split_from_its_callee():
    (call,) = calls_on_line("out = self.model(inputs, *rest, mask=m, **extra)\n", 1)
    assert (call.func, call.arguments) == ("self.model", "inputs, *rest, mask=m, **extra")


def test_a_next_call_graph_that_cannot_be_put_in_place_is_an_error_beside_it(tmp_path, monkeypatch):
    """The renamed graph is what the extension waits for: a rename that fails left the wait
    without an end (the reply said ok) and its files behind."""
    from torchscope import paused

    out = str(tmp_path / "next.msgpack")
    part = out + ".part"  # (gone: the rename fails)
    reply = {"ok": True, "path": out, "summary": {}}
    paused._publish(reply, part, out)
    assert reply["ok"] is False and "could not be written" in reply["error"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["next.msgpack.error.json"]
    assert json.loads((tmp_path / "next.msgpack.error.json").read_text())["kind"] == "internal"
