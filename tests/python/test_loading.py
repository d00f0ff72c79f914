"""Loading a file for a trace never runs its top-level work (issue 16, item 1), and the input
is chosen honestly (item 2): a literal call or an example next to the model, a later layer's
size, never a guess for one of several arguments."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_runner import RunnerProcess

from torchscope.definitions import definitions, suspects
from torchscope.graph import Graph

TRAIN = """
    import torch
    from torch import nn

    WIDTH = 16
    STEPS = int("30")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, WIDTH)
            self.fc2 = nn.Linear(WIDTH, 2)

        def forward(self, x):
            return self.fc2(self.fc1(x).relu())

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    open(CHECKPOINT, "w").write("trained")
    print("done training")
"""


def _file(tmp_path: Path, text: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).replace("CHECKPOINT", repr(str(tmp_path / "ckpt.txt"))))
    return path


def test_definitions_keep_what_the_model_needs_and_list_the_work():
    source = textwrap.dedent(TRAIN)
    defs = definitions(source, {"Net"})
    kept = [type(s).__name__ for s in defs.tree.body]
    assert kept == ["Import", "ImportFrom", "Assign", "ClassDef"]  # WIDTH: Net reads it
    skipped = [(s.line, s.text) for s in defs.skipped]
    assert [line for line, _ in skipped] == [6, 17, 18, 19, 24, 25]  # STEPS: nothing kept reads it
    assert skipped[3][1] == "for step in range(STEPS):"
    # the instance as target: its statement and what it reads stay
    defs = definitions(source, {"model"})
    assert any(isinstance(s, type(defs.tree.body[0])) for s in defs.tree.body)
    assert "model" in {t.id for s in defs.tree.body for t in getattr(s, "targets", [])}


CUSTOM_OPS = """
    import torch
    from torch import nn
    from torch.library import Library

    lib = torch.library.Library("mylib", "DEF")
    lib.define("triple(Tensor x) -> Tensor")
    lib.impl("triple", lambda x: x * 3, "CPU")
    frag = Library("mylib", "FRAGMENT")
    frag.define("quad(Tensor x) -> Tensor")
    torch.library.define("other::half", "(Tensor x) -> Tensor")
    torch.library.impl("other::half", "cpu", lambda x: x / 2)
    other = make_other()
    other.define("nope(Tensor x) -> Tensor")
    run_training()
"""


def test_definitions_keep_operator_registrations():
    """torch.library's registrations at top level (a Library and what is defined and
    implemented in it, torch.library.define/impl) are definitions a forward calls: kept.
    Other objects' methods and plain calls stay work."""
    defs = definitions(textwrap.dedent(CUSTOM_OPS), {"Net"})
    assert [s.text for s in defs.skipped] == [
        "other = make_other()",
        'other.define("nope(Tensor x) -> Tensor")',
        "run_training()",
    ]


def test_the_skipped_code_an_error_points_at():
    """A forward that raises about a name or key that skipped top-level code would have
    made: those statements are suspected (and offered to run); others are not."""
    source = textwrap.dedent(
        """
        import torch
        CACHE = {}
        CACHE.update(scale=2.0)
        VOCAB = load_vocab("vocab.txt")
        for step in range(10):
            train(step)
        """
    )
    skipped = definitions(source, {"Net"}).skipped
    assert [s.line for s in suspects(skipped, "KeyError: 'scale'")] == [4]
    assert [s.line for s in suspects(skipped, "NameError: name 'VOCAB' is not defined")] == [5]
    assert [s.line for s in suspects(skipped, "module 'x' has no attribute 'VOCAB'")] == [5]
    assert suspects(skipped, "RuntimeError: mat1 and mat2 shapes cannot be multiplied") == []
    assert suspects(skipped, "KeyError: 'missing'") == []
    assert suspects([], "KeyError: 'scale'") == []


def test_type_aliases_are_definitions():
    """Python 3.12's `type X = ...` is a definition (a model's annotations may read it): kept.
    Parsed by a 3.12 interpreter of this machine (this one, 3.11, can't); definitions.py is
    standard library only."""
    python = sorted(Path("/root/.pyenv/versions").glob("3.12.*/bin/python3.12"))
    assert python, "no Python 3.12 on this machine (expected under /root/.pyenv/versions)"
    code = textwrap.dedent(
        """
        from torchscope.definitions import definitions
        source = "type Width = int\\nclass Net:\\n    def f(self, w: Width = 4): pass\\n"
        print(sorted(type(s).__name__ for s in definitions(source, {"Net"}).tree.body))
        """
    )
    helper = Path(__file__).resolve().parents[2] / "python_helper"
    run = subprocess.run(
        [str(python[-1]), "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(helper)},
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['ClassDef', 'TypeAlias']"


@pytest.fixture(scope="module")
def runner():
    r = RunnerProcess()
    yield r
    r.close()


def test_a_forward_raising_a_base_exception_of_its_own_is_a_result(runner, tmp_path):
    """QA: `class Custom(BaseException)` raised in forward came back as `internal`
    ("torchscope failed"): the forward raising is the result, its graph up to the raise."""
    path = _file(
        tmp_path,
        """
        import torch
        from torch import nn

        class Custom(BaseException):
            pass

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def forward(self, x):
                y = self.fc(x)
                raise Custom("custom base exception")
        """,
    )
    out = tmp_path / "net.msgpack"
    reply = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="torch.randn(1, 4)"
    )
    assert reply["ok"], reply
    error = reply["result"]["summary"]["error"]
    assert (error["type"], error["message"]) == ("Custom", "custom base exception")
    assert Graph.load(out).error is not None


def test_a_training_script_is_traced_without_training(runner, tmp_path):
    path = _file(tmp_path, TRAIN)
    for target in ("Net", "model"):
        out = tmp_path / f"{target}.msgpack"
        reply = runner.ask(
            op="trace", file=str(path), target=target, out=str(out), input="torch.randn(1, 8)"
        )
        assert reply["ok"], reply
        skipped = reply["result"]["summary"]["skipped"]
        assert {"line": 19, "text": "for step in range(STEPS):"} in skipped
    assert not (tmp_path / "ckpt.txt").exists(), "the training loop ran"


def test_work_the_model_needs_is_asked_for_then_run_with_consent(runner, tmp_path):
    path = _file(
        tmp_path,
        """
        import torch
        from torch import nn
        sizes = {}
        for name in ("hidden",):
            sizes[name] = 6
        open(CHECKPOINT, "w").write("ran")

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, sizes["hidden"])

            def forward(self, x):
                return self.fc(x)
        """,
    )
    out = str(tmp_path / "g.msgpack")
    reply = runner.ask(op="trace", file=str(path), target="Net", out=out, input="torch.ones(1, 3)")
    assert reply["kind"] == "runs-code", reply
    assert "KeyError" in reply["message"] and "line 5" in reply["message"]
    assert [s["line"] for s in reply["statements"]] == [5, 7]
    assert not (tmp_path / "ckpt.txt").exists()
    reply = runner.ask(
        op="trace",
        file=str(path),
        target="Net",
        out=out,
        input="torch.ones(1, 3)",
        runTopLevel=True,
    )
    assert reply["ok"], reply
    assert (tmp_path / "ckpt.txt").exists()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args], capture_output=True, text=True, timeout=300
    )


def test_the_cli_loads_definitions_only_unless_told(tmp_path):
    path = _file(tmp_path, TRAIN)
    run = _cli(
        "trace", f"{path}:Net", "--input", "torch.randn(1, 8)", "-o", str(tmp_path / "g.json")
    )
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "ckpt.txt").exists()
    assert "done training" not in run.stdout + run.stderr
    run = _cli(
        "trace",
        f"{path}:Net",
        "--input",
        "torch.randn(1, 8)",
        "--run-top-level",
        "-o",
        str(tmp_path / "g.json"),
    )
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "ckpt.txt").exists()


FILLED_AT_IMPORT = """
    import torch
    from torch import nn

    CACHE = {}
    CACHE.update(scale=2.0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x) * CACHE["scale"]
"""


def test_a_forward_that_lacks_what_skipped_code_makes_is_offered_that_code(runner, tmp_path):
    """The model builds without the top-level code, but its forward raises about a key that
    code would have put in place: the runner names the statement (the editor asks to run the
    file's code, as when the build fails), the CLI says --run-top-level; run, it draws."""
    path = _file(tmp_path, FILLED_AT_IMPORT, "filled.py")
    out = str(tmp_path / "g.msgpack")
    ask = dict(op="trace", file=str(path), target="Net", out=out, input="torch.ones(1, 4)")
    summary = runner.ask(**ask)["result"]["summary"]
    assert summary["error"]["type"] == "KeyError"
    assert summary["skippedSuspect"] == [{"line": 6, "text": "CACHE.update(scale=2.0)"}]
    summary = runner.ask(**ask, runTopLevel=True)["result"]["summary"]
    assert summary["error"] is None and summary["skippedSuspect"] == []

    run = _cli("trace", f"{path}:Net", "--input", "torch.ones(1, 4)", "-o", out)
    assert run.returncode == 1
    assert "(line 6: CACHE.update(scale=2.0)): --run-top-level runs it" in run.stderr
    run = _cli("trace", f"{path}:Net", "--input", "torch.ones(1, 4)", "--run-top-level", "-o", out)
    assert run.returncode == 0, run.stderr


PARSES_ARGUMENTS = """
    import argparse
    from torch import nn

    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--hidden", type=int, default=16)
    args = parser.parse_args()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, args.hidden)

        def forward(self, x):
            return self.fc(x)
"""


def test_a_command_line_with_defaults_is_parsed_without_the_top_level_code(runner, tmp_path):
    """argparse's configuration (`add_argument`, groups, `set_defaults`) is a definition
    when the model reads the parsed arguments: with defaults for all of them the model is
    traced without asking to run the file; required ones are named (next test)."""
    text = textwrap.dedent(PARSES_ARGUMENTS).replace("required=True", 'default="data/"')
    text = text.replace(
        "args = parser.parse_args()",
        'group = parser.add_argument_group("model")\n'
        'group.add_argument("--depth", type=int, default=2)\n'
        "parser.set_defaults(hidden=12)\n"
        "args = parser.parse_args()",
    )
    defs = definitions(text, {"Net"})
    assert defs.skipped == []
    path = tmp_path / "args_defaults.py"
    path.write_text(text)
    out = tmp_path / "g.msgpack"
    reply = runner.ask(
        op="trace", file=str(path), target="Net", out=str(out), input="torch.ones(1, 4)"
    )
    assert reply["ok"], reply
    assert reply["result"]["summary"]["error"] is None
    assert any(e.shape == [1, 12] for e in Graph.load(out).edges), "set_defaults(hidden=12) ran"


def test_a_file_that_parses_its_command_line_at_import_is_told_so(runner, tmp_path):
    """argparse at top level exits (2) when a trace runs the file with no arguments: the
    message says what argparse said and why, not only "called sys.exit(2)"."""
    path = _file(tmp_path, PARSES_ARGUMENTS, "args.py")
    out = str(tmp_path / "g.msgpack")
    reply = runner.ask(
        op="trace",
        file=str(path),
        target="Net",
        out=out,
        input="torch.ones(1, 4)",
        runTopLevel=True,
    )
    assert reply["kind"] == "import-error", reply
    said = "argparse: the following arguments are required: --data"
    assert f"importing args.py called sys.exit(2) ({said}" in reply["message"]
    assert "a trace runs the file with no command-line arguments" in reply["message"]
    run = _cli("trace", f"{path}:Net", "--input", "torch.ones(1, 4)", "--run-top-level", "-o", out)
    assert run.returncode == 2 and said in run.stderr, run.stderr


CNN = """
    import torch
    from torch import nn

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.fc = nn.Linear(8 * 16 * 16, 10)

        def forward(self, x):
            x = torch.max_pool2d(self.conv(x).relu(), 2)
            return self.fc(x.flatten(1))
"""


@pytest.mark.parametrize(
    "head", [b"# -*- coding: latin-1 -*-\n# caf\xe9\n", b"\xef\xbb\xbf# caf\xc3\xa9\n"]
)
def test_the_cli_reads_a_file_as_python_does(tmp_path, head):
    """A coding cookie (latin-1) or a UTF-8 byte-order mark: Python runs the file, so does
    a trace (it read the bytes as UTF-8: a decode error, or "invalid character U+FEFF")."""
    path = tmp_path / "encoded.py"
    path.write_bytes(head + textwrap.dedent(CNN).encode())
    out = str(tmp_path / "g.json")
    for top_level in ([], ["--run-top-level"]):
        run = _cli(
            "trace",
            f"{path}:SmallCNN",
            "--input",
            "torch.ones(1, 3, 32, 32)",
            *top_level,
            "-o",
            out,
        )
        assert run.returncode == 0, run.stderr


def test_a_later_layer_fixes_the_guessed_image_size(runner, tmp_path):
    """Conv2d(3, …) alone says 64×64, which this model's Linear refuses; the guess that runs
    is 32×32, and the summary says it was guessed (and how to give it again)."""
    path = _file(tmp_path, CNN, "cnn.py")
    out = tmp_path / "g.msgpack"
    reply = runner.ask(op="trace", file=str(path), target="SmallCNN", out=str(out))
    assert reply["ok"], reply
    s = reply["result"]["summary"]
    assert s["error"] is None, s
    assert (s["inputKind"], s["inputExpr"]) == ("guess", "torch.randn(1, 3, 32, 32)")
    assert s["input"].startswith("guessed from the first layer conv (Conv2d)")
    g = Graph.load(out)
    assert [e.shape for e in g.edges if g.nodes[e.src].kind == "input"] == [[1, 3, 32, 32]]


def test_an_example_returned_next_to_the_model_is_its_input(runner, tmp_path):
    """examples/convnet.py: `build()` returns a 32×32 example beside ConvNet(): tracing the
    class uses it, not a 64×64 guess."""
    path = Path(__file__).resolve().parents[2] / "examples" / "convnet.py"
    out = tmp_path / "convnet.msgpack"
    reply = runner.ask(
        op="trace",
        file=str(path),
        target="ConvNet",
        out=str(out),
        inputCall="torch.randn(1, 3, 32, 32)",
        inputCallFrom="build",
    )
    assert reply["ok"], reply
    s = reply["result"]["summary"]
    # (said as where it comes from: the file never calls the model with it)
    assert (s["inputKind"], s["input"]) == (
        "call",
        "torch.randn(1, 3, 32, 32), as build() returns it",
    )
    g = Graph.load(out)
    assert [e.shape for e in g.edges if g.nodes[e.src].kind == "input"] == [[1, 3, 32, 32]]


def test_the_static_analysis_finds_the_returned_example():
    from torchscope.build_target import input_call_in_file

    path = Path(__file__).resolve().parents[2] / "examples" / "convnet.py"
    assert input_call_in_file(path, "ConvNet") == ("torch.randn(1, 3, 32, 32)", "build")


def test_a_forward_of_several_arguments_is_never_called_with_one_guess(runner, tmp_path):
    path = _file(
        tmp_path,
        """
        import torch
        from torch import nn

        class Attend(nn.Module):
            def __init__(self):
                super().__init__()
                self.q = nn.Linear(8, 8)

            def forward(self, q, k, mask):
                return (self.q(q) @ k.transpose(-1, -2)).masked_fill(mask, 0)
        """,
        "attend.py",
    )
    reply = runner.ask(op="trace", file=str(path), target="Attend", out=str(tmp_path / "g.msgpack"))
    assert reply["kind"] == "needs-input", reply
    assert "forward(q, k, mask) takes 3 arguments" in reply["message"]
    assert reply["guess"] == "(torch.randn(1, 8), torch.randn(1, 8), torch.randn(1, 8))"
