"""A trace never runs what a file's call of its model passes that may do anything: the input
written in `model(...)` under the main guard is evaluated only when it just builds values
(a security QA pass had one click of the lens run `os.system` and unpickle `torch.load`)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from torchscope.cli import main

EVIL = """
import os
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(x)

if __name__ == "__main__":
    model = Net()
    model(os.system("touch {marker}") or torch.randn(3, 4))
"""


def test_the_trace_does_not_run_an_input_call_that_runs_a_command(tmp_path: Path, capsys) -> None:
    marker = tmp_path / "PWNED"
    path = tmp_path / "evil.py"
    path.write_text(textwrap.dedent(EVIL.format(marker=marker)))
    out = tmp_path / "g.json"
    rc = main(["trace", f"{path}:Net", "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert not marker.exists()
    wire = json.loads(out.read_text())
    assert wire["model"]["name"] == "Net"
    assert "os.system" not in json.dumps(wire)  # (the input is the guess, not the call)
