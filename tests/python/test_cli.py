"""The command line: targets, inputs, formats and one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import msgpack
import pytest

from torchscope.cli import main
from torchscope.graph import Graph

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))
    return path


MODELS = """
import torch
from torch import nn

class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)
    def forward(self, x):
        return self.fc(x).relu()

class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
    def forward(self, images):
        return self.conv(images)

class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 8)
    def forward(self, ids):
        return self.emb(ids)

class NoLayers(nn.Module):
    def forward(self, x):
        return x * 2

class NeedsArgs(nn.Module):
    def __init__(self, width):
        super().__init__()

class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
    def forward(self, x, *, scale):
        return self.a(x) * scale

def factory():
    return TwoInputs(), {"x": torch.randn(2, 4), "scale": torch.tensor(3.0)}

instance = Tiny()
not_a_model = 42
"""


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def models(tmp_path: Path) -> Path:
    return write(tmp_path, "cli_models.py", MODELS)


@pytest.mark.parametrize(
    "name, first_input_shape",
    [("Tiny", [1, 6]), ("Conv", [1, 3, 64, 64]), ("Tokens", [1, 16]), ("instance", [1, 6])],
)
def test_infers_input_from_first_layer(
    models: Path, tmp_path: Path, capsys, name, first_input_shape
) -> None:
    out = tmp_path / "g.msgpack"
    rc, stdout, _ = run(["trace", f"{models}:{name}", "-o", str(out)], capsys)
    assert rc == 0 and str(out) in stdout
    g = Graph.from_wire(msgpack.unpackb(out.read_bytes()))
    x = [n for n in g.nodes if n.kind == "input"][0]
    assert [e.shape for e in g.edges if e.src == x.id][0] == first_input_shape


def test_factory_with_keyword_inputs_and_json(models: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "g.json"
    rc, _, _ = run(["trace", f"{models}:factory", "-o", str(out)], capsys)
    assert rc == 0
    wire = json.loads(out.read_text())
    assert wire["format"] == "torchscope.graph"
    assert sorted(n["name"] for n in wire["nodes"] if n["kind"] == "input") == ["scale", "x"]


def test_input_expression_uses_torch_and_the_file(models: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "g.msgpack"
    rc, _, _ = run(
        ["trace", f"{models}:Tiny", "--input", "(torch.randn(5, 6),)", "-o", str(out)], capsys
    )
    assert rc == 0
    g = Graph.load(out)
    assert [e.shape for e in g.edges if g.nodes[e.src].kind == "input"] == [[5, 6]]


def test_meta_device(models: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "g.msgpack"
    rc, _, _ = run(["trace", f"{models}:Tiny", "--device", "meta", "-o", str(out)], capsys)
    assert rc == 0 and Graph.load(out).model.device == "meta"


def test_summary_prints_the_module_tree(models: Path, capsys) -> None:
    rc, out, _ = run(["summary", f"{models}:Tiny"], capsys)
    assert rc == 0
    assert "fc: Linear  [1, 6] → [1, 3]" in out and "params 21" in out


def test_summary_counts_a_module_called_again_and_again_once(tmp_path: Path, capsys) -> None:
    """One Linear called three times folds into "×3": its 72 parameters were counted three
    times (216) and its path twice ("shared … shared")."""
    src = write(
        tmp_path,
        "again.py",
        """
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.shared = nn.Linear(8, 8)
            def forward(self, x):
                return self.shared(self.shared(self.shared(x)))
        """,
    )
    rc, out, _ = run(["summary", f"{src}:Net", "--input", "torch.randn(1, 8)"], capsys)
    assert rc == 0
    folded = next(line for line in out.splitlines() if "Linear ×3" in line)
    assert "shared: Linear ×3" in folded and "params 72 " in folded, folded
    assert out.splitlines()[-1] == "input torch.randn(1, 8)", out


def test_summary_has_cost_columns_and_the_nan_origin(tmp_path: Path, capsys) -> None:
    src = write(
        tmp_path,
        "nan_model.py",
        """
        import torch
        from torch import nn

        class Shift(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                return torch.log(self.fc(x) - 50.0)
        """,
    )
    rc, out, _ = run(["summary", f"{src}:Shift", "--input", "torch.randn(2, 4)"], capsys)
    assert rc == 0
    fc = next(line for line in out.splitlines() if "fc: Linear" in line)
    # one Linear(4, 4) on 2 rows: 2 * 2 * 4 * 4 FLOPs; its output: 2 * 4 float32 = 32 bytes
    assert "flops 64 FLOP" in fc and "out 32 B" in fc and "time " in fc
    origin = next(line for line in out.splitlines() if line.startswith("NaN/Inf origin"))
    assert "log" in origin and f"{src}:10" in origin  # the `return torch.log(...)` line
    rc, out, _ = run(
        ["summary", f"{src}:Shift", "--input", "torch.randn(2, 4)", "--no-values", "--no-costs"],
        capsys,
    )
    assert rc == 0 and "flops" not in out and "NaN/Inf origin" not in out


def test_the_nan_origin_inside_a_torch_layer_names_the_line_that_called_it(
    tmp_path: Path, capsys
) -> None:
    # a weight holding NaN: the origin is the layer's linear, whose own line is torch's
    # linear.py; the line people look for is theirs, where the layer was called
    src = write(
        tmp_path,
        "nan_weight.py",
        """
        import torch
        from torch import nn

        class Two(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(4, 4)
                self.fc2 = nn.Linear(4, 4)
                with torch.no_grad():
                    self.fc2.weight[1, 1] = float("nan")
            def forward(self, x):
                return self.fc2(torch.relu(self.fc1(x)))
        """,
    )
    rc, out, _ = run(["summary", f"{src}:Two", "--input", "torch.randn(2, 4)"], capsys)
    assert rc == 0
    origin = next(line for line in out.splitlines() if line.startswith("NaN/Inf origin"))
    assert f"in fc2 (Linear, called at {src}:13)" in origin, origin


def test_no_values_no_costs_leave_them_out_of_the_file(
    models: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "g.json"
    rc, _, _ = run(["trace", f"{models}:Tiny", "-o", str(out), "--no-values"], capsys)
    wire = json.loads(out.read_text())
    assert rc == 0 and wire["values"] == {"stats": False, "costs": True}
    assert not any("stats" in e for e in wire["edges"]) and "nan_origin" not in wire
    rc, _, _ = run(["trace", f"{models}:Tiny", "-o", str(out), "--no-costs"], capsys)
    wire = json.loads(out.read_text())
    assert rc == 0 and wire["values"] == {"stats": True, "costs": False}
    assert all("stats" in e for e in wire["edges"]) and wire["nan_origin"] is None
    assert not any("cost" in n for n in wire["nodes"])


@pytest.mark.parametrize(
    "target, message",
    [
        ("missing.py:X", "no such file"),
        ("{models}:Nope", "has no name 'Nope'"),
        ("{models}:__init__", "has no name '__init__'"),  # (a module object's, not the file's)
        ("{models}:not_a_model", "not an nn.Module"),
        ("{models}:NeedsArgs", "needs constructor arguments"),
        ("{models}:NoLayers", "--input"),
        ("no_colon", "FILE.py:NAME"),
    ],
)
def test_bad_targets_get_one_line(models: Path, tmp_path: Path, capsys, target, message) -> None:
    rc, _, err = run(
        ["trace", target.format(models=models), "-o", str(tmp_path / "x.msgpack")], capsys
    )
    assert rc == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


_WIDE = """import torch
from torch import nn

class Wide(nn.Module):
    def __init__(self, dim, hidden=32):
        super().__init__()
        self.a = nn.Linear(dim, hidden)
    def forward(self, x):
        return self.a(x)

def main():
    wide = Wide(12)
    print(wide(torch.randn(2, 12)))
"""

# train.py builds its model in main() after parsing its options (the training never runs)
_TRAIN = """import argparse
import torch
from torch import nn

class Wide(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        self.a = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])
    def forward(self, x):
        return self.a(x)

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--dim', type=int, default=20)
    parser.add_argument('--depth', type=int, default=3)
    parser.add_argument('--data', required=True)
    args = parser.parse_args()
    model = Wide(args.dim, depth=args.depth)
    raise SystemExit('training ran')

if __name__ == '__main__':
    main()
"""


@pytest.mark.parametrize(
    "source, said, params",
    [
        (
            _WIDE,
            "input torch.randn(2, 12), as the file calls it; model built as Wide(12), as line 12 builds it",
            416,
        ),
        (
            _TRAIN,  # as `python train.py` with no options builds it
            "model built as Wide(20, depth=3), as line 18 builds it with its argparse defaults",
            3 * (20 * 20 + 20),
        ),
    ],
)
def test_a_class_that_needs_arguments_is_built_as_the_file_builds_it(
    tmp_path: Path, capsys, source, said, params
):
    src = write(tmp_path, "wide.py", source)
    out = tmp_path / "wide.msgpack"
    rc, printed, err = run(["trace", f"{src}:Wide", "-o", str(out)], capsys)
    assert rc == 0, err
    assert said in printed
    assert Graph.load(out).model.params == params


def test_bad_input_expression(models: Path, tmp_path: Path, capsys) -> None:
    rc, _, err = run(
        ["trace", f"{models}:Tiny", "--input", "torch.randn(", "-o", str(tmp_path / "x.msgpack")],
        capsys,
    )
    assert rc == 2 and "--input 'torch.randn(' failed: SyntaxError" in err


def test_import_error_in_user_file(tmp_path: Path, capsys) -> None:
    bad = write(tmp_path, "bad_import.py", "import torch\nimport not_a_real_module_xyz\n")
    rc, _, err = run(["trace", f"{bad}:M", "-o", str(tmp_path / "x.msgpack")], capsys)
    assert (
        rc == 2
        and "ModuleNotFoundError" in err
        and "bad_import.py:2" in err
        and err.count("\n") == 1
    )


def test_syntax_error_in_user_file(tmp_path: Path, capsys) -> None:
    bad = write(tmp_path, "bad_syntax.py", "import torch\ndef f(:\n")
    rc, _, err = run(["trace", f"{bad}:M", "-o", str(tmp_path / "x.msgpack")], capsys)
    assert rc == 2 and "syntax error" in err and ":2" in err


@pytest.mark.parametrize(
    "content, said",
    [
        # (Python itself: "Non-UTF-8 code starting with '\\xe9' … on line 4")
        (
            b"import torch\nclass Net(torch.nn.Module):\n    pass\n# caf\xe9\n",
            "is not UTF-8 text (byte 0xe9 on line 4): save it as UTF-8",
        ),
        (b"\xff\xfe garbage \x00\x00", "is not Python source text"),
        (
            b"# -*- coding: ascii -*-\nimport torch\n# caf\xc3\xa9\n",
            "is not ascii text, as its coding line says (byte 0xc3 on line 3)",
        ),
    ],
)
@pytest.mark.parametrize("top_level", [False, True])
def test_a_file_that_is_no_text_says_so_and_where(
    tmp_path: Path, capsys, content, said, top_level
) -> None:
    """It said `syntax error in None:None` or a UnicodeDecodeError at an importlib frame (and,
    with --run-top-level, `syntax error in …:0`)."""
    path = tmp_path / "model.py"
    path.write_bytes(content)
    more = ["--run-top-level"] if top_level else []
    rc, _, err = run(["trace", f"{path}:Net", "-o", str(tmp_path / "x.json"), *more], capsys)
    assert rc == 2 and err.startswith(f"torchscope: {path} {said}"), err
    assert "None:None" not in err and "importlib" not in err


def test_a_file_that_cannot_be_read_says_why(tmp_path: Path) -> None:
    """It said `PermissionError … (…/torchscope/usercode.py:82)`: a place in torchscope."""
    import tempfile

    folder = Path(tempfile.mkdtemp())  # (pytest's own folders are closed to other users)
    try:
        folder.chmod(0o777)
        path = write(folder, "secret.py", MODELS)
        path.chmod(0o600 if os.geteuid() == 0 else 0)

        for more in ([], ["--run-top-level"]):
            argv = [sys.executable, "-m", "torchscope", "trace", f"{path}:Tiny", "-o", "x.json"]
            if os.geteuid() == 0:  # (root reads any file: as another user)
                argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
            done = subprocess.run(
                [*argv, *more],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=folder,
                env={**os.environ, "PYTHONPATH": str(ROOT / "python_helper")},
            )
            assert done.returncode == 2, done.stderr
            assert done.stderr.startswith(f"torchscope: cannot read {path}: Permission denied")
            assert "usercode.py" not in done.stderr and "importlib" not in done.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_value_read_on_meta_is_not_blamed_on_the_guessed_input(tmp_path: Path, capsys) -> None:
    """`.item()` on the meta device fails whatever the input: the hint said the guessed input
    may be wrong (it traces on cpu); it says to trace on cpu."""
    path = write(
        tmp_path,
        "reads.py",
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                y = self.fc(x)
                if y.sum().item() > 0:
                    return y * 2
                return y

        class Masked(Net):
            def forward(self, x):
                y = self.fc(x)
                return y[y > 0].sum()  # (a shape that depends on the values)
        """,
    )
    out = tmp_path / "g.json"
    for name, said in (
        ("Net", "cannot be called on meta tensors"),
        ("Masked", "data-independent"),
    ):
        rc, _, err = run(["trace", f"{path}:{name}", "--device", "meta", "-o", str(out)], capsys)
        assert rc == 1 and said in err, err
        assert "may be what is wrong" not in err, err
        assert "reads the tensors' values, which the meta device has none of: trace it on" in err
        assert run(["trace", f"{path}:{name}", "-o", str(out)], capsys)[0] == 0


def test_model_that_raises_writes_partial_graph(tmp_path: Path, capsys) -> None:
    broken = ROOT / "examples" / "broken.py"
    out = tmp_path / "broken.msgpack"
    rc, _, err = run(["trace", f"{broken}:model", "-o", str(out)], capsys)
    assert rc == 1 and "RuntimeError" in err and "failing call" in err
    g = Graph.load(out)
    assert g.error is not None and g.nodes[g.error.node].kind == "error"
    assert g.module_call("encoder.0").kind == "module"


def test_the_error_line_names_the_module_that_raised(tmp_path: Path, capsys) -> None:
    """Inside a library's model (transformers') the failing call's line is torch's own
    (`conv.py:380`): the line now names the module (`encoder.conv1 (Conv1d)`) and where the
    library called it."""
    broken = ROOT / "examples" / "broken.py"
    out = tmp_path / "broken.msgpack"
    rc, _, err = run(["trace", f"{broken}:model", "-o", str(out)], capsys)
    assert rc == 1
    assert " in head (Linear) at " in err and f"{broken}:15" in err, err
    assert "called at" not in err, "the user's own line is the call's: said once"
    # a module a library called: the error's site is in torch, the call's in the library
    from dataclasses import replace

    from torchscope.cli_trace import error_line
    from torchscope.graph import Site

    g = Graph.load(out)
    error = g.nodes[g.error.node]
    head = g.nodes[error.parent]
    inside = Site("/lib/torch/nn/modules/linear.py", 134, "forward")
    g.nodes[error.id] = replace(error, site=inside, inside=None)
    g.nodes[head.id] = replace(head, site=Site("/lib/transformers/modeling_x.py", 111, "forward"))
    line = error_line(g)
    assert line.endswith(
        "in head (Linear, called at /lib/transformers/modeling_x.py:111) "
        "at /lib/torch/nn/modules/linear.py:134"
    ), line


def test_file_imported_as_package_module_not_main(tmp_path: Path, capsys) -> None:
    marker = tmp_path / "main_ran"
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/layers.py", "from torch import nn\nclass Twice(nn.Linear):\n    pass\n")
    model = write(
        tmp_path,
        "pkg/model.py",
        f"""
        import sys
        from torch import nn
        from .layers import Twice

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.l = Twice(3, 3)
                self.argv = list(sys.argv)
            def forward(self, x):
                return self.l(x)

        if __name__ == "__main__":
            open({str(marker)!r}, "w").write("ran")
        """,
    )
    out = tmp_path / "g.json"
    rc, _, err = run(["trace", f"{model}:Net", "-o", str(out)], capsys)
    assert rc == 0, err
    assert not marker.exists()
    wire = json.loads(out.read_text())
    assert wire["model"]["qualname"] == "pkg.model.Net"
    assert any(n["target"] == "pkg.layers.Twice" for n in wire["nodes"])


def test_no_torch_in_interpreter_gives_one_line(tmp_path: Path) -> None:
    # a bare interpreter that sees the package but not torch (nor msgpack)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(ROOT / "python_helper")
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, {str(ROOT / 'python_helper')!r}); "
            "from torchscope.cli import main; sys.exit(main(['trace', 'x.py:M', '-o', 'x.msgpack']))",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "torch is not installed" in proc.stderr and "Traceback" not in proc.stderr


def test_module_entry_point_runs(tmp_path: Path) -> None:
    out = tmp_path / "mlp.msgpack"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchscope",
            "trace",
            str(ROOT / "examples/mlp.py") + ":MLP",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert Graph.load(out).model.name == "MLP"


def test_summary_marks_a_folded_run_by_what_wraps_each_block() -> None:
    """Four blocks, two of them in an activation-checkpoint wrapper, fold into one ×4 line:
    it said `[CheckpointWrapper]` as if all four were wrapped (the first's mark)."""
    import torch
    from torch import nn
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    import torchscope

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            return self.fc(x).relu()

    class Net(nn.Module):
        def __init__(self, wrapped: int) -> None:
            super().__init__()
            blocks = [checkpoint_wrapper(Block()) if i < wrapped else Block() for i in range(4)]
            self.blocks = nn.ModuleList(blocks)

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return x

    def folded_line(wrapped: int) -> str:
        text = torchscope.trace(Net(wrapped), torch.randn(2, 8)).summary()
        return next(line for line in text.splitlines() if "Block ×4" in line)

    assert "Block ×4 [CheckpointWrapper: 2 of 4]  [2, 8]" in folded_line(2)
    assert "Block ×4 [CheckpointWrapper]  [2, 8]" in folded_line(4)
    assert "Block ×4  [2, 8]" in folded_line(0)


def test_amounts_at_a_unit_boundary_move_to_the_next_unit() -> None:
    """Rounding put "1000 KB", "1000 µs" and "100.0 ms" in the summary."""
    from torchscope.summary import format_bytes, human_bytes, human_flops, human_time

    assert human_bytes(999_999) == "1.0 MB"
    assert human_bytes(999) == "999 B" and human_bytes(999_6) == "10.0 KB"
    assert human_bytes(99_960) == "100 KB" and human_bytes(1_234_567) == "1.2 MB"
    assert human_flops(999_950_000) == "1.0 GFLOP"
    assert human_time(999_600) == "1.0 ms" and human_time(999_400) == "999 µs"
    assert human_time(99_960_000) == "100 ms" and human_time(4_200_000) == "4.2 ms"
    assert human_time(999_700_000) == "1.0 s" and human_time(1_300_000_000) == "1.3 s"
    assert format_bytes(999_960) == "1.0 MB" and format_bytes(1500) == "1.5 KB"
