"""Inlay hints and hovers from the last trace, through pygls's LanguageClient against the real
server process and its real runner (torch): positions and labels, edits, library files,
graphs shown from elsewhere, the option that turns hints off."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional
from urllib.parse import unquote

import pytest
import torch
import torch.nn.modules.linear
from lsprotocol import types
from test_server_lsp import TIMEOUT, Session, line_of, server_env, uri, write

import torchscope
from torchscope.graph import Graph

SHAPES = """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            h = self.fc(x)
            return x + h.relu()


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(8, 16)
            self.blocks = nn.ModuleList([Block() for _ in range(3)])
            self.head = nn.Linear(16, 2)

        def forward(self, x):
            x = self.inp(x)
            for i in range(2):
                x = x * 2
            for block in self.blocks:
                x = block(x)
            a, b = x.chunk(2, dim=-1)
            return self.head(torch.cat([a, b], dim=-1)).softmax(-1)


    if __name__ == "__main__":
        Net()(torch.randn(4, 8))
"""

# the hint of each line of SHAPES that made tensors (and of no other line)
SHAPES_HINTS = {
    "h = self.fc(x)": "4×16 ×3",  # a line of a block called three times (folded "Block ×3")
    "return x + h.relu()": "4×16 ×3",
    "x = self.inp(x)": "4×16",
    "x = x * 2": "4×16 ×2",  # a loop
    "x = block(x)": "4×16 ×3",
    "a, b = x.chunk(2, dim=-1)": "4×8",  # two tensors of one shape
    "return self.head(": "4×2",
}

PAUSED = """
    import torch
    from torch import nn


    class Small(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(3, 5)

        def forward(self, x):
            y = self.proj(x)
            return y.tanh()
"""

UNTRACED = """
    import torch

    x = torch.zeros(2, 2)
"""

LINEAR = Path(torch.nn.modules.linear.__file__)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hints")
    write(root, "shapes.py", SHAPES)
    write(root, "paused.py", PAUSED)
    write(root, "untraced.py", UNTRACED)
    return root


@pytest.fixture(scope="module")
def lsp(workspace: Path):
    session = Session(sys.executable, server_env(), workspace, TIMEOUT * 5)
    yield session
    session.close()


class Docs:
    """The documents the client has open, with their versions."""

    def __init__(self, lsp: Session) -> None:
        self.lsp = lsp
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.paths: dict[str, Path] = {}

    def open(self, path: Path, text: Optional[str] = None) -> None:
        text = path.read_text() if text is None else text
        self.versions[uri(path)] = 1
        self.texts[uri(path)] = text
        self.paths[uri(path)] = path
        doc = types.TextDocumentItem(uri=uri(path), language_id="python", version=1, text=text)
        self.lsp.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=doc))

    def close(self, path: Path) -> None:
        del self.versions[uri(path)]
        ident = types.TextDocumentIdentifier(uri=uri(path))
        self.lsp.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=ident)
        )

    def close_all(self) -> None:
        for u in list(self.versions):
            self.close(self.paths[u])

    def edit(self, path: Path, line: int, column: int, end_line: int, end_column: int, new: str):
        """One incremental change (ASCII text: columns are str indexes)."""
        u = uri(path)
        self.versions[u] += 1
        lines = self.texts[u].split("\n")
        head = "\n".join(lines[:line] + [lines[line][:column]])
        tail = "\n".join([lines[end_line][end_column:]] + lines[end_line + 1 :])
        self.texts[u] = head + new + tail
        change = types.TextDocumentContentChangePartial(
            range=types.Range(
                start=types.Position(line=line, character=column),
                end=types.Position(line=end_line, character=end_column),
            ),
            text=new,
        )
        self.lsp.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=u, version=self.versions[u]
                ),
                content_changes=[change],
            )
        )


@pytest.fixture
def docs(lsp: Session):
    d = Docs(lsp)
    yield d
    d.close_all()


def hints(lsp: Session, path: Path, text: Optional[str] = None) -> dict[int, str]:
    """{line: label} of the document's inlay hints; checks each sits at its line's end."""
    lines = (path.read_text() if text is None else text).split("\n")
    params = types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        range=types.Range(
            start=types.Position(line=0, character=0),
            end=types.Position(line=len(lines), character=0),
        ),
    )
    found = lsp.run(lsp.client.text_document_inlay_hint_async(params)) or []
    out: dict[int, str] = {}
    for h in found:
        line = h.position.line
        assert h.position.character == len(lines[line].encode("utf-16-le")) // 2
        assert h.kind == types.InlayHintKind.Type and h.padding_left
        assert isinstance(h.label, str)
        out[line] = h.label
    return out


def hover(lsp: Session, path: Path, line: int, character: int) -> Optional[str]:
    """The hover's markdown; checks its range is the word under the cursor (or that character)."""
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        position=types.Position(line=line, character=character),
    )
    found = lsp.run(lsp.client.text_document_hover_async(params))
    if found is None:
        return None
    assert isinstance(found.contents, types.MarkupContent)
    assert found.contents.kind == types.MarkupKind.Markdown
    r = found.range
    assert r is not None and r.start.line == r.end.line == line
    text = path.read_text().split("\n")[line]
    word = re.search(r"\w*$", text[:character]).group() + re.match(r"\w*", text[character:]).group()
    assert text[r.start.character : r.end.character] == (word or text[character])
    return found.contents.value


def reveal_args(markdown: str) -> list[dict[str, Any]]:
    prefix = "(command:torchscope.revealNode?"
    start = markdown.index(prefix) + len(prefix)
    return json.loads(unquote(markdown[start : markdown.index(")", start)]))


def expected(path: Path, table: dict[str, str]) -> dict[int, str]:
    return {line_of(path, needle): label for needle, label in table.items()}


def trace(lsp: Session, path: Path, target: str, **extra: Any) -> dict[str, Any]:
    return lsp.request("torchscope/trace", {"uri": uri(path), "target": target, **extra})


def test_hints_on_the_lines_that_made_tensors(lsp, workspace, docs):
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    before = lsp.refreshes
    trace(lsp, shapes, "Net")
    assert hints(lsp, shapes) == expected(shapes, SHAPES_HINTS)
    lsp.wait_for(lambda: lsp.refreshes > before)  # the editor is told to ask again


def test_a_trace_of_another_text_asked_without_hints_leaves_them(lsp, workspace, docs):
    """A comparison with HEAD traces HEAD's text under the file's uri: when the working
    copy's own trace then failed (a syntax error saved), HEAD's shapes were the newest and
    showed on the working copy's lines, shifted. Such a trace asks for no hints."""
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    trace(lsp, shapes, "Net")
    own = hints(lsp, shapes)
    assert own == expected(shapes, SHAPES_HINTS)
    # (every line three further down, and the loop run three times)
    head = "\n\n\n" + shapes.read_text().replace("range(2)", "range(3)")
    trace(lsp, shapes, "Net", text=head, hints=False)
    assert hints(lsp, shapes) == own
    # (asked with hints: they come from it, its lines mapped onto the document's)
    trace(lsp, shapes, "Net", text=head)
    assert hints(lsp, shapes) == {**own, line_of(shapes, "x = x * 2"): "4×16 ×3"}


def test_a_library_file_open_in_the_editor(lsp, workspace, docs):
    trace(lsp, workspace / "shapes.py", "Net")
    docs.open(LINEAR)
    # five nn.Linear calls (inp, three blocks' fc, head) ran the one line of Linear.forward
    assert hints(lsp, LINEAR) == {line_of(LINEAR, "return F.linear("): "4×16, 4×2 ×5"}


def test_files_the_trace_did_not_run_through(lsp, workspace, docs):
    trace(lsp, workspace / "shapes.py", "Net")
    untraced = workspace / "untraced.py"
    docs.open(untraced)
    assert hints(lsp, untraced) == {}
    conv = Path(torch.nn.modules.conv.__file__)
    docs.open(conv)
    assert hints(lsp, conv) == {}


def test_an_edit_above_moves_hints_and_an_edit_on_a_line_removes_its_hint(lsp, workspace, docs):
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    trace(lsp, shapes, "Net")
    table = expected(shapes, SHAPES_HINTS)
    inp = line_of(shapes, "x = self.inp(x)")
    # two lines typed above `x = self.inp(x)`: it and every hinted line below move down
    docs.edit(shapes, inp, 0, inp, 0, "        # scaled\n        x = x * 1\n")
    moved = {(n + 2 if n >= inp else n): label for n, label in table.items()}
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) == moved
    # Enter at the end of a hinted line: the line itself is unchanged and keeps its hint
    block = line_of(shapes, "x = block(x)") + 2
    end = len(docs.texts[uri(shapes)].split("\n")[block])
    docs.edit(shapes, block, end, block, end, "\n")
    moved = {(n + 1 if n > block else n): label for n, label in moved.items()}
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) == moved
    # a changed line loses its hint; the others stay
    mul = line_of(shapes, "x = x * 2") + 2
    column = docs.texts[uri(shapes)].split("\n")[mul].index("2")
    docs.edit(shapes, mul, column, mul, column + 1, "3")
    del moved[mul]
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) == moved
    # deleting the lines typed above moves the hints back up
    docs.edit(shapes, inp, 0, inp + 2, 0, "")
    back = {(n - 2 if n >= inp + 2 else n): label for n, label in moved.items()}
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) == back
    # the next trace (of the edited text) brings every line back
    trace(lsp, shapes, "Net")
    text = docs.texts[uri(shapes)]
    assert hints(lsp, shapes, text) == {
        next(i for i, s in enumerate(text.split("\n")) if needle.replace("* 2", "* 3") in s): label
        for needle, label in SHAPES_HINTS.items()
    }


def test_the_lines_of_a_graph_where_they_are_now(lsp, workspace, docs):
    """torchscope/lines: for a graph and a file, each traced line that made something and
    the line it is on in the document now (QA: after lines were typed above, the hints
    moved, but a click on a node opened its old line and the cursor marked the wrong
    nodes: the extension now maps both through this)."""
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    graph = trace(lsp, shapes, "Net")["path"]
    table = expected(shapes, SHAPES_HINTS)
    same = lsp.request("torchscope/lines", {"path": graph, "file": str(shapes)})["lines"]
    assert sorted(t for t, _ in same) == sorted(table) and all(t == c for t, c in same)
    inp = line_of(shapes, "x = self.inp(x)")
    docs.edit(shapes, 0, 0, 0, 0, "# one\n# two\n# three\n")
    mul = line_of(shapes, "x = x * 2") + 3
    column = docs.texts[uri(shapes)].split("\n")[mul].index("2")
    docs.edit(shapes, mul, column, mul, column + 1, "3")  # a line changed: not mapped
    now = dict(
        map(tuple, lsp.request("torchscope/lines", {"path": graph, "file": str(shapes)})["lines"])
    )
    assert now[inp] == inp + 3
    assert mul - 3 not in now
    assert set(now) == set(table) - {mul - 3}
    assert all(c == t + 3 for t, c in now.items())
    # the file's other model traced since, in its own panel: the first graph's lines are
    # still followed (the hints show the newest; review: null for every older one)
    block = trace(lsp, shapes, "Block")["path"]
    docs.edit(shapes, 0, 0, 0, 0, "# four\n")
    again = dict(
        map(tuple, lsp.request("torchscope/lines", {"path": graph, "file": str(shapes)})["lines"])
    )
    assert again[inp] == inp + 4
    assert lsp.request("torchscope/lines", {"path": block, "file": str(shapes)})["lines"]
    # Block traced again and again (its panel shows the newest): Net's lines stay followed
    # (review: each superseded Block graph was kept as well and pushed Net's out)
    for _ in range(9):
        block = trace(lsp, shapes, "Block")["path"]
    assert lsp.request("torchscope/lines", {"path": graph, "file": str(shapes)})["lines"]
    # a graph or a file the server does not know: null
    unknown = lsp.request("torchscope/lines", {"path": "/no/graph.msgpack", "file": str(shapes)})
    assert unknown["lines"] is None
    other = lsp.request("torchscope/lines", {"path": graph, "file": "/no/file.py"})
    assert other["lines"] is None


def test_an_edit_undone_brings_every_hint_back(lsp, workspace, docs):
    """QA: deleting the loop's two lines and undoing it restored exactly the traced text,
    but `x = block(x)` kept no hint until the next trace."""
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    trace(lsp, shapes, "Net")
    table = expected(shapes, SHAPES_HINTS)
    loop = line_of(shapes, "for block in self.blocks")
    lines = docs.texts[uri(shapes)].split("\n")
    removed = "\n".join(lines[loop : loop + 2]) + "\n"
    docs.edit(shapes, loop, 0, loop + 2, 0, "")
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) != table
    docs.edit(shapes, loop, 0, loop, 0, removed)  # the undo: the text as traced
    assert docs.texts[uri(shapes)] == shapes.read_text()
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) == table


def test_lines_swapped_keep_their_hints(lsp, workspace, docs):
    """QA: Alt+Down on a hinted line above another (VS Code replaces both lines in one
    change, the two texts swapped) lost both hints, though neither line's text changed."""
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    trace(lsp, shapes, "Net")
    table = expected(shapes, SHAPES_HINTS)
    chunk = line_of(shapes, "a, b = x.chunk(2, dim=-1)")
    lines = docs.texts[uri(shapes)].split("\n")
    assert lines[chunk + 1].lstrip().startswith("return self.head(")
    docs.edit(
        shapes, chunk, 0, chunk + 1, len(lines[chunk + 1]), f"{lines[chunk + 1]}\n{lines[chunk]}"
    )
    swapped = dict(table)
    swapped[chunk], swapped[chunk + 1] = table[chunk + 1], table[chunk]
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) == swapped
    # and back (Alt+Up): as traced
    lines = docs.texts[uri(shapes)].split("\n")
    docs.edit(
        shapes, chunk, 0, chunk + 1, len(lines[chunk + 1]), f"{lines[chunk + 1]}\n{lines[chunk]}"
    )
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) == table


def test_edits_made_while_the_trace_runs(lsp, workspace, docs):
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    future = lsp.client.protocol.send_request(
        "torchscope/trace", {"uri": uri(shapes), "target": "Net"}
    )
    docs.edit(shapes, 0, 0, 0, 0, "# typed while tracing\n")  # reaches the server mid-trace

    async def wait() -> Any:
        import asyncio

        return await asyncio.wrap_future(future)

    lsp.run(wait())
    shifted = {n + 1: label for n, label in expected(shapes, SHAPES_HINTS).items()}
    assert hints(lsp, shapes, docs.texts[uri(shapes)]) == shifted


def test_hover(lsp, workspace, docs):
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    result = trace(lsp, shapes, "Net")
    graph = Graph.load(result["path"])
    inp = line_of(shapes, "x = self.inp(x)")
    text = hover(lsp, shapes, inp, 12)
    assert text is not None
    assert "**Linear** `inp`" in text and "`4×16` float32 · cpu" in text
    (args,) = reveal_args(text)
    assert args["graph"] == result["path"]
    assert args["node"] == graph.module_call("inp").id and args["nodes"] == [args["node"]]
    # a line run three times, and the word under the cursor narrowing it to one call
    line = line_of(shapes, "return x + h.relu()")
    text = hover(lsp, shapes, line, 8)  # on `return`
    assert text is not None and "**add**" in text and "ran 3×" in text
    relu = hover(lsp, shapes, line, shapes.read_text().split("\n")[line].index("relu") + 1)
    assert relu is not None and relu.startswith("**relu** · ran 3×")
    assert reveal_args(relu)[0]["nodes"] == [n.id for n in graph.find("op", "relu")]
    # lines and places that made nothing
    assert hover(lsp, shapes, line_of(shapes, "def forward(self, x):"), 10) is None
    assert hover(lsp, shapes, inp, 2) is None  # the indentation
    assert hover(lsp, workspace / "untraced.py", 3, 1) is None


def test_two_models_of_one_file_both_have_hints(lsp, workspace, docs):
    """Net and then Block of one file, each in its panel: only Block's lines had hints (the
    last trace of the file's). Each line has the hints of the newest trace that ran it, and
    its hover reveals the node in that trace's graph."""
    shapes = workspace / "shapes.py"
    docs.open(shapes)
    net = trace(lsp, shapes, "Net")
    block = trace(lsp, shapes, "Block")
    assert block["summary"]["inputExpr"] == "torch.randn(1, 16)"
    in_block = {"h = self.fc(x)": "1×16", "return x + h.relu()": "1×16"}
    assert hints(lsp, shapes) == expected(shapes, {**SHAPES_HINTS, **in_block})
    text = hover(lsp, shapes, line_of(shapes, "x = self.inp(x)"), 12)
    assert text is not None and reveal_args(text)[0]["graph"] == net["path"]
    text = hover(lsp, shapes, line_of(shapes, "h = self.fc(x)"), 12)
    assert text is not None and reveal_args(text)[0]["graph"] == block["path"]
    # Net traced again: its lines are the newest again, Block's among them
    trace(lsp, shapes, "Net")
    assert hints(lsp, shapes) == expected(shapes, SHAPES_HINTS)


def paused_graph(workspace: Path, tmp_path: Path, values: bool) -> Path:
    """A graph traced outside the server, as the paused-debugger path writes one; with
    `values`, the per-tensor statistics and per-call costs the values issue adds."""
    sys.path.insert(0, str(workspace))
    try:
        import paused
    finally:
        sys.path.remove(str(workspace))
    wire = torchscope.trace(paused.Small(), torch.randn(2, 3)).to_wire()
    if values:
        for e in wire["edges"]:
            e["stats"] = {"min": -0.5, "max": 1.25, "mean": 0.125, "std": 0.5, "absmax": 1.25}
            # `zeros` is the fraction of values that are 0 (docs/graph-format.md): 2 of 10.
            e["stats"].update({"zeros": 0.2, "nan": 0, "inf": 3, "numel": 10})
        for n in wire["nodes"]:
            if n["kind"] == "module" and n["path"] == "proj":
                n["cost"] = {"flops": 60, "bytes": 2048, "time_ns": 12_500}
    path = tmp_path / "paused.msgpack"
    import msgpack

    path.write_bytes(msgpack.packb(wire, use_bin_type=True))
    return path


def test_a_graph_shown_from_elsewhere(lsp, workspace, docs, tmp_path):
    small = workspace / "paused.py"
    docs.open(small)
    assert hints(lsp, small) == {}
    graph = paused_graph(workspace, tmp_path, values=True)
    shown = lsp.request("torchscope/graphShown", {"path": str(graph)})
    # paused.py (2 lines), Linear.forward, and the line that called the model (in this file)
    assert shown == {"files": 3, "lines": 4}
    assert hints(lsp, small) == {
        line_of(small, "y = self.proj(x)"): "2×5",
        line_of(small, "return y.tanh()"): "2×5",
    }
    text = hover(lsp, small, line_of(small, "y = self.proj(x)"), 12)
    assert text is not None
    assert "min -0.5 · max 1.25 · mean 0.125 · std 0.5 · zeros 2 (20%) · **inf 3**" in text
    assert "60 FLOP · 2.0 KB · 12 µs" in text  # (as the summary and the viewer write them)
    assert "nan" not in text  # only counts that are not zero
    assert reveal_args(text)[0]["graph"] == str(graph)
    e = lsp.error("torchscope/graphShown", {"path": str(tmp_path / "missing.msgpack")})
    assert e.data["kind"] == "bad-graph"


@pytest.fixture
def hints_off(workspace) -> Iterator[tuple[Session, Path]]:
    """A server started with the inlay hints option off, shapes.py open and traced."""
    session = Session(
        sys.executable, server_env(), workspace, TIMEOUT * 5, options={"inlayHints": False}
    )
    try:
        shapes = workspace / "shapes.py"
        Docs(session).open(shapes)
        trace(session, shapes, "Net")
        yield session, shapes
    finally:
        session.close()


def test_inlay_hints_option_off(hints_off):
    session, shapes = hints_off
    assert hints(session, shapes) == {}
    assert session.refreshes == 0
    text = hover(session, shapes, line_of(shapes, "x = self.inp(x)"), 12)
    assert text is not None and "`4×16`" in text  # hovers stay


def test_inlay_hints_turned_on_and_off_without_a_restart(hints_off):
    """The setting changed in the editor: the server is told (workspace/didChangeConfiguration)
    and asks the editor to fetch hints again; its runner stays warm, nothing restarts."""
    session, shapes = hints_off
    assert hints(session, shapes) == {}

    def setting(on: bool) -> None:
        before = session.refreshes
        session.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"torchscope": {"inlayHints": on}})
        )
        session.wait_for(lambda: session.refreshes > before)  # the editor asks again

    setting(True)
    assert hints(session, shapes) == expected(shapes, SHAPES_HINTS)
    setting(False)
    assert hints(session, shapes) == {}
    # other settings' shapes are ignored, not an error
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings=None)
    )
    assert hints(session, shapes) == {}


PAGED = "import torch\nfrom torch import nn\n\n\x0c\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 6)\n        self.out = nn.Linear(6, 3)\n\n    def forward(self, x):\n        h = self.fc(x)\n        return self.out(h)\n"


def test_a_form_feed_line_does_not_shift_what_follows(lsp, workspace, docs):
    # QA: a ^L page break (PEP 8 allows it) is a line break to str.splitlines, not to the
    # editor nor to Python: the server applied every edit below it one line off (a stale hint
    # mid-line, then none at all after a re-trace), and the class's line was one off
    paged = workspace / "paged.py"
    paged.write_text(PAGED)
    docs.open(paged)
    reply = trace(lsp, paged, "Net", input="torch.randn(2, 4)", text=PAGED)
    lines = PAGED.split("\n")
    h, ret = lines.index("        h = self.fc(x)"), lines.index("        return self.out(h)")
    assert hints(lsp, paged, PAGED) == {h: "2×6", ret: "2×3"}
    net = Graph.load(reply["path"]).nodes[1]
    assert net.defn is not None and lines[net.defn.line - 1].startswith("class Net")
    docs.edit(paged, ret, len(lines[ret]), ret, len(lines[ret]), ".relu()")
    text = docs.texts[uri(paged)]
    assert hints(lsp, paged, text) == {h: "2×6"}
    trace(lsp, paged, "Net", input="torch.randn(2, 4)", text=text)
    assert hints(lsp, paged, text) == {h: "2×6", ret: "2×3"}
