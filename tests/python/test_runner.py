"""The runner process (`python -m torchscope.runner`) over its JSON-lines pipe."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from torchscope.graph import Graph, unpack

HELPER = Path(__file__).resolve().parents[2] / "python_helper"


class RunnerProcess:
    def __init__(self, *python_path: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(HELPER), *python_path, env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "torchscope.runner"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.ids = 0
        self.buffer = b""
        self.progress: list[str] = []

    def ask(self, wait: float = 60, **request: Any) -> dict[str, Any]:
        self.ids += 1
        rid = self.ids
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps({"id": rid, **request}) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.monotonic() + wait
        self.progress = []
        while True:
            line = self._line(deadline, request)
            msg = json.loads(line)  # every line on the protocol stream is JSON
            assert msg["id"] == rid
            if "progress" in msg:
                self.progress.append(msg["progress"])
                continue
            return msg

    def _line(self, deadline: float, request: Any) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise TimeoutError(f"no reply to {request}")
            chunk = os.read(fd, 65536)
            assert chunk, "the runner closed its stdout"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        if self.proc.stdin.closed:
            return ""
        self.proc.stdin.close()
        self.proc.wait(10)
        return self.proc.stderr.read().decode()


@pytest.fixture(scope="module")
def runner():
    r = RunnerProcess()
    yield r
    r.close()


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


MLP = """
    import os
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            print("printed at import")  # must not reach the protocol stream
            os.write(1, b"written to fd 1\\n")
            self.fc = nn.Linear(64, 8)

        def forward(self, x):
            return self.fc(x).relu()

    if __name__ == "__main__":
        raise SystemExit("the main block must not run")
"""


def test_ping(runner):
    reply = runner.ask(op="ping")
    assert reply["ok"] and reply["torch"].startswith("2.")


def test_starting_imports_what_a_trace_uses():
    """The runner imports torch and its own trace modules before its first request (a module
    name that does not exist would stop the list half-way, silently)."""
    import io

    from torchscope import runner as r

    started = r.Runner(io.StringIO())
    started.import_torch()
    assert started.torch_error is None and started.torch_version
    assert all(f"torchscope.{name}" in sys.modules for name in r.WARM_MODULES)


def test_preload_imports_only_known_libraries(runner):
    reply = runner.ask(op="preload", modules=["json", "no_such_library_xyz", "timm"])
    assert reply["ok"] and reply["loaded"] == []  # json: not a known library; timm: not installed


def test_trace_writes_msgpack_and_summary(runner, tmp_path):
    path = write(tmp_path, "mlp.py", MLP)
    out = tmp_path / "out" / "g.msgpack"
    reply = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), inputCall="torch.randn(2, 64)"
    )
    assert reply["ok"], reply
    result = reply["result"]
    assert result["path"] == str(out) and result["size"] == out.stat().st_size
    graph = Graph.from_wire(unpack(out.read_bytes()))
    assert graph.model.name == "Net"
    s = result["summary"]
    assert (
        s["model"] == "Net"
        and s["params"] == 64 * 8 + 8
        and s["input"] == "torch.randn(2, 64), as the file calls it"
    )
    assert s["nodes"] == len(graph.nodes) and s["edges"] == len(graph.edges) and s["error"] is None
    assert runner.progress == ["Importing", "Building input", "Tracing", "Writing the graph"]


def test_unsaved_text_and_reimport(runner, tmp_path):
    write(
        tmp_path,
        "layers.py",
        """
        from torch import nn
        WIDTH = 8
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, WIDTH)
            def forward(self, x):
                return self.fc(x)
    """,
    )
    path = write(
        tmp_path,
        "model.py",
        """
        from torch import nn
        from layers import Block
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
            def forward(self, x):
                return self.block(x)
    """,
    )
    out = tmp_path / "g.msgpack"
    first = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="torch.randn(1, 4)"
    )
    assert first["result"]["summary"]["params"] == 4 * 8 + 8
    # an edited imported file is read again
    layers = (tmp_path / "layers.py").read_text().replace("WIDTH = 8", "WIDTH = 16")
    (tmp_path / "layers.py").write_text(layers)
    second = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="torch.randn(1, 4)"
    )
    assert second["result"]["summary"]["params"] == 4 * 16 + 16
    # the editor's unsaved text is what gets traced, not the file on disk
    text = path.read_text().replace("self.block = Block()", "self.block = nn.Linear(4, 2)")
    third = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="torch.randn(1, 4)", text=text
    )
    assert third["result"]["summary"]["params"] == 4 * 2 + 2


def test_unsaved_text_is_the_source_its_lines_are_read_from(runner, tmp_path):
    # Compare with HEAD traces HEAD's text while the file on disk is the working copy: a
    # working copy that does not parse (a paren left open on its last line) must not break
    # HEAD's trace (inspect read the disk's lines: TokenError), and HEAD's class is defined
    # where HEAD's text has it, not where the disk has it
    head = """
        import torch
        from torch import nn

        class HD(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(8, 16)

            def forward(self, x):
                return self.fc1(x)
    """
    broken = "# a comment\n# another\n" + textwrap.dedent(head).replace(
        "return self.fc1(x)", "return self.fc1(x"
    )
    path = write(tmp_path, "hd.py", broken)
    out = tmp_path / "g.msgpack"
    reply = runner.ask(
        op="trace", file=str(path), target="HD", out=str(out), text=textwrap.dedent(head)
    )
    assert reply["ok"], reply
    root = next(n for n in Graph.from_wire(unpack(out.read_bytes())).nodes if n.name == "HD")
    assert root.defn is not None and (root.defn.file, root.defn.line) == (str(path.resolve()), 5)
    # then the file as saved, fixed: its own lines again
    path.write_text(broken.replace("self.fc1(x", "self.fc1(x)"))
    reply = runner.ask(op="trace", file=str(path), target="HD", out=str(out))
    assert reply["ok"], reply
    root = next(n for n in Graph.from_wire(unpack(out.read_bytes())).nodes if n.name == "HD")
    assert root.defn is not None and root.defn.line == 7


def test_a_buffers_lines_are_forgotten_when_another_file_is_traced(runner, tmp_path):
    """A trace of model.py's unsaved buffer, then of train.py (from disk), which imports
    model.py: its class was placed by the buffer's lines, kept in linecache since."""
    layers = """
        from torch import nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x)
    """
    path = write(tmp_path, "blocks.py", layers)
    buffer = "# unsaved\n# lines\n# above\n" + path.read_text()
    out = tmp_path / "g.msgpack"
    reply = runner.ask(
        op="trace",
        file=str(path),
        target="Block",
        out=str(out),
        input="torch.randn(1, 4)",
        text=buffer,
    )
    assert reply["ok"], reply
    user = write(
        tmp_path,
        "uses.py",
        """
        from torch import nn
        from blocks import Block

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return self.block(x)
    """,
    )
    reply = runner.ask(
        op="trace", file=str(user), target="Net", out=str(out), input="torch.randn(1, 4)"
    )
    assert reply["ok"], reply
    block = next(n for n in Graph.from_wire(unpack(out.read_bytes())).nodes if n.name == "Block")
    assert block.defn is not None and block.defn.line == 4  # the file's, not the buffer's 7


def test_same_text_reuses_the_build(runner, tmp_path):
    path = write(tmp_path, "reuse.py", MLP)
    text = path.read_text()
    ask = dict(op="trace", file=str(path), target="Net", out=str(tmp_path / "g.msgpack"), text=text)
    assert runner.ask(**ask, input="torch.randn(2, 64)")["ok"]
    assert runner.progress[0] == "Importing"
    # another input, same text: no import, no build
    assert runner.ask(**ask, input="torch.randn(5, 64)")["ok"]
    assert runner.progress == ["Building input", "Tracing", "Writing the graph"]
    # edited text: import and build again
    edited = text.replace("nn.Linear(64, 8)", "nn.Linear(64, 9)")
    reply = runner.ask(**{**ask, "text": edited}, input="torch.randn(5, 64)")
    assert runner.progress[0] == "Importing" and reply["result"]["summary"]["params"] == 64 * 9 + 9


def test_a_module_the_forward_imports_is_read_again_once_edited(runner, tmp_path):
    """A project file the forward imports when first called (`from helper import post` inside
    it) is one the reused build depends on: saved with an edit, it was never read again (the
    build's files were listed before the forward ran), and the graph kept its old shapes."""
    path = write(
        tmp_path,
        "lazy.py",
        """
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(5, 4)

            def forward(self, x):
                from lazy_helper import post
                return post(self.fc(x))
        """,
    )
    out = tmp_path / "g.msgpack"
    ask = dict(op="trace", file=str(path), target="Net", out=str(out), input="torch.randn(2, 5)")
    for copies in (1, 2, 3):
        write(
            tmp_path,
            "lazy_helper.py",
            f"import torch\ndef post(x):\n    return torch.cat([x] * {copies}, -1)\n",
        )
        os.utime(tmp_path / "lazy_helper.py", ns=(copies * 10**9, copies * 10**9))  # (mtime moves)
        assert runner.ask(**ask)["ok"]
        g = Graph.load(out)
        assert [e.shape for e in g.edges if g.nodes[e.dst].kind == "output"] == [[2, 4 * copies]]


def test_a_file_the_constructor_reads_is_read_again_once_edited(runner, tmp_path):
    """A build whose constructor reads a config file (json, by `open` or `Path.read_text`) is
    not reused once that file changes: the graph kept the old sizes for good."""
    path = write(
        tmp_path,
        "configured.py",
        """
        import json
        from pathlib import Path
        from torch import nn

        HERE = Path(__file__).parent

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                with open(HERE / "config.json") as f:
                    hidden = json.load(f)["hidden"]
                out = int((HERE / "out.txt").read_text())
                self.fc = nn.Sequential(nn.Linear(4, hidden), nn.Linear(hidden, out))

            def forward(self, x):
                return self.fc(x)
        """,
    )
    out = tmp_path / "g.msgpack"
    ask = dict(op="trace", file=str(path), target="Net", out=str(out), input="torch.randn(2, 4)")
    (tmp_path / "out.txt").write_text("3")
    for i, (hidden, width) in enumerate(((16, 3), (32, 3), (32, 7))):
        (tmp_path / "config.json").write_text(json.dumps({"hidden": hidden}))
        (tmp_path / "out.txt").write_text(str(width))
        for name in ("config.json", "out.txt"):
            os.utime(tmp_path / name, ns=((i + 1) * 10**9, (i + 1) * 10**9))  # (mtime moves)
        reply = runner.ask(**ask)
        want = 4 * hidden + hidden + hidden * width + width
        assert reply["result"]["summary"]["params"] == want, (hidden, width)
    assert runner.ask(**ask)["ok"]  # nothing changed: the build is reused
    assert runner.progress[0] != "Importing"


def test_workspace_roots_are_reimported(runner, tmp_path):
    """A project file outside the target's folder (here on sys.path by hand) is read again when
    it lies under one of the request's `roots` (the workspace folders)."""
    write(tmp_path, "lib/sizes.py", "WIDTH = 3\n")
    path = write(
        tmp_path,
        "app/main.py",
        """
        import sys
        from pathlib import Path
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
        from torch import nn
        import sizes
        def make_model():
            return nn.Linear(2, sizes.WIDTH)
    """,
    )
    out = str(tmp_path / "g.msgpack")
    ask = dict(op="trace", file=str(path), target="make_model", out=out, input="torch.ones(2)")
    assert runner.ask(**ask, roots=[str(tmp_path)])["result"]["summary"]["params"] == 2 * 3 + 3
    (tmp_path / "lib/sizes.py").write_text("WIDTH = 5\n")
    assert runner.ask(**ask, roots=[str(tmp_path)])["result"]["summary"]["params"] == 2 * 5 + 5


def test_old_imports_are_freed(tmp_path):
    """In process: a model built at the top of the user's file is freed once the next request
    re-imports the file (the tracer's per-class caches must not keep the old module alive)."""
    import gc
    import weakref

    from torchscope import runner as r

    path = write(
        tmp_path,
        "held.py",
        """
        import torch
        from torch import nn
        class Held(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return self.fc(x)
        model = Held()
        model.example_input_array = torch.ones(1, 4)
    """,
    )
    req = {"file": str(path), "target": "model", "out": str(tmp_path / "g.msgpack")}
    r.trace(req, lambda stage: None)
    first = weakref.ref(sys.modules["held"].model)
    path.write_text(path.read_text() + "# edited: imported again\n")
    r.trace(req, lambda stage: None)
    gc.collect()
    assert first() is None
    r.forget_user_modules()


def test_model_that_raises_is_a_result(runner, tmp_path):
    path = write(
        tmp_path,
        "broken.py",
        """
        import torch
        from torch import nn

        class Broken(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(16, 32)
                self.b = nn.Linear(64, 4)

            def forward(self, x):
                h = self.a(x)
                return self.b(h)

        model = Broken()
        model.example_input_array = torch.randn(2, 16)
    """,
    )
    reply = runner.ask(op="trace", file=str(path), target="model", out=str(tmp_path / "g.msgpack"))
    assert reply["ok"], reply
    s = reply["result"]["summary"]
    # where it came from and what it is (QA: the panel said only "example_input_array"),
    # and an expression of its kind and shape for the input box's placeholder (not one that
    # gives it again: its values are the model's own)
    assert s["input"] == "example_input_array: tensor [2, 16] float32"
    assert (s["inputExpr"], s["inputTemplate"]) == (None, "torch.randn(2, 16)")
    assert s["error"]["type"] == "RuntimeError"
    assert s["error"]["file"] == str(path) and s["error"]["line"] == 13  # `return self.b(h)`
    graph = Graph.load(reply["result"]["path"])
    assert graph.error is not None


def test_import_errors(runner, tmp_path):
    path = write(
        tmp_path,
        "bad.py",
        """
        import torch
        x = 1
        y = undefined_name + x
    """,
    )
    reply = runner.ask(op="trace", file=str(path), target="Net", out=str(tmp_path / "g.msgpack"))
    assert reply["kind"] == "import-error" and "NameError" in reply["message"]
    assert (
        "bad.py" in reply["details"]
        and "line 4" in reply["details"]
        and "undefined_name" in reply["details"]
    )
    syntax = write(tmp_path, "syntax.py", "def f(:\n    pass\n")
    reply = runner.ask(op="trace", file=str(syntax), target="f", out=str(tmp_path / "g.msgpack"))
    assert reply["kind"] == "import-error" and "syntax error in syntax.py:1" in reply["message"]


def test_sys_exit_at_import_keeps_the_runner(runner, tmp_path):
    path = write(
        tmp_path,
        "exits.py",
        "import sys\nfrom torch import nn\nsys.exit(3)\nclass Net(nn.Linear):\n"
        "    def __init__(self):\n        super().__init__(2, 2)\n",
    )
    out = str(tmp_path / "g.msgpack")
    # by default the file's top-level code does not run: the trace works without it
    reply = runner.ask(op="trace", file=str(path), target="Net", out=out, input="torch.ones(2)")
    assert reply["ok"], reply
    assert reply["result"]["summary"]["skipped"] == [{"line": 3, "text": "sys.exit(3)"}]
    # with the user's consent it runs, and its sys.exit is an import error, not a dead runner
    reply = runner.ask(op="trace", file=str(path), target="Net", out=out, runTopLevel=True)
    assert reply["kind"] == "import-error" and "sys.exit(3)" in reply["message"]
    assert runner.ask(op="ping")["ok"]


def test_sys_exit_in_forward(runner, tmp_path):
    path = write(
        tmp_path,
        "quits.py",
        """
        import sys
        from torch import nn
        class Quits(nn.Module):
            def forward(self, x):
                sys.exit(4)
    """,
    )
    out = str(tmp_path / "g.msgpack")
    reply = runner.ask(op="trace", file=str(path), target="Quits", out=out, input="torch.ones(1)")
    assert reply["kind"] == "runner-crashed" and "sys.exit(4)" in reply["message"]
    assert "quits.py" in reply["details"]
    assert runner.ask(op="ping")["ok"]


def test_target_errors(runner, tmp_path):
    path = write(
        tmp_path,
        "ctor.py",
        """
        from torch import nn
        class Needs(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.fc = nn.Linear(width, 2)
            def forward(self, x):
                return self.fc(x)
        class Fails(nn.Module):
            def __init__(self):
                super().__init__()
                raise ValueError("bad config")
        not_a_model = 3
    """,
    )
    out = str(tmp_path / "g.msgpack")
    reply = runner.ask(op="trace", file=str(path), target="Needs", out=out)
    assert reply["kind"] == "target-error" and reply["needsCtorArgs"] is True
    assert reply["ctorParams"] == "width"  # (the box's placeholder: what the class takes)
    reply = runner.ask(op="trace", file=str(path), target="Needs", out=out, ctorArgs="5")
    assert reply["ok"] and reply["result"]["summary"]["input"].startswith(
        "guessed from the first layer "
    )
    assert reply["result"]["summary"]["input"].endswith(": tensor [1, 5] float32")
    reply = runner.ask(op="trace", file=str(path), target="Fails", out=out)
    assert reply["kind"] == "target-error" and "bad config" in reply["message"]
    assert "ctor.py" in reply["details"]
    reply = runner.ask(op="trace", file=str(path), target="missing", out=out)
    assert reply["kind"] == "target-error" and "missing" in reply["message"]
    reply = runner.ask(op="trace", file=str(path), target="not_a_model", out=out)
    assert reply["kind"] == "target-error"


def test_a_class_that_needs_arguments_is_built_as_the_file_builds_it(runner, tmp_path):
    """Most real models take arguments: the file's own `Wide(Config(dim=6), hidden=HIDDEN)`
    (in `main()`, never run) builds it, said in the summary; arguments only the program knows
    (`Local(cfg)`) ask for them; a construction that fails asks too, saying why."""
    path = write(
        tmp_path,
        "builds.py",
        """
        import torch
        from dataclasses import dataclass
        from torch import nn
        HIDDEN = 7
        @dataclass
        class Config:
            dim: int = 4
        class Wide(nn.Module):
            def __init__(self, cfg, hidden):
                super().__init__()
                self.fc = nn.Linear(cfg.dim, hidden)
            def forward(self, x):
                return self.fc(x)
        class Local(Wide):
            pass
        class Odd(Wide):
            pass
        def main(cfg):
            Local(cfg, 3)
            Odd(Config(dim=-1), 3)
            return Wide(Config(dim=6), hidden=HIDDEN)
        if __name__ == "__main__":
            main(Config())
        """,
    )
    out = str(tmp_path / "g.msgpack")
    reply = runner.ask(op="trace", file=str(path), target="Wide", out=out)
    assert reply["ok"], reply
    summary = reply["result"]["summary"]
    assert summary["builtAs"] == "Wide(Config(dim=6), hidden=HIDDEN), as line 22 builds it"
    assert summary["input"].endswith(": tensor [1, 6] float32")
    assert Graph.load(out).module_call("fc").params == 6 * 7 + 7
    reply = runner.ask(op="trace", file=str(path), target="Local", out=out)
    assert reply["kind"] == "target-error" and reply["needsCtorArgs"] is True
    assert reply["guess"] == "cfg, 3"  # as the file writes them: the box starts with them
    reply = runner.ask(op="trace", file=str(path), target="Odd", out=out)
    assert reply["kind"] == "target-error" and reply["needsCtorArgs"] is True
    assert "the file's own Odd(Config(dim=-1), 3) at line 21" in reply["message"]
    assert reply["guess"] == "Config(dim=-1), 3"
    reply = runner.ask(op="trace", file=str(path), target="Odd", out=out, ctorArgs="Config(), 2")
    assert reply["ok"] and "builtAs" not in reply["result"]["summary"]
    # arguments the user gave that fail (names only the program has): asked again, with them
    # to edit and why they failed (it said so once, and every later trace failed alike with
    # no box: the editor remembers them, QA)
    given = "len(vocab), hidden=3"
    reply = runner.ask(op="trace", file=str(path), target="Local", out=out, ctorArgs=given)
    assert reply["kind"] == "target-error" and reply["needsCtorArgs"] is True, reply
    assert reply["guess"] == given and reply["ctorParams"] == "cfg, hidden"
    assert reply["message"] == (
        "Local(len(vocab), hidden=3) failed: NameError: name 'vocab' is not defined"
    )
    # the editor's box asks for arguments: no command line's "point at a factory" in it
    reply = runner.ask(op="trace", file=str(path), target="Local", out=out)
    assert "needs constructor arguments" in reply["message"], reply
    assert "factory" not in reply["message"], reply["message"]


def test_a_factory_that_needs_arguments_is_called_as_the_file_calls_it(runner, tmp_path):
    """`def build_model(cfg)`: called as the file calls it (`build_model(Config(dim=5))`), or
    with the arguments the user gives (the same box as a constructor's), its example kept."""
    path = write(
        tmp_path,
        "factory_args.py",
        """
        import torch
        from dataclasses import dataclass
        from torch import nn
        @dataclass
        class Config:
            dim: int = 4
        def build_model(cfg):
            return nn.Linear(cfg.dim, 2), torch.randn(3, cfg.dim)
        def build_other(width, depth):
            return nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
        def main(depth):
            model, example = build_model(Config(dim=5))
            build_other(8, depth)
        """,
    )
    out = str(tmp_path / "g.msgpack")
    reply = runner.ask(op="trace", file=str(path), target="build_model", out=out)
    assert reply["ok"], reply
    summary = reply["result"]["summary"]
    assert summary["builtAs"] == "build_model(Config(dim=5)), as line 13 builds it"
    assert summary["inputKind"] == "factory"
    assert Graph.load(out).model.params == 5 * 2 + 2
    reply = runner.ask(op="trace", file=str(path), target="build_other", out=out)
    assert reply["kind"] == "target-error" and reply["needsCtorArgs"] is True, reply
    assert "build_other() needs arguments" in reply["message"]
    reply = runner.ask(op="trace", file=str(path), target="build_other", out=out, ctorArgs="6, 2")
    assert reply["ok"], reply
    assert Graph.load(out).model.params == 2 * (6 * 6 + 6)


def test_inputs(runner, tmp_path):
    path = write(
        tmp_path,
        "inputs.py",
        """
        import torch
        from torch import nn
        class NoLayers(nn.Module):
            def forward(self, x):
                return x * 2
        def make_model():
            return NoLayers(), torch.ones(3)
    """,
    )
    out = str(tmp_path / "g.msgpack")
    reply = runner.ask(op="trace", file=str(path), target="NoLayers", out=out)
    assert reply["kind"] == "needs-input"
    reply = runner.ask(
        op="trace", file=str(path), target="NoLayers", out=out, input="torch.ones(2)"
    )
    assert reply["ok"] and reply["result"]["summary"]["input"] == "torch.ones(2)"
    reply = runner.ask(
        op="trace", file=str(path), target="NoLayers", out=out, input="torch.oops(2)"
    )
    assert reply["kind"] == "needs-input" and "torch.oops(2)" in reply["message"]
    reply = runner.ask(op="trace", file=str(path), target="make_model", out=out)
    summary = reply["result"]["summary"]
    assert reply["ok"] and summary["input"] == "from make_model(): tensor [3] float32"
    assert (summary["inputExpr"], summary["inputTemplate"]) == (None, "torch.randn(3)")


def test_time_budget_in_forward(runner, tmp_path):
    path = write(
        tmp_path,
        "slow.py",
        """
        import torch
        from torch import nn
        class Spin(nn.Module):
            def forward(self, x):
                while True:
                    x = x + 1
    """,
    )
    started = time.monotonic()
    reply = runner.ask(
        op="trace",
        file=str(path),
        target="Spin",
        out=str(tmp_path / "g.msgpack"),
        input="torch.zeros(2)",
        timeout=0.5,
    )
    assert reply["kind"] == "timeout"
    assert time.monotonic() - started < 5
    assert runner.ask(op="ping")["ok"]


def test_stdout_of_user_code_goes_to_stderr(runner, tmp_path):
    """Last in the file: it closes the shared runner to read all of its stderr."""
    path = write(tmp_path, "mlp.py", MLP)
    out = str(tmp_path / "g.msgpack")
    reply = runner.ask(
        op="trace", file=str(path), target="Net", out=out, input="torch.randn(2, 64)"
    )
    assert reply["ok"]
    err = runner.close()
    assert "printed at import" in err and "written to fd 1" in err


HELPER_MODEL = """
    import torch
    from torch import nn
    import helpers

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, helpers.WIDTH)

        def forward(self, x):
            return self.fc(x)
"""


@pytest.fixture
def fresh_runner():
    r = RunnerProcess()
    yield r
    r.close()


@pytest.mark.parametrize("in_workspace", [True, False])
def test_each_trace_sees_its_own_folders_modules(fresh_runner, tmp_path, in_workspace):
    """Two folders each with a `helpers.py` of their own (issue 15, item 1): sub1, sub2, sub1
    again give WIDTH 3, 7, 3, as a fresh `python` would, whether or not the folders are in
    the workspace."""
    for sub, width in (("sub1", 3), ("sub2", 7)):
        write(tmp_path, f"{sub}/helpers.py", f"WIDTH = {width}\n")
        write(tmp_path, f"{sub}/{'a' if sub == 'sub1' else 'b'}.py", HELPER_MODEL)
    roots = [str(tmp_path)] if in_workspace else []

    def width(sub: str, name: str) -> int:
        out = tmp_path / f"{sub}.msgpack"
        reply = fresh_runner.ask(
            op="trace",
            file=str(tmp_path / sub / name),
            target="Net",
            out=str(out),
            input="torch.ones(1, 4)",
            roots=roots,
        )
        assert reply["ok"], reply
        g = Graph.load(out)
        return next(e.shape for e in g.edges if g.nodes[e.dst].kind == "output")[-1]

    assert [width("sub1", "a.py"), width("sub2", "b.py"), width("sub1", "a.py")] == [3, 7, 3]


def _edge_stats(path: Path) -> list[Any]:
    return [e.get("stats") for e in unpack(path.read_bytes())["edges"]]


def test_same_code_same_numbers(fresh_runner, tmp_path):
    runner = fresh_runner
    """Random weights and a random input, yet two traces of the same code give the same values
    (a rebuilt model, an edit elsewhere in the file): what Compare with HEAD relies on."""
    path = write(tmp_path, "same.py", MLP)
    text = path.read_text()
    outs = [tmp_path / f"g{i}.msgpack" for i in range(3)]
    ask = dict(op="trace", file=str(path), target="Net", inputCall="torch.randn(2, 64)")
    assert runner.ask(**ask, out=str(outs[0]), text=text)["ok"]
    assert runner.ask(**ask, out=str(outs[1]), text=text)["ok"]  # the build reused
    assert runner.ask(**ask, out=str(outs[2]), text=text + "\n# an edit\n")["ok"]  # rebuilt
    assert runner.progress[0] == "Importing"
    first = _edge_stats(outs[0])
    assert any(s is not None for s in first)
    assert _edge_stats(outs[1]) == first and _edge_stats(outs[2]) == first


def test_a_trace_leaves_the_editor_a_core(fresh_runner, tmp_path):
    """torch runs one intra-op thread fewer than cores while the runner traces: threads
    spinning for the core the editor holds made GPT-2 with statistics 13 s instead of 0.6 s."""
    seen = tmp_path / "threads.txt"
    path = write(
        tmp_path,
        "probe.py",
        f"""
        import torch
        from torch import nn

        class Probe(nn.Module):
            def forward(self, x):
                with open({str(seen)!r}, "w") as f:
                    f.write(str(torch.get_num_threads()))
                return x + 1
        """,
    )
    reply = fresh_runner.ask(
        op="trace",
        file=str(path),
        target="Probe",
        out=str(tmp_path / "g.msgpack"),
        input="torch.zeros(2)",
    )
    assert reply["ok"], reply
    import torch

    cores = len(os.sched_getaffinity(0))
    # the runner starts with torch's default, which follows the cores it may use
    assert int(seen.read_text()) == max(1, min(torch.get_num_threads(), cores - 1))


SETS_GLOBALS = """
    import os, sys, warnings
    import torch
    from torch import nn

    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    sys.setrecursionlimit(200)
    warnings.simplefilter("error")
    os.environ["TORCHSCOPE_TEST_LEAK"] = "1"
    sys.path.insert(0, "/torchscope-test/lib")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)
"""

CHECKS_GLOBALS = """
    import os, sys, warnings
    import torch
    from torch import nn

    GRAD_AT_IMPORT = torch.is_grad_enabled()
    RECURSION_AT_IMPORT = sys.getrecursionlimit()  # (a trace raises it for the forward)
    PATH_AT_IMPORT = list(sys.path)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            leaked = [
                what
                for what, ok in (
                    ("default dtype", torch.get_default_dtype() == torch.float32),
                    ("grad mode", GRAD_AT_IMPORT),
                    ("recursion limit", RECURSION_AT_IMPORT >= 1000),
                    ("warnings filter", not any(f[0] == "error" for f in warnings.filters)),
                    ("environment", "TORCHSCOPE_TEST_LEAK" not in os.environ),
                    ("sys.path", "/torchscope-test/lib" not in PATH_AT_IMPORT),
                )
                if not ok
            ]
            assert not leaked, f"leaked from another file: {leaked}"
            return self.fc(x)
"""


def test_one_files_process_settings_do_not_reach_the_next(fresh_runner, tmp_path):
    """A file that sets torch's default dtype, grad mode, the recursion limit, a warnings
    filter, an environment variable or a sys.path entry as it is imported: another file traced next in the
    same runner sees the process as a fresh `python` would (float32 tensors, no leak); the
    file itself, traced again from its kept build, still has its own settings."""
    sets = write(tmp_path, "sets.py", SETS_GLOBALS)
    checks = write(tmp_path, "checks.py", CHECKS_GLOBALS)

    def dtypes(path: Path) -> set[str]:
        out = tmp_path / f"{path.stem}.msgpack"
        reply = fresh_runner.ask(
            op="trace",
            file=str(path),
            target="Net",
            out=str(out),
            inputCall="torch.ones(2, 4)",
            runTopLevel=True,
        )
        assert reply["ok"], reply
        assert reply["result"]["summary"]["error"] is None, reply["result"]["summary"]["error"]
        return {e.dtype for e in Graph.load(out).edges}

    assert dtypes(sets) == {"float64"}
    assert dtypes(sets) == {"float64"}  # the kept build: its own settings still
    assert dtypes(checks) == {"float32"}
    assert dtypes(sets) == {"float64"}
    assert dtypes(checks) == {"float32"}


HIDES_MSGPACK = """
import importlib.machinery, runpy, sys

class NoSiteMsgpack:  # an environment with torch but without msgpack
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] != "msgpack":
            return None
        search = [p for p in (path or sys.path) if "site-packages" not in p]
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec

sys.meta_path.insert(0, NoSiteMsgpack)
runpy.run_module("torchscope.runner", run_name="__main__")
"""

USES_MSGPACK = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            import msgpack  # the bundled fallback, last on the path
            assert msgpack.__file__.startswith({libs!r}), msgpack.__file__
            return self.fc(x)
"""


def test_the_extensions_msgpack_is_the_runners_fallback(tmp_path):
    """A user's environment without msgpack: the folder of the extension's libraries (passed
    by the server as TORCHSCOPE_RUNNER_LIBS, see test_server_lsp.py) is last on the runner's
    sys.path, so the graph file is still written, with that msgpack."""
    import msgpack

    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "msgpack").symlink_to(Path(msgpack.__file__).parent)
    model = write(tmp_path, "net.py", USES_MSGPACK.format(libs=str(libs)))
    env = {**os.environ, "PYTHONPATH": str(HELPER), "TORCHSCOPE_RUNNER_LIBS": str(libs)}
    out = tmp_path / "g.msgpack"
    request = {"id": 1, "op": "trace", "file": str(model), "target": "Net", "out": str(out)}
    request["input"] = "torch.ones(2, 4)"
    run = subprocess.run(
        [sys.executable, "-c", HIDES_MSGPACK],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    replies = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    reply = replies[-1]
    assert reply["ok"], (reply, run.stderr)
    assert reply["result"]["summary"]["error"] is None, reply["result"]["summary"]["error"]
    assert Graph.load(out).model.name == "Net"


REGISTERS_AN_OP = """
    import torch
    from torch import nn

    lib = torch.library.Library("torchscope_test_ns", "DEF")
    lib.define("triple(Tensor x) -> Tensor")
    lib.impl("triple", lambda x: x * 3, "CPU")

    torch.library.define("torchscope_test_fn::quad", "(Tensor x) -> Tensor")
    torch.library.impl("torchscope_test_fn::quad", "cpu", lambda x: x * 4)

    @torch.library.custom_op("torchscope_test_co::half", mutates_args=())
    def half(x: torch.Tensor) -> torch.Tensor:
        return x / 2

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            x = torch.ops.torchscope_test_fn.quad(torch.ops.torchscope_test_ns.triple(x))
            return self.fc(half(x))
"""


@pytest.mark.parametrize("top_level", [False, True])
def test_a_file_that_registers_an_operator_library_is_traced_again_after_an_edit(
    fresh_runner, tmp_path, top_level
):
    """torch allows one `Library(ns, "DEF")` per namespace and one definition per operator
    while their library lives: the edited file's import must find the old ones gone (as in a
    fresh `python`), not fail with "Only a single TORCH_LIBRARY can be used to register the
    namespace" or "registered … multiple times"; the graph shows the operators. The
    registrations are definitions: they run without the file's top-level code too."""
    path = write(tmp_path, "ops.py", REGISTERS_AN_OP)
    text = path.read_text()
    for edit in range(3):
        reply = fresh_runner.ask(
            op="trace",
            file=str(path),
            target="Net",
            out=str(tmp_path / f"g{edit}.msgpack"),
            inputCall="torch.ones(2, 4)",
            text=text + "\n" * edit,  # an edit: the file is imported again
            runTopLevel=top_level,
        )
        assert reply["ok"], reply
        assert reply["result"]["summary"]["error"] is None, reply["result"]["summary"]
        ops = {n.name for n in Graph.load(tmp_path / f"g{edit}.msgpack").nodes if n.kind == "op"}
        assert {"triple", "quad", "half", "linear"} <= ops, ops


def test_a_typed_input_naming_what_left_out_code_makes_says_so(fresh_runner, tmp_path):
    runner = fresh_runner
    path = write(
        tmp_path,
        "net.py",
        """
        import torch
        from torch import nn

        EXAMPLE = torch.randn(2, 4)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x)
        """,
    )
    out = tmp_path / "g.msgpack"
    reply = runner.ask(op="trace", file=str(path), target="Net", out=str(out), input="EXAMPLE")
    assert not reply["ok"] and reply["kind"] == "needs-input", reply
    assert "NameError: name 'EXAMPLE' is not defined" in reply["message"]
    assert "line 5: EXAMPLE = torch.randn(2, 4)" in reply["message"], reply["message"]
    reply = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="{0: torch.randn(2, 4)}"
    )
    assert not reply["ok"] and "keyword argument names" in reply["message"], reply


def write_net_package(root: Path) -> None:
    """`root/pkg/net.py`: a model class `Net(width)` that needs its width, to import."""
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "net.py").write_text(
        "from torch import nn\n"
        "class Net(nn.Module):\n"
        "    def __init__(self, width):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(width, 2)\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n"
    )


def test_an_imported_model_class_built_from_the_file_is_not_given_its_arguments_as_input(
    tmp_path: Path,
) -> None:
    """The server reads calls before the runner imports anything: `Net(8)` of a class it
    could not resolve (a package outside the workspace) looked like a call of the model with
    the input 8. Built from that very call, the model takes the file's call of it instead."""
    write_net_package(tmp_path)
    train = tmp_path / "train.py"
    train.write_text(
        "import sys, torch\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from pkg.net import Net\n"
        "def main():\n"
        "    net = Net(8)\n"
        "    net(torch.randn(3, 8))\n"
    )
    runner = RunnerProcess()
    try:
        reply = runner.ask(
            op="trace",
            file=str(train),
            target="Net",
            out=str(tmp_path / "g.mp"),
            inputCall="8",  # (what the server read)
            runTopLevel=True,
        )
    finally:
        runner.close()
    assert reply.get("ok"), reply
    graph = Graph.load(tmp_path / "g.mp")
    assert graph.error is None
    x = [e for e in graph.edges if graph.nodes[e.src].kind == "input"]
    assert x and x[0].shape == [3, 8]


MODEL_OF = """
    import torch
    from torch import nn
    {imports}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, {width})

        def forward(self, x):
            return self.fc(x)
"""


def _width(runner: RunnerProcess, path: Path, out: Path) -> int:
    reply = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="torch.ones(1, 4)"
    )
    assert reply["ok"], reply
    g = Graph.load(out)
    return next(e.shape for e in g.edges if g.nodes[e.dst].kind == "output")[-1]


def test_a_trace_at_the_root_leaves_the_roots_own_path_entry(tmp_path):
    """With the workspace root on PYTHONPATH (a `.env` with PYTHONPATH=., an editable install),
    a trace of a file at the root took the root off sys.path for good — every copy of it —
    and the next trace of a script importing the root's package failed (QA)."""
    write(tmp_path, "pkg/__init__.py", "WIDTH = 5\n")
    write(tmp_path, "root_model.py", MODEL_OF.format(imports="", width=3))
    script = write(
        tmp_path, "scripts/use_pkg.py", MODEL_OF.format(imports="import pkg", width="pkg.WIDTH")
    )
    runner = RunnerProcess(str(tmp_path))
    try:
        out = tmp_path / "g.msgpack"
        assert _width(runner, script, out) == 5
        assert _width(runner, tmp_path / "root_model.py", out) == 3
        assert _width(runner, script, out) == 5
    finally:
        runner.close()


def test_layouts_python_runs_but_the_trace_did_not(fresh_runner, tmp_path):
    """Files `python FILE` runs, that failed to trace (QA, project layouts): a script inside a
    package importing its sibling by plain name (`python experiments/gan/train.py` puts its
    own folder first); a package folder or a file with a dot in its name (`detr.v2/`,
    `unet.v2.py`: a module name can't hold one; `unet.v2.py` ran the unrelated `unet.py`);
    a `secrets.py` beside the model (the trace's own late import of numpy.random, which
    imports the standard library's secrets, got the project's file: an internal error)."""
    out = tmp_path / "g.msgpack"
    write(tmp_path, "experiments/__init__.py", "")
    write(tmp_path, "experiments/gan/__init__.py", "")
    write(tmp_path, "experiments/gan/nets.py", "WIDTH = 6\n")
    train = write(
        tmp_path,
        "experiments/gan/train.py",
        MODEL_OF.format(imports="from nets import WIDTH", width="WIDTH"),
    )
    assert _width(fresh_runner, train, out) == 6
    write(tmp_path, "detr.v2/__init__.py", "")
    write(tmp_path, "detr.v2/helpers.py", "WIDTH = 7\n")
    detr = write(
        tmp_path,
        "detr.v2/model.py",
        MODEL_OF.format(imports="from helpers import WIDTH", width="WIDTH"),
    )
    assert _width(fresh_runner, detr, out) == 7
    write(tmp_path, "ablations/unet.py", "raise SystemExit('the other file ran')\n")
    v2 = write(tmp_path, "ablations/unet.v2.py", MODEL_OF.format(imports="", width=8))
    assert _width(fresh_runner, v2, out) == 8
    write(tmp_path, "keys/secrets.py", "API_KEY = 'not a real key'\n")
    keyed = write(
        tmp_path, "keys/model.py", MODEL_OF.format(imports="from secrets import API_KEY", width=9)
    )
    runner = RunnerProcess()  # (a runner that traced nothing before)
    try:
        assert _width(runner, keyed, out) == 9
    finally:
        runner.close()


REGISTRY = """
    REG = {}

    def register(name):
        def add(cls):
            if name in REG:  # (as detectron2's, mmengine's registries)
                raise KeyError(f"{name!r} is already registered")
            REG[name] = cls
            return cls
        return add
"""


def test_a_module_its_package_imports_runs_once_and_from_the_editors_text(fresh_runner, tmp_path):
    """`zoo/__init__.py` imports `zoo.convnet`: importing the package for its relative imports
    ran the saved file, then the trace ran it again under the same name (a registry refused
    the second registration: KeyError), and the editor's unsaved text was not what the
    package's import ran. And a package's own `__init__.py` as the target: its whole top
    level ran (the package's import), though the summary listed those lines as skipped."""
    write(tmp_path, "zoo/__init__.py", "from .registry import REG\nfrom . import convnet\n")
    write(tmp_path, "zoo/registry.py", REGISTRY)
    conv = write(
        tmp_path,
        "zoo/convnet.py",
        textwrap.dedent(MODEL_OF.format(imports="from .registry import register", width=3)).replace(
            "class Net", '@register("convnet")\nclass Net'
        ),
    )
    out = tmp_path / "g.msgpack"
    assert _width(fresh_runner, conv, out) == 3
    text = conv.read_text().replace("nn.Linear(4, 3)", "nn.Linear(4, 5)")
    ask = dict(op="trace", file=str(conv), target="Net", out=str(out), input="torch.ones(1, 4)")
    reply = fresh_runner.ask(**ask, text=text)
    assert reply["ok"], reply
    assert reply["result"]["summary"]["params"] == 4 * 5 + 5
    mark = tmp_path / "init-ran"
    init = write(
        tmp_path,
        "pkg/__init__.py",
        f"open({str(mark)!r}, 'w').close()\n"
        + textwrap.dedent(MODEL_OF.format(imports="", width=2)),
    )
    assert _width(fresh_runner, init, out) == 2
    assert not mark.exists(), "the package's top-level code ran"


def test_a_build_runs_in_the_folder_the_request_names(fresh_runner, tmp_path):
    """A factory opening `configs/net.json` relative to its project's folder: the runner ran
    every file in the first workspace folder (a multi-root workspace: FileNotFoundError for
    the second folder's files). The server names the file's workspace folder (`cwd`)."""
    project = tmp_path / "second"
    write(project, "configs/net.json", '{"width": 6}')
    model = write(
        project,
        "scripts/train.py",
        """
        import json
        from torch import nn

        def make_model():
            with open("configs/net.json") as f:
                return nn.Linear(4, json.load(f)["width"])
        """,
    )
    out = tmp_path / "g.msgpack"
    ask = dict(
        op="trace", file=str(model), target="make_model", out=str(out), input="torch.ones(1, 4)"
    )
    reply = fresh_runner.ask(**ask, cwd=str(project))
    assert reply["ok"], reply
    assert reply["result"]["summary"]["params"] == 4 * 6 + 6
    assert not fresh_runner.ask(**ask, cwd=str(tmp_path))["ok"]  # (not found from elsewhere)


def test_a_missing_package_is_an_import_error_not_left_out_code(fresh_runner, tmp_path):
    """`from no_such_package import x` failed, and because the file also runs a training
    loop at import the user was asked to let it run (`runs-code`): running it can't install
    the package. Said as the import error it is."""
    model = write(
        tmp_path,
        "train.py",
        """
        import torch
        from torch import nn
        from no_such_package_xyz import helpers

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, helpers.WIDTH)

            def forward(self, x):
                return self.fc(x)

        for step in range(3):
            print(step)
        """,
    )
    reply = fresh_runner.ask(
        op="trace",
        file=str(model),
        target="Net",
        out=str(tmp_path / "g.msgpack"),
        input="torch.ones(1, 4)",
    )
    assert not reply["ok"] and reply["kind"] == "import-error", reply
    assert "No module named 'no_such_package_xyz'" in reply["message"], reply


def test_a_namespace_package_s_relative_imports(fresh_runner, tmp_path):
    """Folders without `__init__.py` (namespace packages, as `python -m nsproj.models.net`
    runs them): `from .layers import Block` failed ("attempted relative import with no known
    parent package"). The file's relative imports say how many folders its package spans."""
    write(tmp_path, "nsproj/common/cfg.py", "WIDTH = 7\n")
    write(tmp_path, "nsproj/models/layers.py", "from torch import nn\nBlock = nn.Linear\n")
    net = write(
        tmp_path,
        "nsproj/models/net.py",
        MODEL_OF.format(
            imports="from .layers import Block\n    from ..common.cfg import WIDTH", width="WIDTH"
        ),
    )
    assert _width(fresh_runner, net, tmp_path / "g.msgpack") == 7


def test_a_files_patch_of_torch_does_not_reach_the_next_files_trace(fresh_runner, tmp_path):
    """Project A's file patches torch at import (`F.gelu = fast_gelu`); a later trace of
    project B in the same warm runner ran A's patch (B's graph had a call at A's file), as no
    fresh `python` would. A library's patch, imported once for the runner's life, stays."""
    a = write(
        tmp_path,
        "projA/fastmodel.py",
        """
        import torch
        import torch.nn.functional as F
        from torch import nn

        def fast_gelu(x, approximate="none"):
            return torch.tanh(x)

        F.gelu = fast_gelu
        torch.fast_gelu = fast_gelu

        class Net(nn.Module):
            def forward(self, x):
                return F.gelu(x)
        """,
    )
    b = write(
        tmp_path,
        "projB/plainmodel.py",
        """
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                assert not hasattr(torch, "fast_gelu"), "project A's function reached B"
                return F.gelu(x)
        """,
    )
    out = tmp_path / "g.msgpack"
    for path in (b, a, b):
        reply = fresh_runner.ask(
            op="trace", file=str(path), target="Net", out=str(out), input="torch.ones(1, 4)"
        )
        assert reply["ok"] and reply["result"]["summary"]["error"] is None, reply
        g = Graph.load(out)
        ops = [n.name for n in g.nodes if n.kind == "op"]
        assert ops == (["tanh"] if path == a else ["gelu"]), (path.name, ops)
