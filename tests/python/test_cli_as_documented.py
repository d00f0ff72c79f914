"""The command line as the README says it is (a QA pass that followed the README): diff
takes the same time budget and --run-top-level as trace, and a forward that runs out of
memory points at --device meta as a model too big to build does."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
    )


def write(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(textwrap.dedent(text))
    return name


NET = """
import torch
from torch import nn

class Net(nn.Module):
    example_input_array = torch.randn(2, 4)

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).relu()
"""


@pytest.mark.parametrize("budget", ["0", "-1", "nan", "inf"])
def test_diff_refuses_a_time_budget_that_is_no_number_of_seconds(tmp_path, budget) -> None:
    net = write(tmp_path, "net.py", NET)
    run = cli("diff", f"{net}:Net", f"{net}:Net", "--time-budget", budget, cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert f"{budget} is no time budget" in run.stderr, run.stderr


def test_diff_runs_the_top_level_code_it_is_told_to(tmp_path) -> None:
    """A model that needs what its file's top-level code makes: the error says
    --run-top-level, and diff takes it."""
    cache = write(
        tmp_path,
        "cache.py",
        """
        import torch
        from torch import nn

        CACHE = {}

        class Net(nn.Module):
            example_input_array = torch.randn(2, 4)

            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x) * CACHE["scale"]

        CACHE.update(scale=2.0)
        """,
    )
    without = cli("diff", f"{cache}:Net", f"{cache}:Net", cwd=tmp_path)
    assert "--run-top-level" in without.stderr, without.stderr
    run = cli("diff", f"{cache}:Net", f"{cache}:Net", "--run-top-level", "--check", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "A: the forward raised" not in run.stderr


def test_a_forward_out_of_memory_points_at_the_meta_device(tmp_path) -> None:
    huge = write(
        tmp_path,
        "huge.py",
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                return x + torch.empty(10**13)  # 40 TB
        """,
    )
    run = cli("trace", f"{huge}:Net", "--input", "torch.randn(2)", "-o", "h.msgpack", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "can't allocate memory" in run.stderr, run.stderr
    assert "--device meta" in run.stderr.splitlines()[-1], run.stderr


def test_diff_stops_a_side_past_its_time_budget_with_an_error(tmp_path) -> None:
    """A side stopped inside its forward is no pass to compare (with --check it read as
    "the passes differ", exit 1): one line, exit 2, as diff's other errors."""
    slow = write(
        tmp_path,
        "slow.py",
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            example_input_array = torch.randn(2, 4)

            def forward(self, x):
                while True:
                    x = x + 1
        """,
    )
    run = cli(
        "diff",
        f"{slow}:Net",
        f"{slow}:Net",
        "--time-budget",
        "2",
        "--check",
        "--no-values",
        cwd=tmp_path,
    )
    assert run.returncode == 2, run.stderr
    assert "ran past 2 s" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
