"""`torchscope diff` keeps its two sides apart: each side's code is its own (two copies of
a project, a package), a class one side imports from the other is one class, and a bad
option of side B is named as B's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchscope.cli import main

NET = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = Layer()

    def forward(self, x):
        return self.layer(x)
"""

MODEL = (
    """
import torch
from torch import nn
from {helper} import Layer
"""
    + NET
)

LAYER = """
from torch import nn

class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return {body}
"""


def project(folder: Path, body: str, package: bool = False) -> Path:
    """A model file importing its layer from a file beside it (in a package: relatively)."""
    folder.mkdir(parents=True)
    if package:
        (folder / "__init__.py").write_text("")
    (folder / "copies_layers.py").write_text(textwrap.dedent(LAYER.format(body=body)))
    model = folder / "model.py"
    model.write_text(
        textwrap.dedent(MODEL.format(helper=".copies_layers" if package else "copies_layers"))
    )
    return model


def diff(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["diff", *argv, "--no-values", "--input", "torch.randn(2, 4)", "--check"])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("package", [False, True], ids=["folders", "packages"])
def test_two_copies_of_a_project_each_run_their_own_helpers(tmp_path, capsys, package) -> None:
    """The old copy's `layers` stayed imported and the new copy's model used it: "no
    differences", exit 0, for an edit that added a relu."""
    # (names no other test imports: this process keeps what the tests before it imported)
    inner = "copies_pkg"
    old = project(tmp_path / "old" / inner if package else tmp_path / "old", "self.fc(x)", package)
    new = project(
        tmp_path / "new" / inner if package else tmp_path / "new", "self.fc(x).relu()", package
    )
    rc, out, err = diff([f"{old}:Net", f"{new}:Net"], capsys)
    assert rc == 1, out + err
    assert "+ relu" in out and "1 added" in out, out
    # and the other way round: the relu is the old side's alone
    rc, out, err = diff([f"{new}:Net", f"{old}:Net"], capsys)
    assert rc == 1 and "- relu" in out, out + err


def test_a_class_one_side_imports_from_the_other_is_one_class(tmp_path, capsys) -> None:
    """model_v2.py takes Block from model.py: `model.Block → model.Block` was a change."""
    (tmp_path / "model.py").write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)

                def forward(self, x):
                    return self.fc(x)

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.block = Block()

                def forward(self, x):
                    return self.block(x).relu()
            """
        )
    )
    text = (tmp_path / "model.py").read_text()
    start = text.index("class Block")
    v2 = text[:start] + "from model import Block\n\n\n" + text[text.index("class Net") :]
    (tmp_path / "model_v2.py").write_text(v2)
    rc, out, err = diff([f"{tmp_path / 'model.py'}:Net", f"{tmp_path / 'model_v2.py'}:Net"], capsys)
    assert rc == 0 and "no differences" in out, out + err


def test_a_bad_input_for_b_is_named_as_b_s(tmp_path, capsys) -> None:
    model = project(tmp_path / "m", "self.fc(x)")
    rc = main(
        ["diff", f"{model}:Net", f"{model}:Net", "--input", "torch.randn(3, 4)"]
        + ["--input-b", "undefined_name"]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert "--input-b 'undefined_name' failed: NameError" in err, err


def test_a_file_refactored_into_a_package_compares_as_the_same_classes(tmp_path) -> None:
    """`model.py` became `model/core.py`: b's own `model.core.Block` was read as a's name for
    another class (`model.core.core.Block`), and every class had changed."""
    import subprocess
    import sys

    body = LAYER.format(body="self.fc(x)") + NET
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "refactored.py").write_text(body)
    (tmp_path / "b" / "refactored").mkdir(parents=True)
    (tmp_path / "b" / "refactored" / "__init__.py").write_text("")
    (tmp_path / "b" / "refactored" / "core.py").write_text(body)
    cli = [sys.executable, "-m", "torchscope"]
    graph = tmp_path / "a.json"
    subprocess.run(
        [*cli, "trace", f"{tmp_path / 'a' / 'refactored.py'}:Net", "-o", str(graph)]
        + ["--input", "torch.randn(2, 4)"],
        check=True,
        capture_output=True,
    )
    run = subprocess.run(
        [*cli, "diff", str(graph), f"{tmp_path / 'b' / 'refactored' / 'core.py'}:Net"]
        + ["--input", "torch.randn(2, 4)", "--no-values", "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0 and "no differences" in run.stdout, run.stdout + run.stderr
