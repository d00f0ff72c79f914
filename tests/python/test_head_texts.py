"""A trace request's `texts`: other files than the traced one run from given texts (Compare
with HEAD traces the model as committed, the modules its file imports included), through the
real runner process."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from test_runner import RunnerProcess, write

from torchscope.graph import Graph, unpack

LAYERS = """
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x).relu()
"""

MODEL = """
    from torch import nn
    from layers import Block

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x)
"""

# HEAD's layers.py: no relu, and two lines more above the class
HEAD_LAYERS = """
    # committed
    # version
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)
"""


@pytest.fixture(scope="module")
def runner():
    r = RunnerProcess()
    yield r
    r.close()


def graph_of(out: Path) -> Graph:
    return Graph.from_wire(unpack(out.read_bytes()))


def trace(
    runner: RunnerProcess, path: Path, out: Path, texts: dict[str, str | None], **extra: object
) -> Graph:
    if texts:
        extra["texts"] = [{"file": f, "text": t} for f, t in texts.items()]
    reply = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="torch.randn(1, 4)", **extra
    )
    assert reply.get("ok"), reply
    return graph_of(out)


def ops(graph: Graph) -> list[str]:
    return [n.name for n in graph.nodes if n.kind == "op"]


def test_an_imported_file_runs_from_its_given_text_then_from_disk_again(runner, tmp_path):
    layers = write(tmp_path, "layers.py", LAYERS)
    path = write(tmp_path, "model.py", MODEL)
    out = tmp_path / "g.msgpack"
    head = trace(runner, path, out, {str(layers): textwrap.dedent(HEAD_LAYERS)})
    assert ops(head) == ["linear"]
    block = next(n for n in head.nodes if n.name == "Block")
    # the lines are those of the text that ran, in the real file's path
    assert block.defn is not None and (block.defn.file, block.defn.line) == (str(layers), 6)
    fc = next(n for n in head.nodes if n.path == "block.fc")
    assert fc.site is not None and (fc.site.file, fc.site.line) == (str(layers), 12)
    # the same file without texts: the working copy on disk, built again (not the last build)
    working = trace(runner, path, out, {})
    assert ops(working) == ["linear", "relu"]
    block = next(n for n in working.nodes if n.name == "Block")
    assert block.defn is not None and block.defn.line == 4


def test_a_file_deleted_since_runs_from_its_text(runner, tmp_path):
    path = write(tmp_path, "model.py", MODEL)  # the working copy: its layers.py is gone
    out = tmp_path / "g.msgpack"
    gone = str(tmp_path / "layers.py")
    head = trace(runner, path, out, {gone: textwrap.dedent(HEAD_LAYERS)})
    assert ops(head) == ["linear"]
    reply = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="torch.randn(1, 4)"
    )
    assert not reply.get("ok") and "layers" in reply["message"], reply


def test_a_file_added_since_is_not_there(runner, tmp_path):
    # HEAD's model falls back when the optional module is missing; the working copy has it
    write(tmp_path, "fast.py", "def act(x):\n    return x.sigmoid()\n")
    model = """
        import torch
        from torch import nn
        try:
            from fast import act
        except ImportError:
            act = torch.tanh

        class Net(nn.Module):
            def forward(self, x):
                return act(x)
    """
    path = write(tmp_path, "model.py", model)
    out = tmp_path / "g.msgpack"
    assert ops(trace(runner, path, out, {str(tmp_path / "fast.py"): None})) == ["tanh"]
    assert ops(trace(runner, path, out, {})) == ["sigmoid"]


def test_a_package_runs_from_its_texts(runner, tmp_path):
    write(tmp_path, "pkg/__init__.py", "from .layers import Block\n")
    layers = write(tmp_path, "pkg/layers.py", LAYERS)
    init = tmp_path / "pkg/__init__.py"
    path = write(tmp_path, "model.py", MODEL.replace("from layers import", "from pkg import"))
    out = tmp_path / "g.msgpack"
    head_init = "from .layers import Block as Base\n\nclass Block(Base):\n    pass\n"
    graph = trace(
        runner,
        path,
        out,
        {str(init): head_init, str(layers): textwrap.dedent(HEAD_LAYERS)},
    )
    assert ops(graph) == ["linear"]
    block = next(n for n in graph.nodes if n.path == "block")
    assert block.defn is not None and (block.defn.file, block.defn.line) == (str(init), 3)


def test_an_error_in_a_given_text_points_at_its_line(runner, tmp_path):
    layers = write(tmp_path, "layers.py", LAYERS)
    path = write(tmp_path, "model.py", MODEL)
    out = tmp_path / "g.msgpack"
    broken = textwrap.dedent(HEAD_LAYERS).replace(
        "return self.fc(x)", "raise ValueError('committed bug')"
    )
    graph = trace(runner, path, out, {str(layers): broken})
    assert graph.error is not None and graph.error.message == "committed bug"
    where = graph.error.traceback[-1]
    assert (where.file, where.line) == (str(layers), 12)


def test_texts_that_are_not_a_map_of_paths_are_refused(runner, tmp_path):
    path = write(tmp_path, "model.py", MODEL)
    write(tmp_path, "layers.py", LAYERS)
    for texts in (
        {str(tmp_path / "layers.py"): "x = 1"},
        ["layers.py"],
        [{"file": "layers.py", "text": "x = 1"}],
        [{"file": str(tmp_path / "layers.py"), "text": 3}],
    ):
        reply = runner.ask(
            op="trace", file=str(path), target="Net", out=str(tmp_path / "g"), texts=texts
        )
        assert not reply.get("ok") and reply["kind"] == "bad-request", reply


def test_a_text_given_under_another_name_of_its_folder(runner, tmp_path):
    # git names files from the repository's real top; the editor may reach them by a link
    real = tmp_path / "real"
    layers = write(real, "layers.py", LAYERS)
    write(real, "model.py", MODEL)
    (tmp_path / "link").symlink_to(real)
    linked = tmp_path / "link" / "layers.py"
    graph = trace(
        runner,
        tmp_path / "link" / "model.py",
        tmp_path / "g.msgpack",
        {str(linked): textwrap.dedent(HEAD_LAYERS)},
    )
    assert ops(graph) == ["linear"]
    block = next(n for n in graph.nodes if n.name == "Block")
    assert block.defn is not None and (block.defn.file, block.defn.line) == (str(layers), 6)


@pytest.fixture
def on_path(tmp_path):
    """tmp_path first on sys.path; the modules imported from it forgotten afterwards."""
    import importlib
    import sys

    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    before = set(sys.modules)
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_namespace_packages_as_the_version_traced_has_them(on_path):
    # review: a folder that had no __init__.py in HEAD (one added since), and a folder without
    # one deleted since, import as the namespace packages they were
    import importlib

    from torchscope.file_texts import texts_in_place

    write(on_path, "nsa/__init__.py", "X = 'added since'\n")
    write(on_path, "nsa/conv.py", "Y = 'disk'\n")
    texts = {
        str(on_path / "nsa/__init__.py"): None,
        str(on_path / "nsb/mod.py"): "Z = 'head'\n",
    }
    with texts_in_place(texts):
        assert importlib.import_module("nsa.conv").Y == "disk"
        assert not hasattr(importlib.import_module("nsa"), "X")
        assert importlib.import_module("nsb.mod").Z == "head"


def test_a_package_comes_before_a_module_of_its_name(on_path):
    # review: util/__init__.py unchanged, util.py changed: Python imports the package
    import importlib

    from torchscope.file_texts import texts_in_place

    write(on_path, "utilpm/__init__.py", "WHO = 'package'\n")
    write(on_path, "utilpm.py", "WHO = 'module on disk'\n")
    with texts_in_place({str(on_path / "utilpm.py"): "WHO = 'module at HEAD'\n"}):
        assert importlib.import_module("utilpm").WHO == "package"


def test_no_finder_is_left_behind_and_builtins_come_first(on_path):
    import sys

    from torchscope.file_texts import texts_in_place

    before = list(sys.meta_path)
    write(on_path, "shadow_head.py", "X = 1\n")
    with texts_in_place({str(on_path / "shadow_head.py"): "X = 2\n"}):
        finders = [getattr(f, "__name__", type(f).__name__) for f in sys.meta_path]
        assert finders.index("BuiltinImporter") < finders.index("_TextFinder")
        assert finders.index("_TextFinder") == finders.index("PathFinder") - 1
    assert sys.meta_path == before
