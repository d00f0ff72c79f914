"""Command-line options and streams, found by a QA pass: one clear line and exit 2 where the
input is bad, never a stack from torchscope's code, never an option quietly ignored, never a
hang or a user's file touched that the command was not asked to write."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Optional

import pytest

NET = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)
"""


def _cli(
    *args: str,
    cwd: Path,
    env: Optional[dict[str, str]] = None,
    timeout: float = 120,
    **how: Any,
) -> subprocess.CompletedProcess[str]:
    how.setdefault("capture_output", "stdout" not in how)
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args],
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        **how,
    )


def _one_line(run: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "Traceback" not in run.stderr, run.stderr
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("torchscope: "), lines
    return lines[0]


def _net(folder: Path, text: str = NET, name: str = "net.py") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def _graph(folder: Path) -> Path:
    """A saved graph of net.py:Net."""
    _net(folder)
    run = _cli("trace", "net.py:Net", "-o", "g.json", cwd=folder)
    assert run.returncode == 0, run.stderr
    return folder / "g.json"


WIDE = NET.replace("nn.Linear(4, 4)", "nn.Linear(4, 8)")


@pytest.mark.parametrize(
    "args",
    [
        ("summary", "g.json"),
        ("diff", "g.json", "wïde.py:Net"),
        ("diff", "g.json", "wïde.py:Net", "--format", "json"),
        ("trace", "net.py:Net", "-o", "é.json"),
    ],
)
def test_text_output_on_a_stream_that_is_not_utf8_is_escaped_not_a_crash(tmp_path, args):
    """A Windows console or redirect in cp1252, PYTHONIOENCODING=ascii: the summary's arrows
    and a file's name in é were an internal error (UnicodeEncodeError), exit 2."""
    _graph(tmp_path)
    _net(tmp_path, WIDE, "wïde.py")
    run = _cli(*args, cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and not run.stderr.strip(), run.stderr
    if "json" in args:  # (still a JSON document: what it can't show is escaped as JSON does)
        assert json.loads(run.stdout)["b"]["source"] == "wïde.py:Net"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "args",
    [
        ("summary", "g.json"),
        ("trace", "net.py:Net", "-o", "t.json"),
        ("diff", "g.json", "net.py:Net", "--check"),
    ],
)
def test_a_stdout_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, args):
    """`> /dev/full` (a full disk) was an internal error with its stack."""
    _graph(tmp_path)
    with open("/dev/full", "w") as full:
        run = _cli(*args, cwd=tmp_path, stdout=full, stderr=subprocess.PIPE)
    assert run.returncode == 2
    assert "standard output" in _one_line(run) and "internal error" not in run.stderr


def test_a_closed_stdout_is_one_line_and_exit_2(tmp_path):
    """`>&-`: Python's sys.stdout is None; it was an internal error with its stack."""
    _graph(tmp_path)
    run = subprocess.run(
        f"{sys.executable} -m torchscope summary g.json >&-",
        shell=True,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 2
    assert "standard output" in _one_line(run)


def test_diff_of_a_graph_and_a_target_refuses_an_input_for_the_graph_side(tmp_path):
    """`diff GRAPH TARGET --input X --input-b Y`: --input was never even evaluated."""
    _graph(tmp_path)
    run = _cli(
        "diff",
        "g.json",
        "net.py:Net",
        "--input",
        "1/0",
        "--input-b",
        "torch.randn(2, 4)",
        cwd=tmp_path,
    )
    assert run.returncode == 2 and not run.stdout
    line = _one_line(run)
    assert "--input " in line and "graph file" in line, line
    # without --input-b, --input is B's: still taken
    run = _cli("diff", "g.json", "net.py:Net", "--input", "torch.randn(2, 4)", cwd=tmp_path)
    assert run.returncode == 0, run.stderr


WRONG_KINDS = (
    NET
    + """
    NOT_A_MODEL = 5

    def build_bad():
        return 42

    class Plain:
        pass

    train()  # left out: top-level code
"""
)


@pytest.mark.parametrize(
    "name, said",
    [
        ("build_bad", "build_bad() returned int"),
        ("NOT_A_MODEL", "NOT_A_MODEL is an int"),
        ("torch", "torch is a module"),
        ("Plain", "Plain is a class but not an nn.Module subclass"),
    ],
)
def test_a_name_of_the_wrong_kind_is_said_as_itself_without_the_run_top_level_hint(
    tmp_path, name, said
):
    """Running the left-out top-level code can't make NAME a model: the hint misled."""
    _net(tmp_path, WRONG_KINDS)
    run = _cli("summary", f"net.py:{name}", cwd=tmp_path)
    assert run.returncode == 2
    line = _one_line(run)
    assert line.startswith(f"torchscope: {said}") and "--run-top-level" not in line, line


NEEDS_TOP_LEVEL = (
    NET
    + """
    SETTINGS = {}
    SETTINGS.update(width=4)  # left out: a call

    def build():
        return Net() if SETTINGS["width"] == 4 else None
"""
)


def test_a_name_the_left_out_code_may_make_keeps_the_run_top_level_hint(tmp_path):
    _net(tmp_path, NEEDS_TOP_LEVEL)
    run = _cli("summary", "net.py:build", cwd=tmp_path)
    assert run.returncode == 2 and "--run-top-level" in _one_line(run)


FILLED_AT_IMPORT = (
    NET
    + """
    REGISTRY = {}
    for cls in (Net,):  # left out: a loop
        REGISTRY[cls.__name__] = cls

    def build():
        cls = REGISTRY.get("Net")
        return cls() if cls else None

    def build_pair():
        cls = REGISTRY.get("Net")
        return (cls() if cls else None), torch.randn(2, 4)
"""
)


@pytest.mark.parametrize("factory", ["build", "build_pair"])
def test_a_factory_that_returns_nothing_keeps_the_run_top_level_hint(tmp_path, factory):
    """None from a factory (alone, or beside its example) is what a registry the left-out
    code fills gives: running it may help (an int or a module would not)."""
    _net(tmp_path, FILLED_AT_IMPORT)
    run = _cli("summary", f"net.py:{factory}", cwd=tmp_path)
    assert run.returncode == 2 and "--run-top-level" in _one_line(run), _one_line(run)
    assert _cli("summary", f"net.py:{factory}", "--run-top-level", cwd=tmp_path).returncode == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
@pytest.mark.parametrize(
    "args", [("trace", "net.py:Net", "-o", "p.json"), ("diff", "g.json", "g.json", "-o", "p.txt")]
)
def test_an_output_that_is_a_named_pipe_is_refused_not_waited_on(tmp_path, args):
    """The probe opened it for writing, which waits for a reader: forever."""
    _graph(tmp_path)
    os.mkfifo(tmp_path / args[-1])
    run = _cli(*args, cwd=tmp_path, timeout=60)
    assert run.returncode == 2 and not run.stdout
    assert "not a regular file" in _one_line(run)


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="unix sockets")
def test_an_output_that_is_a_socket_is_refused(tmp_path):
    """(A socket, not a device: a write that went ahead would replace what is there, and
    a link to /dev/null would cost the machine its /dev/null.)"""
    _graph(tmp_path)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock.json"))
        run = _cli("trace", "net.py:Net", "-o", "sock.json", cwd=tmp_path)
        assert stat.S_ISSOCK((tmp_path / "sock.json").stat().st_mode)
    assert run.returncode == 2 and "not a regular file" in _one_line(run)


@pytest.mark.parametrize("command", ["trace", "diff"])
def test_an_output_name_near_the_systems_limit_is_written(tmp_path, command):
    """A name of 250 bytes is one the system takes; its temporary, 15 bytes longer, was not:
    the model ran, then the write failed."""
    _graph(tmp_path)
    name = "a" * 245 + (".json" if command == "trace" else ".txt")
    args = ("trace", "net.py:Net") if command == "trace" else ("diff", "g.json", "g.json")
    run = _cli(*args, "-o", name, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / name).stat().st_size > 0
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


@pytest.mark.parametrize(
    "args",
    [
        ("trace", "net.py:Net", "-o", "a" * 300 + ".json"),
        ("diff", "g.json", "g.json", "-o", "a" * 300 + ".txt"),
    ],
)
def test_an_output_name_longer_than_the_system_takes_is_one_line(tmp_path, args):
    """It was an OSError's stack (ENAMETOOLONG) from the check of the name."""
    _graph(tmp_path)
    run = _cli(*args, cwd=tmp_path)
    assert run.returncode == 2 and not run.stdout
    assert "cannot write" in _one_line(run)


@pytest.mark.parametrize("value", ["", "   "])
@pytest.mark.parametrize(
    "args",
    [
        ("summary", "net.py:Net", "--input"),
        ("diff", "net.py:Net", "net.py:Net", "--input"),
        ("diff", "net.py:Net", "net.py:Net", "--input-b"),
    ],
)
def test_an_empty_input_expression_is_refused(tmp_path, args, value):
    """`--input ""` meant no input (a guess), `--input "   "` a SyntaxError."""
    _net(tmp_path)
    run = _cli(*args, value, cwd=tmp_path)
    assert run.returncode == 2 and not run.stdout
    line = _one_line(run)
    assert args[-1] in line and "empty" in line, line


@pytest.mark.parametrize("option", [["--no-values"], ["--device", "meta"]])
def test_a_stats_tolerance_where_no_values_are_compared_is_refused(tmp_path, option):
    _net(tmp_path)
    run = _cli("diff", "net.py:Net", "net.py:Net", *option, "--stats-tolerance", "0", cwd=tmp_path)
    assert run.returncode == 2 and not run.stdout
    line = _one_line(run)
    assert "--stats-tolerance" in line and option[0] in line, line


@pytest.mark.parametrize(
    "args, shown",
    [
        (("summary", "net.py :Net"), "no such file: 'net.py '"),
        (("summary", " g.json"), "no such file: ' g.json'"),
        (("diff", "g.json", "net.py :Net"), "no such file: 'net.py '"),
    ],
)
def test_a_missing_file_whose_name_has_spaces_at_its_ends_shows_them(tmp_path, args, shown):
    """`no such file: net.py` for "net.py :Net", although net.py is there."""
    _graph(tmp_path)
    run = _cli(*args, cwd=tmp_path)
    assert run.returncode == 2
    assert _one_line(run) == f"torchscope: {shown}"


@pytest.mark.parametrize(
    "args",
    [("trace", "net.py:Net", "-o", "out.json"), ("diff", "g.json", "g.json", "-o", "out.json")],
)
def test_writing_an_output_leaves_a_file_named_like_its_temporary_alone(tmp_path, args):
    """`-o out.json` wrote out.json.part then renamed it: the user's own out.json.part went."""
    _graph(tmp_path)
    (tmp_path / "out.json.part").write_text("my notes")
    run = _cli(*args, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out.json.part").read_text() == "my notes"
    assert json.loads((tmp_path / "out.json").read_text())
    umask = os.umask(0o022)
    os.umask(umask)
    # (made as an in-place write makes a file: not mkstemp's 0600)
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "g.json",
        "net.py",
        "out.json",
        "out.json.part",
    ]


PRINTS = """
    import torch
    from torch import nn

    print("net.py imported")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            print("building Net")
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            print("forward sees", tuple(x.shape))
            return self.fc(x)
"""


def test_a_json_diff_on_stdout_stays_json_when_something_writes_to_its_file_descriptor(
    tmp_path,
):
    """Not only Python's print: a C library or a subprocess writes to file descriptor 1."""
    _net(tmp_path, PRINTS.replace('print("building Net")', 'os.write(1, b"fd-level write\\n")'))
    path = tmp_path / "net.py"
    path.write_text("import os\n" + path.read_text())
    run = _cli("diff", "net.py:Net", "net.py:Net", "--format", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["a"]
    assert "fd-level write" in run.stderr


def test_a_json_diff_on_stdout_stays_json_when_the_model_prints(tmp_path):
    """The model's own print()s went into the document; they go to stderr while it traces."""
    _net(tmp_path, PRINTS)
    run = _cli("diff", "net.py:Net", "net.py:Net", "--format", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["a"]
    assert "building Net" in run.stderr and "forward sees" in run.stderr
