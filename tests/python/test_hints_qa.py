"""Defects a QA pass of the inlay hints found, through the real server and runner (pygls
client) and in the pure functions behind them: an imported file open with unsaved edits,
a document reopened after its file changed on disk, a loop over layers of different kinds,
hovers on non-ASCII names, an edit on a continuation line of a multi-line statement."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any, Optional

import pytest
import torch.nn.modules.container
from lsprotocol import types
from test_server_hints import Docs, hints, trace
from test_server_lsp import TIMEOUT, Session, server_env, uri, write

from torchscope.server import hints as hints_mod
from torchscope.server import traces
from torchscope.server.traces import LineTable, TraceStore, file_key

LIBU = """
    import torch


    def block(x, w):
        h = x @ w
        return h.relu()
"""

MAINU = """
    import torch
    from torch import nn
    from libu import block


    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 8))

        def forward(self, x):
            y = block(x, self.w)
            return y.sum(-1)
"""

REOPEN = """
    import torch
    from torch import nn


    class E(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 8)
            self.b = nn.Linear(8, 3)

        def forward(self, x):
            h = self.a(x)
            o = self.b(h.relu())
            return o.softmax(-1)
"""

SEQ = """
    import torch
    from torch import nn


    class S(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
            self.layers = nn.ModuleList([nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 4), nn.Tanh()])

        def forward(self, x):
            x = self.mlp(x)
            for layer in self.layers:
                x = layer(x)
            return x
"""

WORDS = """
    import torch
    from torch import nn


    class W(nn.Module):
        def __init__(self):
            super().__init__()
            self.λ = nn.Linear(4, 6)

        def forward(self, x):
            größe = self.λ(x).relu()
            return größe * 2
"""

MULTI = """
    import torch
    from torch import nn


    class C(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 16)

        def forward(self, x):
            x = self.fc(x)
            h = torch.cat(
                [x, x],
                dim=-1,
            )
            return h
"""

CONTAINER = Path(torch.nn.modules.container.__file__)


def lines_of(text: str, table: dict[str, str]) -> dict[int, str]:
    """{line: label} of `text`'s lines holding each needle."""
    rows = text.split("\n")
    return {next(i for i, s in enumerate(rows) if n in s): label for n, label in table.items()}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hints_qa")
    write(root, "libu.py", LIBU)
    write(root, "mainu.py", MAINU)
    write(root, "seqm.py", SEQ)
    write(root, "words.py", WORDS)
    write(root, "multi.py", MULTI)
    return root


@pytest.fixture(scope="module")
def lsp(workspace: Path):
    session = Session(sys.executable, server_env(), workspace, TIMEOUT * 5)
    yield session
    session.close()


@pytest.fixture
def docs(lsp: Session):
    d = Docs(lsp)
    yield d
    d.close_all()


def hover_at(lsp: Session, path: Path, line: int, character: int) -> Optional[tuple[str, Any]]:
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        position=types.Position(line=line, character=character),
    )
    found = lsp.run(lsp.client.text_document_hover_async(params))
    if found is None:
        return None
    assert isinstance(found.contents, types.MarkupContent) and found.range is not None
    return found.contents.value, found.range


# -- 1. an imported file open with unsaved edits -----------------------------------------


def test_an_imported_file_with_unsaved_edits_gets_the_saved_files_hints(lsp, workspace, docs):
    """The runner imports libu.py as saved; the editor shows a line typed on top and
    another changed, unsaved. The saved lines' hints land on the same lines of the editor's
    text (one down), the changed line gets none. (They landed one line up: on `def block`.)"""
    lib, main = workspace / "libu.py", workspace / "mainu.py"
    docs.open(main)
    saved = lib.read_text()
    editor = '"""Helpers (typed, not saved)."""\n' + saved.replace(
        "return h.relu()", "return h.relu() * 2"
    )
    docs.open(lib, editor)
    trace(lsp, main, "M", input="torch.randn(2, 4)")
    assert hints(lsp, lib, editor) == lines_of(editor, {"h = x @ w": "2×8"})
    # saved now: the next trace ran the editor's text, and every line is hinted
    lib.write_text(editor)
    try:
        trace(lsp, main, "M", input="torch.randn(2, 4)")
        assert hints(lsp, lib, editor) == lines_of(
            editor, {"h = x @ w": "2×8", "return h.relu() * 2": "2×8"}
        )
    finally:
        lib.write_text(saved)


# -- 2. reopened after the file changed on disk ------------------------------------------


def test_a_document_reopened_after_its_file_changed_on_disk(lsp, workspace, docs):
    """Traced, closed without an edit, two lines added on top and one hinted line changed
    on disk, opened again: the hints move down with their lines, the changed line has none.
    (The old hints came back at the old line numbers.)"""
    path = write(workspace, "reopen.py", REOPEN)
    docs.open(path)
    trace(lsp, path, "E", input="torch.randn(2, 4)")
    table = {"h = self.a(x)": "2×8", "o = self.b(h.relu())": "2×3", "return o.softmax": "2×3"}
    assert hints(lsp, path) == lines_of(path.read_text(), table)
    docs.close(path)
    changed = '"""Docstring added by someone else."""\n\n' + path.read_text().replace(
        "softmax(-1)", "softmax(dim=-1)"
    )
    path.write_text(changed)
    docs.open(path)
    del table["return o.softmax"]
    assert hints(lsp, path) == lines_of(changed, table)


# -- 3. a loop over layers of different kinds ---------------------------------------------


def test_a_loop_over_layers_of_different_kinds_runs_once_per_layer(lsp, workspace, docs):
    """`for layer in self.layers: x = layer(x)` over Linear, ReLU, Linear, Tanh, and torch's
    own Sequential loop over Linear, ReLU, Linear: one run per layer (it was one run, `2×4`)."""
    seq = workspace / "seqm.py"
    docs.open(seq)
    trace(lsp, seq, "S", input="torch.randn(2, 8)")
    line = lines_of(seq.read_text(), {"x = layer(x)": ""}).popitem()[0]
    assert hints(lsp, seq)[line] == "2×16, 2×4 ×4"
    found = hover_at(lsp, seq, line, 12)
    assert found is not None
    title = found[0].split("\n\n")[0]
    assert "ran 4×" in title and "(`layers.0` … `layers.3`)" in title
    assert all(f"**{name}**" in title for name in ("Linear", "ReLU", "Tanh"))
    docs.open(CONTAINER)
    line = lines_of(CONTAINER.read_text(), {"input = module(input)": ""}).popitem()[0]
    assert hints(lsp, CONTAINER) == {line: "2×32, 2×4 ×3"}


def wire(paths: list[str], names: list[str], shapes: list[list[int]]) -> dict[str, Any]:
    """A graph of module calls made back to back on line 10 of /w/m.py, each fed by the one
    before (the first by the input), the last feeding the output."""
    site = {"file": "/w/m.py", "line": 10, "func": "forward"}
    nodes: list[dict[str, Any]] = [
        {"kind": "input", "name": "x", "parent": None, "site": None},
        {"kind": "module", "name": "Net", "parent": None, "site": None, "path": ""},
    ]
    for path, name in zip(paths, names):
        nodes.append({"kind": "module", "name": name, "parent": 1, "site": site, "path": path})
    nodes.append({"kind": "output", "name": "out", "parent": None, "site": None})
    edges = [{"src": 0, "dst": 2, "shape": [2, 8], "dtype": "float32"}]
    for i, shape in enumerate(shapes):
        edges.append({"src": 2 + i, "dst": 3 + i, "shape": shape, "dtype": "float32"})
    return {"nodes": nodes, "edges": edges, "model": {"name": "Net", "device": "cpu"}}


def test_runs_of_a_container_loop_on_synthetic_graphs():
    info = hints_mod.index_graph(
        wire(
            ["layers.0", "layers.1", "layers.2", "layers.3"],
            ["Linear", "ReLU", "Linear", "Tanh"],
            [[2, 16], [2, 16], [2, 4], [2, 4]],
        )
    ).files["/w/m.py"][9]
    assert [[m.path for m in r.made] for r in info.runs] == [[f"layers.{i}"] for i in range(4)]
    assert info.label() == "2×16, 2×4 ×4"
    # two different attributes on one line stay one run (`self.head(self.stem(x))`)
    info = hints_mod.index_graph(
        wire(["stem", "head"], ["Linear", "Tanh"], [[2, 16], [2, 16]])
    ).files["/w/m.py"][9]
    assert len(info.runs) == 1 and info.label() == "2×16"


# -- 4. hovers on non-ASCII names ----------------------------------------------------------


def test_hover_on_non_ascii_names(lsp, workspace, docs):
    """Hover words follow Python's identifier rules: `größe` is one word (the range was
    `gr`), `λ` names the Linear `self.λ` (the hover was the whole line's)."""
    path = workspace / "words.py"
    docs.open(path)
    trace(lsp, path, "W", input="torch.randn(2, 4)")
    line = lines_of(path.read_text(), {"größe = self.λ(x)": ""}).popitem()[0]
    text = path.read_text().split("\n")[line]
    found = hover_at(lsp, path, line, text.index("größe") + 1)
    assert found is not None and (found[1].start.character, found[1].end.character) == (
        text.index("größe"),
        text.index("größe") + len("größe"),
    )
    found = hover_at(lsp, path, line, text.index("λ"))
    assert found is not None
    assert found[0].startswith("**Linear** `λ`\n\n") and "relu" not in found[0]
    assert (found[1].start.character, found[1].end.character) == (
        text.index("λ"),
        text.index("λ") + 1,
    )


def test_word_at_follows_identifier_rules_in_utf16():
    line = "    größe = self.λ(x) + 𝑥2 + 3e5"
    assert hints_mod.word_at(line, 5) == ("größe", 4, 9)
    assert hints_mod.word_at(line, 9) == ("größe", 4, 9)  # just after it
    col = line.index("λ")
    assert hints_mod.word_at(line, col) == ("λ", col, col + 1)
    col = line.index("𝑥")  # (a BMP-only prefix: the str index is the UTF-16 column)
    assert hints_mod.word_at(line, col + 1) == ("𝑥2", col, col + 3)  # 𝑥 is two UTF-16 units
    col = hints_mod.utf16_len(line) - 3  # on the `3` of `3e5`: a number, not a name
    assert hints_mod.word_at(line, col) is None
    assert hints_mod.word_at(line, col + 2) == ("e5", col + 1, col + 3)
    decomposed = "a = gro\u0308ße"  # ö as o and a combining diaeresis: one identifier
    assert hints_mod.word_at(decomposed, 6) == ("gro\u0308ße", 4, 10)


# -- 5. an edit on a continuation line of a multi-line statement --------------------------


def test_an_edit_on_a_continuation_line_drops_the_statements_hint(lsp, workspace, docs):
    path = workspace / "multi.py"
    docs.open(path)
    trace(lsp, path, "C", input="torch.randn(2, 8)")
    table = {"x = self.fc(x)": "2×16", "h = torch.cat(": "2×32"}
    assert hints(lsp, path) == lines_of(path.read_text(), table)
    line = lines_of(path.read_text(), {"dim=-1,": ""}).popitem()[0]
    column = path.read_text().split("\n")[line].index("-1")
    docs.edit(path, line, column, line, column + 2, "0")  # dim=-1 → dim=0: the cat is 4×16 now
    del table["h = torch.cat("]
    assert hints(lsp, path, docs.texts[uri(path)]) == lines_of(path.read_text(), table)


MULTI_DOC = textwrap.dedent(
    """\
    def forward(self, x):
        x = self.a(x)
        h = torch.cat(
            [x, x],
            dim=-1,
        )
        return h
    """
)


def multi_table() -> LineTable:
    t = LineTable({1: hints_mod.LineInfo(1, []), 2: hints_mod.LineInfo(2, [])})
    t.snapshot(MULTI_DOC)
    return t


def test_a_statements_lines_are_one_block_for_edits():
    # a continuation line changed: the statement's hint goes, the line above stays
    t = multi_table()
    t.apply([(4, 4, "0")], MULTI_DOC.replace("dim=-1", "dim=0"))
    assert sorted(t.lines) == [1]
    # Enter after its closing line, a line typed above it: it stays, moved
    t = multi_table()
    text = MULTI_DOC.replace("    )\n", "    )\n\n")
    t.apply([(5, 5, "\n")], text)
    t.apply([(2, 2, "    pass\n")], text.replace("    h =", "    pass\n    h =", 1))
    assert sorted(t.lines) == [1, 3]
    # its first line changed
    t = multi_table()
    t.apply([(2, 2, "    g = torch.cat(")], MULTI_DOC.replace("h = torch", "g = torch"))
    assert sorted(t.lines) == [1]


def test_lines_a_change_repeats_keep_no_hint_of_another_copy():
    """A change that swaps two lines keeps both hints (test_server_hints); one that adds a
    copy of a repeated line (`x = self.act(x)`) must not hand the copies' hints round
    (review: the new act after conv0 got conv1's act, conv1's act got conv2's)."""
    old = (
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        x = self.conv1(x)\n"
        "        x = self.act(x)\n"
        "        x = self.conv2(x)\n"
        "        x = self.act(x)\n"
        "        return x\n"
    )
    body = (
        "        x = self.conv0(x)\n"
        "        x = self.act(x)\n"
        "        x = self.conv1(x)\n"
        "        x = self.act(x)\n"
        "        x = self.conv2(x)\n"
        "        x = self.act(x)\n"
        "        return x"
    )
    lines = old.split("\n")
    new = "\n".join(lines[:2] + body.split("\n") + lines[7:])
    t = LineTable({n: hints_mod.LineInfo(n, []) for n in (2, 3, 4, 5)})
    t.snapshot(old)
    t.apply([(2, 6, body)], new)  # the body replaced in one change
    doc = new.split("\n")
    wrong = {n: doc[n] for n in t.lines if "act" in doc[n]}
    assert wrong == {}, wrong  # (which act ran as which can't be told: none keeps a hint)
    # two lines swapped in one change: each keeps its own
    swapped = "\n".join(lines[:2] + [lines[3], lines[2]] + lines[4:])
    t = LineTable({n: hints_mod.LineInfo(n, [n]) for n in (2, 3, 4, 5)})
    t.snapshot(old)
    t.apply([(2, 3, f"{lines[3]}\n{lines[2]}")], swapped)
    assert {n: info.runs for n, info in t.lines.items()} == {2: [3], 3: [2], 4: [4], 5: [5]}
    # two pairs swapped at once (multi-cursor Alt+Down: the changes come last first)
    both = "\n".join(lines[:2] + [lines[3], lines[2], lines[5], lines[4]] + lines[6:])
    t = LineTable({n: hints_mod.LineInfo(n, [n]) for n in (2, 3, 4, 5)})
    t.snapshot(old)
    t.apply(
        [(4, 5, f"{lines[5]}\n{lines[4]}"), (2, 3, f"{lines[3]}\n{lines[2]}")],
        both,
    )
    assert {n: info.runs for n, info in t.lines.items()} == {2: [3], 3: [2], 4: [5], 5: [4]}


# -- the line mapping ------------------------------------------------------------------------


def test_map_lines():
    old = ["a", "b", "c", "d"]
    assert traces.map_lines(old, old) == {0: 0, 1: 1, 2: 2, 3: 3}
    assert traces.map_lines(old, ["top", "", "a", "b", "c", "d"]) == {0: 2, 1: 3, 2: 4, 3: 5}
    assert traces.map_lines(old, ["a", "B", "c", "d"]) == {0: 0, 2: 2, 3: 3}  # a changed line: none
    assert traces.map_lines(old, ["a", "c", "d"]) == {0: 0, 2: 1, 3: 2}  # a removed line
    assert traces.map_lines(old, ["a", "x", "y", "b", "c", "d"]) == {0: 0, 1: 3, 2: 4, 3: 5}
    assert traces.map_lines(["", "x", "", "x", ""], ["", "x", ""]) in (
        {0: 0, 1: 1, 2: 2},
        {2: 0, 3: 1, 4: 2},
    )  # (repeated lines: one consistent matching)


def test_a_table_follows_another_text_line_by_line():
    """What ran (the file on disk) mapped onto the editor's text: equal lines keep their
    hints, changed ones lose them, a statement keeps its hint only with all its lines."""
    t = multi_table()
    t.remap("# header\n" + MULTI_DOC)
    assert sorted(t.lines) == [2, 3] and t.texts == {
        2: "    x = self.a(x)",
        3: "    h = torch.cat(",
    }
    t = multi_table()
    t.remap(MULTI_DOC.replace("self.a(x)", "self.a(x) * 2").replace("[x, x]", "[x, x, x]"))
    assert sorted(t.lines) == []
    t = LineTable({1: hints_mod.LineInfo(1, [])})  # the text it was made for not known: taken
    t.remap(MULTI_DOC)
    assert sorted(t.lines) == [1] and t.texts == {1: "    x = self.a(x)"}


def test_what_ran_is_the_file_on_disk_for_all_but_the_traced_file(tmp_path):
    """The store maps a file's lines from the text the runner imported (the file on disk,
    read when the trace begins; the traced file: the text sent) onto the open document."""
    lib = tmp_path / "lib.py"
    lib.write_text(MULTI_DOC)
    net = tmp_path / "net.py"
    net.write_text("saved\n")
    store = TraceStore()
    editor = "# unsaved\n" + MULTI_DOC
    sent = "x\n" + MULTI_DOC
    mark = store.begin({file_key(lib): editor, file_key(net): sent}, (file_key(net), sent))
    files = {str(lib): {1: hints_mod.LineInfo(1, [])}, str(net): {2: hints_mod.LineInfo(2, [])}}
    store.add("k", "/g.msgpack", hints_mod.Indexed("Net", "cpu", files), mark, {})
    store.end(mark)
    found = store.table(lib)
    assert found is not None and sorted(found[1].lines) == [2]  # one down, as in the editor
    found = store.table(net)
    assert found is not None and sorted(found[1].lines) == [2]  # the sent text is the editor's


def test_a_trace_without_hints_reads_no_file_when_it_begins(tmp_path):
    """(A comparison's HEAD side: its lines are not the editor's.) The open documents are
    read from disk only for a trace whose hints are wanted."""
    lib = tmp_path / "lib.py"
    lib.write_text(MULTI_DOC)
    store = TraceStore()
    assert store.begin({file_key(lib): MULTI_DOC}, None, hints=False).ran == {}
    assert store.begin({file_key(lib): MULTI_DOC}, None).ran == {file_key(lib): MULTI_DOC}
