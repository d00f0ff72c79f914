"""Unit tests of the hints' logic (server/hints.py, server/traces.py) on graphs of real traces:
runs of a line, labels, hovers, and hinted lines following edits."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import torchscope
from torchscope.server import hints
from torchscope.server.traces import LineTable, TraceStore
from torchscope.tracer import trace_call
from torchscope.usercode import split_lines


def here(needle: str) -> int:
    """0-based line of this file holding `needle` (in a model below)."""
    return next(i for i, s in enumerate(Path(__file__).read_text().splitlines()) if needle in s)


class Gelu(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(0.79788 * (x + 0.044715 * torch.pow(x, 3.0))))


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.acts = nn.ModuleList([Gelu() for _ in range(3)])
        self.wide = nn.Linear(4, 6)

    def forward(self, x):
        for act in self.acts:
            x = act(x)
        y = self.wide(x)
        a, b = y.split([2, 4], dim=-1)
        return torch.cat([a, a * 2, b], dim=-1)


def indexed(model: nn.Module, *args: Any) -> dict[int, hints.LineInfo]:
    """This file's lines of a trace of `model`."""
    idx = hints.index_graph(torchscope.trace(model, *args).to_wire())
    return next(lines for file, lines in idx.files.items() if Path(file) == Path(__file__))


def test_runs_and_labels():
    lines = indexed(Twice(), torch.randn(2, 4))
    # one statement of many ops (five muls, adds, tanh, pow) run once per call of three
    gelu = lines[here("return 0.5 * x")]
    assert len(gelu.runs) == 3 and gelu.label() == "2×4 ×3"
    assert len(gelu.runs[0].made) == 8
    assert lines[here("x = act(x)")].label() == "2×4 ×3"  # a loop
    assert lines[here("y = self.wide(x)")].label() == "2×6"
    assert lines[here("a, b = y.split")].label() == "2×2, 2×4"  # two outputs
    assert lines[here("return torch.cat")].label() == "2×8"  # `a * 2` stays inside the line
    assert set(lines) == {
        here(s)
        for s in (
            "return 0.5 * x",
            "x = act(x)",
            "y = self.wide(x)",
            "a, b = y.split",
            "return torch.cat",
            "torchscope.trace(model, *args)",  # the line that called the model
        )
    }


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(4, 4))
        self.body = nn.Sequential(nn.Linear(4, 4))

    def forward(self, x):
        x = self.body(self.stem(x))
        x = x.transpose(0, 1).transpose(1, 0)
        for _ in range(2):
            x = x * 2
        return x


def test_calls_alike_on_one_line_are_one_run():
    lines = indexed(Nested(), torch.randn(2, 4))
    assert lines[here("x = self.body(self.stem(x))")].label() == "2×4"  # two Sequentials
    assert lines[here("x = x.transpose(0, 1).transpose(1, 0)")].label() == "2×4"
    assert lines[here("x = x * 2")].label() == "2×4 ×2"  # a loop: the same call, alike


class Layers(nn.Module):
    """A stack whose first layer is wider in than the rest: the loop's calls differ in
    their settings (in_features), not in what they are."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(6, 4), nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return x


def test_a_loop_over_a_module_list_runs_once_per_layer():
    """It was one run of six calls ("1×4", "total of 6 calls"): the first Linear's settings
    differ from the others', so the calls did not look alike."""
    lines = indexed(Layers(), torch.randn(1, 6))
    info = lines[here("x = torch.tanh(layer(x))")]
    assert len(info.runs) == 3
    assert info.label() == "1×4 ×3"


class TwoConvs(nn.Module):
    """A loop over a tuple of different attributes, and one statement calling a layer on
    its own output: told apart by the calls' columns, not by what they call."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(2, 3, 1)
        self.conv2 = nn.Conv1d(3, 5, 1)
        self.act = nn.Tanh()

    def forward(self, x):
        for conv in (self.conv1, self.conv2):
            x = conv(x)
        return self.act(self.act(x))


def test_a_loop_over_different_attributes_runs_once_per_attribute():
    """It was one run of two calls ("1×5×4", the last shape, no ×2): conv1 and conv2 are not
    items of one container, and a site had no column to tell a loop from a statement
    calling both; and `act(act(x))` was two runs ("×2") for one statement."""
    lines = indexed(TwoConvs(), torch.randn(1, 2, 4))
    info = lines[here("x = conv(x)")]
    assert [[m.path for m in r.made] for r in info.runs] == [["conv1"], ["conv2"]]
    assert info.label() == "1×3×4, 1×5×4 ×2"
    info = lines[here("return self.act(self.act(x))")]
    assert len(info.runs) == 1 and info.label() == "1×5×4"


def test_a_site_has_the_calls_column():
    graph = torchscope.trace(TwoConvs(), torch.randn(1, 2, 4))
    text = Path(__file__).read_text().splitlines()
    acts = [n for n in graph.nodes if n.path == "act"]
    line = text[here("return self.act(self.act(x))")]
    # the outer call starts at `self.act(self.act`, the inner one at its argument
    assert sorted(n.site.col for n in acts) == [line.index("self.act"), line.rindex("self.act")]
    convs = [n for n in graph.nodes if n.path in ("conv1", "conv2")]
    assert {n.site.col for n in convs} == {text[here("x = conv(x)")].index("conv(")}
    wire = graph.to_wire()
    assert all(w["site"]["col"] == n.site.col for w, n in zip(wire["nodes"], graph.nodes) if n.site)
    again = torchscope.Graph.from_wire(wire)
    assert [n.site for n in again.nodes] == [n.site for n in graph.nodes]


def test_runs_without_columns_are_told_as_before():
    """A graph file written before sites had columns: runs are split by what is called."""
    wire = torchscope.trace(TwoConvs(), torch.randn(1, 2, 4)).to_wire()
    for n in wire["nodes"]:
        if n.get("site"):
            n["site"].pop("col", None)
    lines = next(v for f, v in hints.index_graph(wire).files.items() if Path(f) == Path(__file__))
    assert len(lines[here("x = conv(x)")].runs) == 1
    assert len(lines[here("return self.act(self.act(x))")].runs) == 2


def test_label_names_at_most_three_shapes():
    info = hints.LineInfo(
        0, [hints.Run([], [hints.TensorOut(0, (i, 2), "float32")]) for i in range(1, 6)]
    )
    assert info.label() == "1×2, 2×2, 3×2 (+2) ×5"
    assert hints.LineInfo(0, [hints.Run([], [])]).label() is None
    assert hints.shape_text(()) == "scalar" and hints.shape_text(None) == "?"


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)
        return h @ torch.ones(2, 2)


def test_the_line_that_raised():
    graph = trace_call(Broken(), (torch.randn(2, 4),), raise_errors=False)
    lines = next(
        lines
        for file, lines in hints.index_graph(graph.to_wire()).files.items()
        if Path(file) == Path(__file__)
    )
    info = lines[here("return h @ torch.ones(2, 2)")]
    assert info.error is not None and info.error.startswith("RuntimeError: ")
    text = hints.hover_markdown(info, "/g.msgpack", "cpu")
    assert "raised **RuntimeError" in text
    assert lines[here("h = self.fc(x)")].label() == "2×3"


class RaisesMidLine(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return torch.tanh(self.fc(x)) @ torch.ones(2, 2)  # raises-mid-line


def test_the_hover_of_the_line_that_raised_shows_what_it_made_before():
    """The line's own calls fed the one that raised: their tensors are what the user came
    to see (they were no line outputs: the failing call, on the line too, took them)."""
    graph = trace_call(RaisesMidLine(), (torch.randn(5, 4),), raise_errors=False)
    info = next(
        lines
        for file, lines in hints.index_graph(graph.to_wire()).files.items()
        if Path(file) == Path(__file__)
    )[here("# raises-mid-line")]
    assert info.error is not None
    text = hints.hover_markdown(info, "/g.msgpack", "cpu")
    assert "raised **RuntimeError" in text
    assert "5×3" in text, text  # fc's and tanh's output, made before the matmul raised


class Namesakes(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu(x) * F.relu(-x)  # namesakes-relu
        return y.add(1).add_(2)  # namesakes-add


class NestedNamesakes(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(3, 5)
        self.act = nn.Tanh()

    def forward(self, x):
        h = self.act(self.up(self.act(x)))  # nested-act
        return F.relu(torch.relu(h) - 1) + torch.relu(h)  # nested-relu


def _hover_on(line: int, info: hints.LineInfo, needle: str) -> str:
    """The hover with the cursor on the last character of `needle` in this file's `line`."""
    text = Path(__file__).read_text().splitlines()[line]
    found = hints.hover(info, "/g.msgpack", "cpu", line, text, text.index(needle) + len(needle) - 1)
    assert found is not None
    return found.contents.value


def test_a_hover_on_a_name_picks_the_call_at_its_column_among_its_namesakes():
    """`self.act(self.up(self.act(x)))`: each `act` is one call, told by the column its call
    starts at; a hover on either named both ("ran 2×") with both shapes."""
    lines = indexed(NestedNamesakes(), torch.randn(2, 3))
    line = here("# nested-act")
    text = Path(__file__).read_text().splitlines()[line]
    outer = text.index("self.act") + len("self.a")
    inner = text.rindex("self.act") + len("self.a")
    for column, shape in ((outer, "`2×5`"), (inner, "`2×3`")):
        found = hints.hover(lines[line], "/g.msgpack", "cpu", line, text, column)
        assert found is not None
        head, *rest = found.contents.value.split("\n\n")
        assert head == "**Tanh** `act`" and rest[0].startswith(shape), found.contents.value
    line = here("# nested-relu")
    text = Path(__file__).read_text().splitlines()[line]
    for needle in ("torch.relu(h) -", "torch.relu(h)  #"):
        column = text.index(needle) + len("torch.re")
        found = hints.hover(lines[line], "/g.msgpack", "cpu", line, text, column)
        assert found is not None and found.contents.value.startswith("**relu**\n\n"), needle


def test_a_hover_on_a_name_picks_the_call_written_there_not_its_namesakes():
    """`self.relu` (a module) and `F.relu` (an op), `add` and `add_`: one word each, and
    the hover on one named the other too ("ran 2×")."""
    lines = indexed(Namesakes(), torch.randn(2, 3))
    relu, add = here("# namesakes-relu"), here("# namesakes-add")
    module = _hover_on(relu, lines[relu], "self.relu")
    assert module.startswith("**ReLU** `relu`") and "ran" not in module.split("\n")[0], module
    op = _hover_on(relu, lines[relu], "F.relu")
    assert op.startswith("**relu**") and "ran" not in op.split("\n")[0], op
    assert _hover_on(add, lines[add], "add_").startswith("**add\\_**")
    plain = _hover_on(add, lines[add], "y.add")
    assert plain.startswith("**add**") and "ran" not in plain.split("\n")[0], plain


class NanLater(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        with torch.no_grad():
            self.blocks[2].weight[0, 0] = float("nan")

    def forward(self, x):
        a, b = x.abs() * 2, torch.log(-x.abs() - 5)  # nan-later-pair
        for blk in self.blocks:
            x = blk(x)  # nan-later-loop
        return x, a, b


def test_a_hover_shows_the_nans_of_every_tensor_the_line_made_not_the_firsts():
    """A loop over blocks showed block 0's statistics alone (a NaN from block 2 hidden), and
    `a, b = …, torch.log(…)` only `a`'s, on the NaN origin's own line: tensors alike in shape
    and dtype are one line of statistics over them all."""
    lines = indexed(NanLater(), torch.randn(2, 8))
    loop = hints.hover_markdown(lines[here("# nan-later-loop")], "/g.msgpack", "cpu")
    assert "4 tensors" in loop and "**nan 18**" in loop, loop  # 2 from block 2, 16 from 3
    pair = hints.hover_markdown(lines[here("# nan-later-pair")], "/g.msgpack", "cpu")
    assert "2 tensors" in pair and "**nan 16**" in pair, pair  # all of b, none of a


def test_a_share_of_zeros_short_of_all_is_not_written_as_all():
    out = hints.TensorOut(0, (4096,), "float32", {"zeros": 4095 / 4096, "numel": 4096})
    assert "zeros 4,095 (>99.9%)" in hints._tensor_text([out], "")
    out = hints.TensorOut(0, (4096,), "float32", {"zeros": 1.0, "numel": 4096})
    assert "zeros 4,096 (100%)" in hints._tensor_text([out], "")


def test_positions_in_utf16():
    line = "    y = f(x)  # 🙂 ünïcode"
    assert hints.utf16_len(line) == len(line) + 1  # the emoji is two UTF-16 units
    assert hints.word_at(line, 4) == ("y", 4, 5) and hints.word_at(line, 10) == ("x", 10, 11)
    assert hints.word_at(line, 2) is None
    assert hints.word_at("🙂 relu", 3) == ("relu", 3, 7)  # after the emoji (2 units) and a space
    assert split_lines("a\r\nb\rc\nd") == ["a", "b", "c", "d"]


DOC = textwrap.dedent(
    """\
    def forward(self, x):
        x = self.a(x)
        x = self.b(x)
        return x
    """
)


def table() -> LineTable:
    t = LineTable({1: hints.LineInfo(1, []), 2: hints.LineInfo(2, [])})
    t.snapshot(DOC)
    return t


def after(text: str, *changes: tuple[int, int, str]) -> LineTable:
    t = table()
    t.apply(list(changes), text)
    return t


def test_lines_follow_edits():
    a, b = "    x = self.a(x)", "    x = self.b(x)"
    # a line typed at the start of a hinted line pushes it down
    t = after(DOC.replace(a, "    pass\n" + a), (1, 1, "    pass\n"))
    assert sorted(t.lines) == [2, 3]
    # Enter at the end of a hinted line: it stays
    t = after(DOC.replace(a, a + "\n"), (1, 1, "\n"))
    assert sorted(t.lines) == [1, 3]
    # Enter in the middle of one: that line changed
    t = after(DOC.replace("self.a(x)", "self.a(\nx)"), (1, 1, "\n"))
    assert sorted(t.lines) == [3]
    # the hinted line deleted, with its line break
    t = after(DOC.replace(a + "\n", ""), (1, 2, ""))  # the range (1,0)-(2,0)
    assert sorted(t.lines) == [1] and t.lines[1].line == 2
    # several changes in one notification (multi-cursor), applied in order
    text = "# top\n" + DOC.replace(b, b + "  # b")
    t = after(text, (2, 2, "  # b"), (0, 0, "# top\n"))
    assert sorted(t.lines) == [2]
    # the whole text replaced: lines whose text is where it was stay
    t = table()
    t.apply([(None, None, DOC.replace("self.b", "self.c"))], DOC.replace("self.b", "self.c"))
    assert sorted(t.lines) == [1]


def test_after_a_range_deletion():
    t = table()
    t.apply([(0, 1, "")], DOC[len("def forward(self, x):\n") :])  # (0,0)-(1,0) deleted
    assert {n: i.line for n, i in t.lines.items()} == {0: 1, 1: 2}


def test_a_line_split_from_text_typed_at_its_start_gets_its_hint_back():
    # QA: Home, `y = 1` typed, Enter: the hinted line, unchanged on the next line, lost its
    # hint for good at the first keystroke (only an undo to the traced text brought it back)
    a = "    x = self.a(x)"
    t = table()
    typed = ""
    for ch in "y = 1":  # typed at column 4, a keystroke a notification
        typed += ch
        t.apply([(1, 1, ch)], DOC.replace(a, "    " + typed + a[4:]))
        assert sorted(t.lines) == [2]
    # Enter after what was typed (VS Code indents the new line as the one it came from)
    t.apply([(1, 1, "\n    ")], DOC.replace(a, "    y = 1\n" + a))
    assert {n: i.line for n, i in t.lines.items()} == {2: 1, 3: 2}
    # the same with the file's only hinted line
    t = LineTable({1: hints.LineInfo(1, [])})
    t.snapshot(DOC)
    t.apply([(1, 1, "y")], DOC.replace(a, "    y" + a[4:]))
    assert not t.lines
    t.apply([(1, 1, " = 1\n    ")], DOC.replace(a, "    y = 1\n" + a))
    assert {n: i.line for n, i in t.lines.items()} == {2: 1}


def test_the_first_of_two_like_lines_deleted_leaves_the_second_its_hint():
    # QA: Ctrl+Shift+K on the first of two `x = self.pool(x)` lines: the one left showed
    # the deleted line's shape, and a click on the second call opened the line after it
    doc = "def forward(self, x):\n    x = self.pool(x)\n    x = self.pool(x)\n    return x\n"
    t = LineTable({1: hints.LineInfo(1, []), 2: hints.LineInfo(2, [])})
    t.snapshot(doc)
    t.apply([(1, 2, "")], doc.replace("    x = self.pool(x)\n", "", 1))  # (1,0)-(2,0)
    assert {n: i.line for n, i in t.lines.items()} == {1: 2}


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def indexed_doc() -> hints.Indexed:
    return hints.Indexed("Net", "cpu", {"/w/net.py": {1: hints.LineInfo(1, [])}})


def test_edits_made_during_a_trace_are_replayed():
    store = TraceStore()
    mark = store.begin({"/w/net.py": DOC})
    store.did_change("/w/net.py", [(0, 0, "import torch\n")], "import torch\n" + DOC)
    store.add("/w/net.py", "/g.msgpack", indexed_doc(), mark, {})
    store.end(mark)
    found = store.table("/w/net.py")
    assert found is not None and sorted(found[1].lines) == [2]
    # no trace running: nothing is logged
    store.did_change("/w/net.py", [(0, 0, "#\n")], "#\nimport torch\n" + DOC)
    assert store._log == []
    assert sorted(found[1].lines) == [3]


def test_newest_trace_wins_and_closing_an_edited_file_drops_it():
    store = TraceStore()
    store.add("a", "/a.msgpack", indexed_doc(), None, {"/w/net.py": DOC})
    store.add("b", "/b.msgpack", indexed_doc(), None, {"/w/net.py": DOC})
    found = store.table("/w/net.py")
    assert found is not None and found[0].graph == "/b.msgpack"
    store.touch(store.traces["a"])
    found = store.table("/w/net.py")
    assert found is not None and found[0].graph == "/a.msgpack"
    store.did_close("/w/net.py")  # not edited: kept
    assert store.table("/w/net.py") is not None
    store.did_change("/w/net.py", [(3, 3, "\n")], DOC + "\n")
    store.did_close("/w/net.py")
    assert store.table("/w/net.py") is None


def test_a_file_opened_after_the_trace_is_snapshotted_then(tmp_path):
    store = TraceStore()
    store.add("k", "/g.msgpack", indexed_doc(), None, {})
    found = store.table("/w/net.py")
    assert found is not None and found[1].texts is None
    store.did_open("/w/net.py", DOC)
    assert found[1].texts == {1: "    x = self.a(x)"}


def test_load_reads_and_indexes_a_graph_file(tmp_path, loop):
    path = tmp_path / "g.msgpack"
    torchscope.trace(Twice(), torch.randn(2, 4)).save(path)
    store = TraceStore()
    seen: list[str] = []

    async def go() -> None:
        store.load("k", str(path), None, dict, lambda t: seen.append(t.key), seen.append)
        await store.settled()

    loop.run_until_complete(go())
    assert seen == ["k"]
    found = store.table(__file__)
    assert found is not None and found[1].lines[here("y = self.wide(x)")].label() == "2×6"
    (tmp_path / "bad.msgpack").write_bytes(b"\x93not a graph")

    async def bad() -> None:
        store.load("k2", str(tmp_path / "bad.msgpack"), None, dict, seen.append, seen.append)
        await store.settled()

    loop.run_until_complete(bad())
    assert seen[1].startswith("cannot read the graph") and "k2" not in store.traces


def test_each_model_gives_the_hints_of_its_newest_trace_and_many_models_keep_a_file():
    """(Review of the per-model traces.) A model's older trace under another key (a panel's
    graph indexed again after a restart) gave hints on lines its newer trace no longer ran;
    and eight models traced in one file pushed every other file's hints out."""

    def doc(model: str, lines: list[int]) -> hints.Indexed:
        return hints.Indexed(model, "cpu", {"/w/net.py": {n: hints.LineInfo(n, []) for n in lines}})

    store = TraceStore()
    store.add("torchscope/panel:1", "/old.msgpack", doc("Net", [1, 3]), None, {"/w/net.py": DOC})
    store.add("/w/net.py#Net", "/new.msgpack", doc("Net", [1]), None, {"/w/net.py": DOC})
    store.add("/w/net.py#Block", "/block.msgpack", doc("Block", [2]), None, {"/w/net.py": DOC})
    assert {n: t.graph for n, (t, _) in store.hinted("/w/net.py").items()} == {
        1: "/new.msgpack",
        2: "/block.msgpack",
    }
    zoo = {
        f"Z{i}": hints.Indexed(f"Z{i}", "cpu", {"/w/zoo.py": {1: hints.LineInfo(1, [])}})
        for i in range(12)
    }
    for name, indexed in zoo.items():
        store.add(f"/w/zoo.py#{name}", f"/{name}.msgpack", indexed, None, {})
    assert sorted(store.hinted("/w/net.py")) == [1, 2]


class Split(nn.Module):
    def forward(self, x):
        h = torch.cat([x * 0, x * 0 + 5, x * float("nan")], dim=-1)
        q, k, v = h.chunk(3, dim=-1)  # three of one shape
        return q + 1, k + 1, v + 1


def test_the_hover_of_a_line_making_several_of_one_shape_reads_them_all():
    # QA: `q, k, v = h.chunk(3, -1)` hovered with q's statistics alone ("min 0 · max 0 ·
    # zeros 8 (100%)"), hiding the NaNs of v: one call's outputs of one shape were one tensor
    info = indexed(Split(), torch.randn(2, 4))[here("q, k, v = h.chunk")]
    assert info.label() == "2×4"
    text = hints.hover_markdown(info, "/g.msgpack", "cpu")
    assert "3 tensors" in text and "max 5" in text and "nan 8" in text, text


_LINKED = "fc` [Open docs](https://example/steal) `"


class NamedWithMarkdown(nn.Module):
    """Module paths are names anyone can give (`add_module`), and a graph file someone else
    made holds any path: they show in hovers as code, never as markdown."""

    def __init__(self):
        super().__init__()
        self.add_module(_LINKED, nn.Linear(4, 4))
        self.add_module("b[x](command:run)", nn.Linear(4, 4))
        self.add_module("c\n\n[Open docs](https://example/steal2)", nn.Linear(4, 4))

    def forward(self, x):
        x = getattr(self, _LINKED)(x)  # one-markdown-layer
        for m in self.children():  # markdown-loop
            x = m(x)
        return x


def _html(markdown: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").render(markdown)


def test_module_paths_in_a_hover_are_code_never_links():
    graph = trace_call(NamedWithMarkdown(), (torch.randn(2, 4),))
    lines = next(
        lines
        for file, lines in hints.index_graph(graph.to_wire()).files.items()
        if Path(file) == Path(__file__)
    )
    for needle in ("# one-markdown-layer", "x = m(x)"):
        text = hints.hover_markdown(lines[here(needle)], "/g.msgpack", "cpu")
        html = _html(text)
        assert "<a " not in html.replace('<a href="command:torchscope.', ""), html
        assert "https://example/steal" in html
        assert '<a href="https://' not in html, html
        assert _LINKED.strip("` ") in html.replace("&quot;", '"'), html
    # (the hover's own Show in graph link stays: the only one)
    assert html.count("<a ") == text.count("](command:torchscope.")
