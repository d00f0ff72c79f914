"""`torchscope diff A B` and `torchscope summary GRAPH-FILE` on the command line."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import msgpack
import pytest

import torchscope
from torchscope.cli import main
from torchscope.compare import compare_view
from torchscope.diff import diff_graphs
from torchscope.graph import Graph

ROOT = Path(__file__).resolve().parents[2]

MODEL = """
import torch
from torch import nn

WIDTH = {width}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, WIDTH)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(WIDTH, 4)
    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))

class Broken(Net):
    def forward(self, x):
        return self.fc2(x)
"""


def write_model(folder: Path, name: str, width: int = 32) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(MODEL.format(width=width)))
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def models(tmp_path: Path) -> tuple[Path, Path]:
    return write_model(tmp_path, "net_a.py"), write_model(tmp_path, "net_b.py", width=64)


def test_text_diff_of_two_targets(models, capsys) -> None:
    a, b = models
    # the structure only: each side's random weights and input make different values
    rc, out, err = run(["diff", f"{a}:Net", f"{b}:Net", "--no-values"], capsys)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith(f"--- a: {a}:Net  (Net, ")
    assert lines[1].startswith(f"+++ b: {b}:Net  (Net, ")
    assert "~ fc1: Linear  (1 change inside)" in lines
    assert "      out_features: 32 → 64" in lines
    assert "    ~ linear: output: [1, 32] → [1, 64]" in lines
    assert lines[-1] == "0 added, 0 removed, 7 changed, 3 same"


def test_values_are_compared_by_default(models, capsys) -> None:
    a, b = models
    rc, out, err = run(["diff", f"{a}:Net", f"{b}:Net"], capsys)
    assert rc == 0 and err == ""
    linear = next(line for line in out.splitlines() if line.startswith("    ~ linear: output"))
    assert linear.startswith("    ~ linear: output: [1, 32] → [1, 64]; values: ")


def test_check_exit_codes(models, capsys) -> None:
    a, b = models
    assert run(["diff", f"{a}:Net", f"{a}:Net", "--check"], capsys)[0] == 0
    rc, out, _ = run(["diff", f"{a}:Net", f"{b}:Net", "--check"], capsys)
    assert rc == 1 and "out_features: 32 → 64" in out
    rc, _, err = run(["diff", f"{a}:Net", f"{a}:Nope", "--check"], capsys)
    assert rc == 2 and "has no name 'Nope'" in err


def test_check_fails_a_forward_that_raises_even_as_it_did_before(models, capsys) -> None:
    """Both sides raising the same error compared "the same": a CI guard passed a model
    whose forward no longer runs."""
    a, _ = models
    rc, _, err = run(["diff", f"{a}:Broken", f"{a}:Broken", "--check"], capsys)
    assert rc == 1
    assert "B: the forward raised" in err
    assert run(["diff", f"{a}:Broken", f"{a}:Broken"], capsys)[0] == 0  # (no --check: compared)


def test_json_document(models, tmp_path, capsys) -> None:
    a, _ = models
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "diff.json"
    rc, stdout, _ = run(
        # the structure only (with values, fc2's output changes too: dropout trains in b)
        [
            "diff",
            f"{a}:Net",
            f"{a}:Net",
            "--train-b",
            "--no-values",
            "--format",
            "json",
            "-o",
            str(out),
        ],
        capsys,
    )
    assert rc == 0
    assert stdout == f"{out}: 0 added, 0 removed, 1 changed, 9 same\n"
    doc = json.loads(out.read_text())
    for side in ("a", "b"):
        assert doc[side]["stats"].pop("trace_ms") >= 0
        assert doc[side]["model"].pop("qualname").endswith("net_a.Net")
    assert doc == {
        "format": "torchscope.diff",
        "version": 1,
        "a": {
            "source": f"{a}:Net (eval mode)",
            "model": {"name": "Net", "params": 676, "device": "cpu", "dtype": "float32"},
            "stats": {"ops": 4, "modules": 4},
            "error": None,
            "nan_origin": None,
        },
        "b": {
            "source": f"{a}:Net (training mode)",
            "model": {"name": "Net", "params": 676, "device": "cpu", "dtype": "float32"},
            "stats": {"ops": 4, "modules": 4},
            "error": None,
            "nan_origin": None,
        },
        "added": [],
        "removed": [],
        "changed": [
            {
                "kind": "op",
                "name": "dropout",
                "path": "drop",
                "call": 0,
                "details": ["training: False → True"],
            }
        ],
        "same": 9,
    }


def test_json_to_standard_output_lists_added_and_removed(tmp_path, capsys) -> None:
    a = write_model(tmp_path, "net_a.py")
    b = tmp_path / "net_b.py"
    b.write_text(a.read_text().replace("self.drop(", "(").replace("fc2", "head"))
    rc, out, _ = run(["diff", f"{a}:Net", f"{b}:Net", "--format", "json"], capsys)
    assert rc == 0
    doc = json.loads(out)
    assert [(c["kind"], c["name"], c["path"]) for c in doc["removed"]] == [
        ("module", "Dropout", "drop"),
        ("op", "dropout", "drop"),
        ("module", "Linear", "fc2"),
        ("op", "linear", "fc2"),
    ]
    assert [(c["kind"], c["name"], c["path"]) for c in doc["added"]] == [
        ("module", "Linear", "head"),
        ("op", "linear", "head"),
    ]
    assert doc["removed"][0]["details"] == [
        "torch.nn.modules.dropout.Dropout",
        "p=0.1, inplace=False",
        "params 0",
        "inputs [1, 32]",
        "outputs [1, 32]",
    ]


def test_two_inputs_of_one_target(models, capsys) -> None:
    a, _ = models
    rc, out, _ = run(
        [
            "diff",
            f"{a}:Net",
            f"{a}:Net",
            "--input",
            "torch.randn(2, 16)",
            "--input-b",
            "torch.randn(5, 16)",
            "--check",
            "--no-values",  # the shapes; every value differs with another input
        ],
        capsys,
    )
    assert rc == 1
    assert "~ input x: output: [2, 16] → [5, 16]" in out.splitlines()
    assert f"+++ b: {a}:Net --input torch.randn(5, 16)" in out


def test_graph_files_and_targets_mix(models, tmp_path, capsys) -> None:
    a, b = models
    ga, gb = tmp_path / "a.msgpack", tmp_path / "b.json"
    # without values: a trace has no fixed seed, so a re-trace's random weights differ
    assert run(["trace", f"{a}:Net", "--no-values", "-o", str(ga)], capsys)[0] == 0
    assert run(["trace", f"{b}:Net", "--no-values", "-o", str(gb)], capsys)[0] == 0
    rc, out, _ = run(["diff", str(ga), str(gb), "--check"], capsys)
    assert rc == 1 and out.splitlines()[0].startswith(f"--- a: {ga}  (Net,")
    assert run(["diff", str(ga), f"{a}:Net", "--check"], capsys)[0] == 0


def test_graph_files_need_no_torch(models, tmp_path, capsys) -> None:
    a, b = models
    ga, gb = tmp_path / "a.json", tmp_path / "b.msgpack"
    run(["trace", f"{a}:Net", "-o", str(ga)], capsys)
    run(["trace", f"{b}:Net", "-o", str(gb)], capsys)
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any `import torch` now fails
        "from torchscope.cli import main\n"
        f"rc = main(['diff', {str(ga)!r}, {str(gb)!r}, '--check'])\n"
        f"main(['summary', {str(gb)!r}])\n"
        "assert 'torch' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert (
        "out_features: 32 → 64" in proc.stdout and "fc1: Linear  [1, 16] → [1, 64]" in proc.stdout
    )


def test_a_target_without_torch_is_one_line(models, tmp_path, capsys) -> None:
    # (QA: a diff with a FILE.py:NAME side in an interpreter without torch printed a
    # ModuleNotFoundError stack, where trace says the one documented line)
    a, b = models
    ga = tmp_path / "a.json"
    run(["trace", f"{a}:Net", "-o", str(ga)], capsys)
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from torchscope.cli import run\n"
        f"run_args = ['diff', {str(ga)!r}, {f'{b}:Net'!r}]\n"
        "sys.argv = ['torchscope', *run_args]\n"
        "run()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("torchscope: torch is not installed in this Python")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"not msgpack at all", "is not a torchscope graph: not a msgpack document"),
        (b"\x81\xa6format\xa3xyz", "is not a torchscope graph: format is 'xyz'"),
        # msgpack's own words were empty (a reserved byte) or its internals' ("57570 exceeds
        # max_array_len(64)", "unpack(b) received extra data.")
        (
            b"\xc1\xc1",
            "is not a torchscope graph: not a msgpack document (its bytes are not msgpack",
        ),
        (
            b"\xdc\xe0\xe0",
            "is not a torchscope graph: not a msgpack document (its bytes are not msgpack",
        ),
        (
            b"\x01\x02",
            "is not a torchscope graph: not a msgpack document (its bytes are not msgpack",
        ),
    ],
)
def test_bad_graph_file_is_one_line(tmp_path, capsys, content, message) -> None:
    bad = tmp_path / "bad.msgpack"
    bad.write_bytes(content)
    rc, out, err = run(["diff", str(bad), str(bad), "--check"], capsys)
    assert rc == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_and_broken_inputs_are_one_line(tmp_path, capsys) -> None:
    broken_json = tmp_path / "g.json"
    broken_json.write_text("{")
    bad_import = tmp_path / "bad_import.py"
    bad_import.write_text("import torch\nimport not_a_real_module_xyz\n")
    cases = [
        ([str(tmp_path / "none.msgpack"), str(broken_json)], "no such file"),
        ([str(broken_json), str(broken_json)], "not JSON"),
        ([f"{bad_import}:M", str(broken_json)], "ModuleNotFoundError"),
        (["no_colon", str(broken_json)], "FILE.py:NAME"),
    ]
    for sides, message in cases:
        rc, _, err = run(["diff", *sides, "--check"], capsys)
        assert rc == 2 and message in err and err.count("\n") == 1, (sides, err)


def test_target_options_on_graph_files_are_refused(models, tmp_path, capsys) -> None:
    a, _ = models
    saved = tmp_path / "a.msgpack"
    run(["trace", f"{a}:Net", "-o", str(saved)], capsys)
    for extra in (["--input-b", "torch.randn(3, 16)"], ["--train-b"]):
        rc, _, err = run(["diff", f"{a}:Net", str(saved), *extra], capsys)
        assert rc == 2 and "apply to a target B" in err
    rc, _, err = run(["diff", str(saved), str(saved), "--input", "torch.randn(3, 16)"], capsys)
    assert rc == 2 and "A and B are graph files" in err
    # (QA: accepted and ignored, exit 0; summary of a saved graph refuses them)
    for extra in (
        ["--device", "meta"],
        ["--no-costs"],
        ["--run-top-level"],
        ["--time-budget", "5"],
    ):
        rc, _, err = run(["diff", str(saved), str(saved), *extra], capsys)
        assert rc == 2 and extra[0] in err and "A and B are graph files" in err, (extra, err)
    # (QA: A saved as traced, in whatever mode, was compared with B in training mode, and
    # `--check` said 0: --train-b's eval-mode A can't be a graph file)
    rc, _, err = run(["diff", str(saved), f"{a}:Net", "--train-b", "--check"], capsys)
    assert rc == 2 and "--train-b traces A in eval mode" in err
    rc, out, _ = run(["diff", str(saved), f"{a}:Net", "--input", "torch.randn(3, 16)"], capsys)
    assert rc == 0 and "~ input x: output: [1, 16] → [3, 16]" in out


def test_html_compare_page(models, tmp_path, capsys) -> None:
    a, b = models
    (tmp_path / "out").mkdir()
    page = tmp_path / "out" / "compare.html"
    rc, out, err = run(
        [
            "diff",
            f"{a}:Net",
            f"{b}:Net",
            "--no-values",
            "--format",
            "html",
            "-o",
            str(page),
            "--check",
        ],
        capsys,
    )
    assert rc == 1 and err == "" and out.startswith(f"{page}: 0 added, 0 removed, 7 changed")
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<title>Net: " in text
    blob = re.search(r'id="torchscope-graph">([^<]*)</script>', text)
    assert blob is not None
    wire = msgpack.unpackb(base64.b64decode(blob.group(1)))
    # the page carries the compare view: b's graph and, per node, what changed
    assert wire["format"] == "torchscope.graph" and wire["compare"]["format"] == "torchscope.diff"
    assert wire["compare"]["a"]["source"] == f"{a}:Net"
    assert wire["compare"]["status"].count("changed") == 7
    # without -o: one line, no page on standard output
    rc, out, err = run(["diff", f"{a}:Net", f"{b}:Net", "--format", "html"], capsys)
    assert rc == 2 and out == "" and "-o FILE.html" in err


def test_a_forward_that_raises_is_compared_up_to_the_error(models, capsys) -> None:
    a, _ = models
    rc, out, err = run(["diff", f"{a}:Net", f"{a}:Broken", "--check"], capsys)
    assert rc == 1
    assert err.startswith("torchscope: B: the forward raised RuntimeError: ")
    assert "the forward raised RuntimeError" in out.splitlines()[1]
    lines = out.splitlines()
    assert lines[2:5] == [
        "~ (root): Broken  (6 changes inside)",
        "      target: net_a.Net → net_a.Broken",
        "    - relu: torch.relu; inputs [1, 32]; outputs [1, 32]",
    ]  # (no `outputs: [1, 4] → -`: the output B never made is the error's change)
    assert "    + RuntimeError: torch.nn.functional.linear; message=mat1 and mat2 shapes " in out
    assert "- fc1: Linear" in out and lines[-1] == "1 added, 7 removed, 2 changed, 1 same"


def test_text_to_a_file(models, tmp_path, capsys) -> None:
    a, b = models
    out = tmp_path / "d.txt"
    rc, stdout, _ = run(["diff", f"{a}:Net", f"{b}:Net", "--no-values", "-o", str(out)], capsys)
    assert rc == 0 and stdout == f"{out}: 0 added, 0 removed, 7 changed, 3 same\n"
    assert out.read_text().splitlines()[-1] == "0 added, 0 removed, 7 changed, 3 same"


def test_summary_reads_a_saved_graph(models, tmp_path, capsys) -> None:
    a, _ = models
    for name in ("g.msgpack", "g.json"):
        saved = tmp_path / name
        run(["trace", f"{a}:Net", "-o", str(saved)], capsys)
        rc, out, _ = run(["summary", str(saved)], capsys)
        assert rc == 0 and "fc1: Linear  [1, 16] → [1, 32]" in out
    rc, _, err = run(["summary", str(tmp_path / "missing.msgpack")], capsys)
    assert rc == 2 and "no such file" in err


def test_module_entry_point(tmp_path) -> None:
    mlp = str(ROOT / "examples" / "mlp.py") + ":MLP"
    proc = subprocess.run(
        [sys.executable, "-m", "torchscope", "diff", mlp, mlp, "--train-b", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "~ dropout: training: False → True" in proc.stdout


def test_a_saved_trace_and_a_new_one_have_the_same_values(models, tmp_path, capsys) -> None:
    """`trace` and `diff` draw random weights and inputs from one seed: a graph saved
    yesterday diffs clean against today's trace of the same code, values included."""
    a, _ = models
    saved = tmp_path / "a.msgpack"
    assert run(["trace", f"{a}:Net", "-o", str(saved)], capsys)[0] == 0
    rc, out, _ = run(["diff", str(saved), f"{a}:Net", "--check"], capsys)
    assert rc == 0, out


def test_training_mode_against_eval_with_a_guessed_input_uses_one_input(tmp_path, capsys) -> None:
    """Batch norm in training mode refuses a batch of one: B's guess is a batch of two, and
    A (eval mode, which takes a batch of one) is traced again with it — not a diff in which
    every node differs by the input's size."""
    path = tmp_path / "noisy.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            class Noisy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(16, 16)
                    self.norm = nn.BatchNorm1d(16)
                    self.out = nn.Linear(16, 4)

                def forward(self, x):
                    return self.out(self.norm(self.fc(x)))
            """
        )
    )
    spec = f"{path}:Noisy"
    rc, out, err = run(["diff", spec, spec, "--train-b", "--no-values"], capsys)
    assert rc == 0, err
    assert "[1, 16] → [2, 16]" not in out
    assert "~ batch_norm: training: False → True" in out
    assert "~ fc:" not in out and "~ out:" not in out
    # with values: the other size is drawn from the same seed on both sides (B drew it after
    # its first guess had used up random numbers: every value before batch norm differed)
    rc, out, err = run(["diff", spec, spec, "--train-b"], capsys)
    assert rc == 0, err
    assert "~ input x" not in out and "~ fc:" not in out, out
    assert "~ batch_norm:" in out


def test_the_text_says_where_b_first_makes_nan(tmp_path, capsys) -> None:
    """An edit that makes NaN: the text listed `+ log` and `nan 0 → 32` further on, and
    never said which op made them (the HTML page's banner did)."""
    a = write_model(tmp_path, "base.py")
    b = tmp_path / "nan.py"
    b.write_text(
        a.read_text().replace(
            "return self.fc2(self.drop(torch.relu(self.fc1(x))))",
            "h = torch.log(self.fc1(x) - 100)\n        return self.fc2(h)",
        )
    )
    line = b.read_text().splitlines().index("        h = torch.log(self.fc1(x) - 100)") + 1
    rc, out, err = run(["diff", f"{a}:Net", f"{b}:Net", "--input", "torch.randn(2, 16)"], capsys)
    assert rc == 0, err
    assert f"! NaN/Inf origin in b: log (added) at {b.resolve()}:{line}" in out.splitlines(), out
    rc, out, err = run(
        ["diff", f"{a}:Net", f"{b}:Net", "--input", "torch.randn(2, 16)", "--format", "json"],
        capsys,
    )
    sides = json.loads(out)
    assert sides["a"]["nan_origin"] is None
    assert sides["b"]["nan_origin"] == {
        "kind": "op",
        "name": "log",
        "path": "",
        "call": 0,
        "site": {"file": str(b.resolve()), "line": line},
    }
    rc, out, err = run(["diff", f"{a}:Net", f"{a}:Net"], capsys)
    assert "NaN/Inf origin" not in out


def test_a_guess_the_other_side_cannot_take_is_not_forced_on_it(tmp_path, capsys) -> None:
    """B's first layer takes another size: each side keeps its own guess (A traced with B's
    would raise), and the diff shows the input's size change."""
    for name, width in (("first_a.py", 16), ("first_b.py", 32)):
        (tmp_path / name).write_text(
            "from torch import nn\n\n"
            f"def build():\n    return nn.Sequential(nn.Linear({width}, 8), nn.ReLU())\n"
        )
    rc, out, err = run(
        ["diff", f"{tmp_path / 'first_a.py'}:build", f"{tmp_path / 'first_b.py'}:build"], capsys
    )
    assert rc == 0 and "raised" not in err, err
    assert "[1, 16] → [1, 32]" in out, out


def test_a_side_that_cannot_be_traced_again_with_bs_guess_keeps_its_own(tmp_path, capsys) -> None:
    """B (training mode) guesses a batch of two; A traced again with it runs past the time
    budget: the diff exited 2 ("the trace ran past"), though A's own trace had worked."""
    (tmp_path / "slow_on_two.py").write_text(
        textwrap.dedent(
            """
            import time
            from torch import nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(16, 16)
                    self.norm = nn.BatchNorm1d(16)

                def forward(self, x):
                    if x.shape[0] > 1:
                        time.sleep(30)
                    return self.norm(self.fc(x))
            """
        )
    )
    quick = tmp_path / "quick.py"
    quick.write_text((tmp_path / "slow_on_two.py").read_text().replace("time.sleep(30)", "pass"))
    a, b = f"{tmp_path / 'slow_on_two.py'}:Net", f"{quick}:Net"
    rc, out, err = run(["diff", a, b, "--train-b", "--time-budget", "8"], capsys)
    assert rc == 0, err
    assert "[1, 16] → [2, 16]" in out  # each side with its own input
    assert "~ batch_norm: training: False → True" in out


def test_files_that_are_not_graphs_say_what_they_are(models, tmp_path, capsys) -> None:
    """A page, JSON under a msgpack name, a graph without its version, a folder as target:
    each said something beside the point ("must look like FILE.py:NAME", "not a msgpack
    document: unpack(b) received extra data", "graph version None is not supported",
    "cannot import examples")."""
    a, _ = models
    page = tmp_path / "g.html"
    assert run(["trace", f"{a}:Net", "-o", str(page)], capsys)[0] == 0
    rc, _, err = run(["summary", str(page)], capsys)
    assert rc == 2 and "g.html is a viewer page, not a graph file" in err, err
    with pytest.raises(torchscope.GraphFormatError, match="an HTML page, not a graph file"):
        torchscope.Graph.load(page)
    as_json = tmp_path / "g.json"
    run(["trace", f"{a}:Net", "-o", str(as_json)], capsys)
    misnamed = tmp_path / "g2.msgpack"
    misnamed.write_bytes(as_json.read_bytes())
    rc, _, err = run(["summary", str(misnamed)], capsys)
    assert rc == 2 and "it is JSON: name it .json" in err, err
    bare = tmp_path / "bare.json"
    bare.write_text('{"format": "torchscope.graph"}')
    rc, _, err = run(["summary", str(bare)], capsys)
    assert rc == 2 and "no version" in err, err
    rc, _, err = run(["summary", f"{tmp_path}/:Net"], capsys)
    assert rc == 2 and "is a folder: give FILE.py:NAME" in err, err


def test_the_output_name_says_the_format_and_never_overwrites_a_model(models, tmp_path, capsys):
    """`diff -o` wrote text wherever it was told: `-o model.py` overwrote the model, `-o d.html`
    got text, `--format html -o page.json` a page named .json, and a missing folder was made.
    As for `trace`: the suffix says the format, --format must agree, exit 2 before tracing."""
    a, b = models
    victim = tmp_path / "victim.py"
    victim.write_text("keep me\n")
    rc, _, err = run(["diff", f"{a}:Net", f"{b}:Net", "-o", str(victim)], capsys)
    assert rc == 2 and "writes .txt, .json or .html" in err, err
    assert victim.read_text() == "keep me\n"
    page = tmp_path / "d.html"
    rc, out, _ = run(["diff", f"{a}:Net", f"{b}:Net", "--no-values", "-o", str(page)], capsys)
    assert rc == 0 and page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>"), out
    as_json = tmp_path / "d.json"
    rc, _, _ = run(["diff", f"{a}:Net", f"{b}:Net", "--no-values", "-o", str(as_json)], capsys)
    assert rc == 0 and json.loads(as_json.read_text())["format"] == "torchscope.diff"
    rc, _, err = run(
        ["diff", f"{a}:Net", f"{b}:Net", "--format", "html", "-o", str(as_json)], capsys
    )
    assert rc == 2 and "names a json file but --format html" in err, err
    rc, _, err = run(["diff", f"{a}:Net", f"{b}:Net", "-o", str(tmp_path / "no" / "d.txt")], capsys)
    assert rc == 2 and "no folder" in err and not (tmp_path / "no").exists(), err


@pytest.mark.parametrize("tolerance", ["-1", "nan", "inf"])
def test_a_stats_tolerance_that_is_no_fraction_is_refused(models, capsys, tolerance):
    """-1 made identical passes differ ("zeros 0.0% → 0.0%"), nan and inf switched the
    comparison of values off without a word."""
    a, _ = models
    rc, _, err = run(["diff", f"{a}:Net", f"{a}:Net", "--stats-tolerance", tolerance], capsys)
    assert rc == 2 and "--stats-tolerance" in err, err
    with pytest.raises(ValueError, match="stats_tolerance"):
        diff_graphs(
            Graph.load(tmp_graph(a, capsys)),
            Graph.load(tmp_graph(a, capsys)),
            stats_tolerance=float(tolerance),
        )


def tmp_graph(spec: Path, capsys) -> Path:
    out = spec.with_name(spec.stem + ".saved.msgpack")
    if not out.exists():
        assert run(["trace", f"{spec}:Net", "-o", str(out)], capsys)[0] == 0
    return out


def test_a_comparison_views_file_is_not_taken_for_a_forward_pass(models, tmp_path, capsys):
    """The compare view's graph (both sides merged, ghost edges and all) was read as one
    pass: `relu: inputs: [1, 32], [1, 32]`. And a page got the FILE.py:NAME message."""
    a, b = models
    view = compare_view(
        diff_graphs(Graph.load(tmp_graph(a, capsys)), Graph.load(tmp_graph(b, capsys)))
    )
    path = tmp_path / "view.msgpack"
    path.write_bytes(view.to_msgpack())
    for argv in (["diff", str(path), f"{a}:Net"], ["summary", str(path)]):
        rc, _, err = run(argv, capsys)
        assert rc == 2 and "a comparison (both passes merged), not one forward pass" in err, err
    page = tmp_path / "p.html"
    run(["trace", f"{a}:Net", "-o", str(page)], capsys)
    rc, _, err = run(["diff", str(page), f"{a}:Net"], capsys)
    assert rc == 2 and "p.html is a viewer page, not a graph file" in err, err


def test_no_values_leaves_saved_values_out_of_the_comparison(models, tmp_path, capsys) -> None:
    """`--no-values` between two graph files was accepted and did nothing: the values the
    files hold were compared all the same. It leaves them out, as it does for targets."""
    a, b = models
    ga, gb = tmp_path / "a.msgpack", tmp_path / "b.msgpack"
    run(["trace", f"{a}:Net", "-o", str(ga)], capsys)
    run(["trace", f"{a}:Net", "--input", "torch.randn(1, 16) * 3", "-o", str(gb)], capsys)
    rc, out, _ = run(["diff", str(ga), str(gb), "--check"], capsys)
    assert rc == 1 and "values: " in out, out  # another input: other values
    rc, out, _ = run(["diff", str(ga), str(gb), "--check", "--no-values"], capsys)
    assert rc == 0, out


def test_diff_of_targets_under_torchrun_says_how_to_compare_ranks(
    models, tmp_path, capsys, monkeypatch
) -> None:
    """Under torchrun (RANK, WORLD_SIZE set), `diff` traced each side in every rank: a
    builder that joins the process group failed on the second side ("initialize the default
    process group twice"), and every rank wrote the same -o file. It now says how to
    compare a distributed program: trace it per rank, then diff the ranks' files."""
    a, b = models
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    rc, out, err = run(["diff", f"{a}:Net", f"{b}:Net", "-o", str(tmp_path / "d.txt")], capsys)
    assert rc == 2 and out == ""
    assert "under torchrun" in err and "torchscope trace" in err and ".rank0." in err, err
    assert not (tmp_path / "d.txt").exists()
    # graph files are compared in any process, the same in every rank
    for name, path in (("a", a), ("b", b)):
        monkeypatch.delenv("RANK")
        assert (
            run(["trace", f"{path}:Net", "-o", str(tmp_path / f"{name}.msgpack")], capsys)[0] == 0
        )
        monkeypatch.setenv("RANK", "1")
    rc, out, err = run(["diff", str(tmp_path / "a.msgpack"), str(tmp_path / "b.msgpack")], capsys)
    assert rc == 0, err


SEEDED = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        EXTRA
        self.fc1 = nn.Linear(8, 16)
        self.blocks = nn.ModuleList([nn.Linear(16, 16) for _ in range(3)])
        self.head = nn.Linear(16, HEAD)
        self.example_input_array = torch.randn(4, 8)

    def forward(self, x):
        x = self.fc1(x)
        for b in self.blocks:
            x = torch.relu(b(x))
        return self.head(x)
"""


def test_an_edit_changes_the_random_weights_only_of_the_lines_it_changed(tmp_path, capsys):
    """QA (Compare with HEAD): a layer added first in __init__, used nowhere, shifted the
    random stream: every weight built after it, and the example input drawn last, differed,
    and the comparison marked every node changed. Random numbers a build draws are seeded by
    the line that draws them: an unchanged line draws the same ones."""
    base = SEEDED.replace("EXTRA", "pass").replace("HEAD", "4")
    (tmp_path / "a.py").write_text(base)
    (tmp_path / "b.py").write_text(base.replace("pass", "self.unused = nn.Linear(4, 4)"))
    a, b = f"{tmp_path / 'a.py'}:Net", f"{tmp_path / 'b.py'}:Net"
    rc, out, err = run(["diff", a, b], capsys)
    assert rc == 0, err
    assert "values:" not in out, out  # (the root's parameter count differs, as it should)
    # the head made wider: only it and what follows from it differ, not the input or fc1
    (tmp_path / "c.py").write_text(base.replace("nn.Linear(16, 4)", "nn.Linear(16, 6)"))
    rc, out, err = run(["diff", a, f"{tmp_path / 'c.py'}:Net"], capsys)
    assert rc == 0, err
    changed = [line.split(":")[0] for line in out.splitlines() if line.startswith("~ ")]
    assert changed == ["~ (root)", "~ head", "~ output output"], out


def test_a_seed_the_file_sets_still_decides_its_random_weights(tmp_path, capsys):
    """With each random call seeded by its line, a factory's own `torch.manual_seed(n)`
    still counts: another seed, other weights; the same seed, the same ones."""
    text = (
        "import torch\nfrom torch import nn\n\n"
        "def build():\n    torch.manual_seed(SEED)\n    return nn.Linear(8, 4)\n"
    )
    for name, seed in (("s1.py", 1), ("s1b.py", 1), ("s2.py", 2)):
        (tmp_path / name).write_text(text.replace("SEED", str(seed)))
    spec = lambda n: f"{tmp_path / n}:build"  # noqa: E731
    rc, out, err = run(["diff", spec("s1.py"), spec("s1b.py"), "--check"], capsys)
    assert rc == 0, out + err
    rc, out, err = run(["diff", spec("s1.py"), spec("s2.py")], capsys)
    assert "values:" in out, out


def test_an_output_named_as_a_graph_it_compares_is_refused(models, tmp_path, capsys) -> None:
    """`diff a.json b.json -o a.json` replaced the saved graph A with the comparison (a
    baseline kept for `diff --check`, lost): refused before anything is read or written."""
    a, b = models
    saved = tmp_path / "a.json"
    assert run(["trace", f"{a}:Net", "--no-values", "-o", str(saved)], capsys)[0] == 0
    before = saved.read_bytes()
    for argv in (
        ["diff", str(saved), f"{b}:Net", "-o", str(saved)],
        ["diff", f"{b}:Net", str(tmp_path / "." / "a.json"), "-o", str(saved)],
    ):
        rc, _, err = run(argv, capsys)
        assert rc == 2 and f"-o {saved} is the graph file" in err, err
        assert saved.read_bytes() == before


def test_a_failed_write_leaves_the_page_that_was_there(models, tmp_path) -> None:
    """The comparison was written in place: a write that failed part way (a full disk, a
    quota) left half a page over the good one. Written beside it, then renamed, as trace does."""
    import resource

    a, b = models
    page = tmp_path / "cmp.html"
    argv = [sys.executable, "-m", "torchscope", "diff", f"{a}:Net", f"{b}:Net", "-o", str(page)]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    good = page.read_bytes()

    def small_files() -> None:  # (Python ignores SIGXFSZ: the write fails with EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(good) // 3, len(good) // 3))

    failed = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, preexec_fn=small_files
    )
    assert failed.returncode == 2 and "cannot write" in failed.stderr, failed.stderr
    assert page.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("cmp")] == ["cmp.html"]
    assert not [
        p.name for p in tmp_path.iterdir() if p.name.endswith(".part")
    ]  # (.X.cmp.html.part)


def test_an_output_through_a_link_writes_the_file_it_names(models, tmp_path, capsys) -> None:
    """Written beside the file and renamed (review): a link given as -o was replaced by a
    new file and what it named stayed as it was, and the file's mode was reset."""
    a, b = models
    served = tmp_path / "pub"
    served.mkdir()
    real = served / "r.txt"
    real.write_text("old\n")
    real.chmod(0o664)
    link = tmp_path / "r.txt"
    link.symlink_to(real)
    rc, _, err = run(["diff", f"{a}:Net", f"{b}:Net", "--no-values", "-o", str(link)], capsys)
    assert rc == 0, err
    assert link.is_symlink() and real.read_text().endswith(
        "0 added, 0 removed, 7 changed, 3 same\n"
    )
    assert real.stat().st_mode & 0o777 == 0o664
    assert sorted(p.name for p in served.iterdir()) == ["r.txt"]  # (no .part left)
    # a hard link to a graph being compared is that graph too
    saved = tmp_path / "a.json"
    assert run(["trace", f"{a}:Net", "--no-values", "-o", str(saved)], capsys)[0] == 0
    os.link(saved, tmp_path / "same.json")
    rc, _, err = run(["diff", str(saved), f"{b}:Net", "-o", str(tmp_path / "same.json")], capsys)
    assert rc == 2 and "is the graph file A compares" in err, err
