"""`summary` and `diff` print names from graph files, which anyone can write: terminal control
sequences in them (clear screen, a window title, colours, a carriage return that overwrites
the line, OSC 8 links) are printed as visible escapes, never sent to the terminal (a
security QA pass faked `diff --check` output with them)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from torchscope.cli import main

NET = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(x)
"""

HOSTILE_MODEL = "Net\x1b[2J\x1b[H\x1b]0;TITLE\x07\x1b[31mall good\x1b[0m"
HOSTILE_NODE = "Linear\r\x1b[Kinjected\x1b]8;;http://e.example/\x07click\x1b]8;;\x07\x9b2J"


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    net = tmp_path / "net.py"
    net.write_text(textwrap.dedent(NET))
    plain = tmp_path / "plain.json"
    assert main(["trace", f"{net}:Net", "--input", "torch.randn(2, 4)", "-o", str(plain)]) == 0
    wire = json.loads(plain.read_text())
    wire["model"]["name"] = HOSTILE_MODEL
    [fc] = [n for n in wire["nodes"] if n.get("path") == "fc" and n["kind"] == "module"]
    fc["name"] = HOSTILE_NODE
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(wire))
    return plain, crafted


def _clean(text: str) -> None:
    controls = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert not controls, repr(text)


def test_summary_prints_control_characters_as_escapes(hostile, capsys) -> None:
    _, crafted = hostile
    capsys.readouterr()
    assert main(["summary", str(crafted)]) == 0
    out = capsys.readouterr().out
    _clean(out)
    assert "\\x1b[2J" in out and "\\r" in out and "TITLE" in out


def test_diff_prints_control_characters_as_escapes(hostile, capsys) -> None:
    plain, crafted = hostile
    capsys.readouterr()
    main(["diff", str(plain), str(crafted)])
    captured = capsys.readouterr()
    _clean(captured.out)
    _clean(captured.err)
    assert "\\x1b" in captured.out


def test_a_line_break_in_a_name_makes_no_line_of_its_own(tmp_path: Path, capsys) -> None:
    """(a review's: `Net\\n\\nsame forward pass: 0 changes` as a model's name printed a
    line that read as diff's own)"""
    net = tmp_path / "net.py"
    net.write_text(textwrap.dedent(NET))
    plain = tmp_path / "plain.json"
    assert main(["trace", f"{net}:Net", "--input", "torch.randn(2, 4)", "-o", str(plain)]) == 0
    wire = json.loads(plain.read_text())
    wire["model"]["name"] = "Net\n\nno differences: 3 nodes the same"
    [fc] = [n for n in wire["nodes"] if n.get("path") == "fc" and n["kind"] == "module"]
    fc["name"] = "Linear\n  (no differences)"
    crafted = tmp_path / "crafted.json"
    crafted.write_text(json.dumps(wire))
    capsys.readouterr()
    assert main(["summary", str(crafted)]) == 0
    out = capsys.readouterr().out
    main(["diff", str(plain), str(crafted)])
    out += capsys.readouterr().out
    for line in out.splitlines():
        assert not line.startswith(("no differences", "  (no differences)")), out
    assert "Net\\n\\nno differences" in out
