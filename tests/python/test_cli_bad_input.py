"""Bad input on the command line, found by QA: one clear line and the documented exit code,
never a traceback from torchscope's code, and never a graph file torchscope can't read back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_runner import write_net_package  # (tests/python is on sys.path)

from torchscope.graph_file import read_graph_file


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
    )


def _command(how: str) -> list[str]:
    """`python -m torchscope`, or the `torchscope` script pip installed beside python."""
    if how == "torchscope":
        return [str(Path(sys.executable).parent / "torchscope")]
    return [sys.executable, "-m", "torchscope"]


def test_a_reader_that_goes_away_ends_the_installed_command_quietly(tmp_path):
    _write(tmp_path, "net.py", NET)
    for command in ("python -m torchscope", "torchscope"):
        run = subprocess.run(
            f"{' '.join(_command(command))} summary net.py:Net | head -1",
            shell=True,
            capture_output=True,
            text=True,
            timeout=180,
            cwd=tmp_path,
        )
        assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, (
            command,
            run.stderr,
        )
        assert run.stdout.strip(), command


def _one_line(run: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "Traceback" not in run.stderr, run.stderr
    assert len(lines) == 1, run.stderr
    return lines[0]


NET = """
    import torch
    from torch import nn

    D = 4
    EXAMPLE = torch.randn(2, D)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(D, 4)

        def forward(self, x):
            return self.fc(x)
"""


def test_an_input_dict_with_keys_that_are_no_names(tmp_path):
    _write(tmp_path, "net.py", NET)
    for command in (["summary"], ["trace", "-o", "g.msgpack"]):
        run = _cli(*command, "net.py:Net", "--input", "{0: torch.randn(1, 4)}", cwd=tmp_path)
        assert run.returncode == 2
        line = _one_line(run)
        assert "dict with the key 0" in line and "keyword argument names" in line, line
    assert not list(tmp_path.glob("*.msgpack"))


@pytest.mark.parametrize("key", ["1a", "y"])
def test_an_input_dict_with_a_key_the_forward_takes_no_argument_of(tmp_path, key):
    # (QA: exit 1, "the forward raised TypeError … unexpected keyword argument", and a
    # graph of no ops written)
    _write(tmp_path, "net.py", NET)
    run = _cli(
        "trace", "-o", "g.msgpack", "net.py:Net", "--input", f"{{{key!r}: torch.randn(1, 4)}}",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    line = _one_line(run)
    assert f"dict with the key {key!r}" in line and "it takes: x" in line, line
    assert not list(tmp_path.glob("*.msgpack"))


def test_an_input_naming_what_the_files_top_level_code_makes(tmp_path):
    _write(tmp_path, "net.py", NET)
    run = _cli("summary", "net.py:Net", "--input", "EXAMPLE", cwd=tmp_path)
    assert run.returncode == 2
    line = _one_line(run)
    assert "NameError: name 'EXAMPLE' is not defined" in line
    assert "line 6: EXAMPLE = torch.randn(2, D)" in line and "--run-top-level" in line, line
    run = _cli("summary", "net.py:Net", "--input", "EXAMPLE", "--run-top-level", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    # review: another error quoting a word of the left-out line ('torch') gets no such hint
    run = _cli("summary", "net.py:Net", "--input", "torch.randm(2, 4)", cwd=tmp_path)
    line = _one_line(run)
    assert "has no attribute 'randm'" in line and "--run-top-level" not in line, line


def test_an_exception_whose_message_fails(tmp_path):
    _write(
        tmp_path,
        "bad.py",
        """
        import torch
        from torch import nn

        class BadStr(Exception):
            def __str__(self):
                raise RuntimeError("no message")

        class Fwd(nn.Module):
            def forward(self, x):
                raise BadStr()

        class Ctor(nn.Module):
            def __init__(self):
                super().__init__()
                raise BadStr()

        print("top-level code, left out")  # (review: a file with some took another path)
        """,
    )
    run = _cli("trace", "bad.py:Fwd", "--input", "torch.randn(2)", "-o", "g.json", cwd=tmp_path)
    assert run.returncode == 1
    assert "BadStr" in _one_line(run)
    graph = read_graph_file(str(tmp_path / "g.json"))
    assert graph.error is not None and graph.error.message == "<exception str() failed>"
    run = _cli("trace", "bad.py:Ctor", "-o", "c.json", cwd=tmp_path)
    assert run.returncode == 2
    line = _one_line(run)
    assert "BadStr: <exception str() failed>" in line and "no message" not in line, line


def test_a_setting_too_big_for_a_64_bit_integer_is_kept_as_text(tmp_path):
    _write(
        tmp_path,
        "big.py",
        """
        import torch
        from torch import nn

        class Hash(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def extra_repr(self):
                return "modulus=2305843009213693951000, small=3"

            def forward(self, x):
                return self.fc(x)
        """,
    )
    for out in ("g.msgpack", "g.json", "g.html"):
        run = _cli("trace", "big.py:Hash", "--input", "torch.randn(1, 4)", "-o", out, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
    for out in ("g.msgpack", "g.json"):
        root = next(n for n in read_graph_file(str(tmp_path / out)).nodes if n.name == "Hash")
        assert root.attrs == {"modulus": "2305843009213693951000", "small": 3}


@pytest.mark.parametrize(
    "command, rank",
    [("python -m torchscope", None), ("torchscope", None), ("python -m torchscope", 1)],
)
def test_ctrl_c_is_one_line_and_exit_130(tmp_path, command, rank):
    # (rank: as torchrun starts a rank; Ctrl-C reaches every rank, and each says which it is)
    started = tmp_path / "started"
    _write(
        tmp_path,
        "slow.py",
        f"""
        import time
        import torch
        from torch import nn

        class Sleepy(nn.Module):
            def forward(self, x):
                open({str(started)!r}, "w").close()
                time.sleep(120)
                return x
        """,
    )
    proc = subprocess.Popen(
        [
            *_command(command),
            "trace",
            "slow.py:Sleepy",
            "--input",
            "torch.randn(2)",
            "-o",
            "g.msgpack",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **({"RANK": str(rank), "WORLD_SIZE": "2"} if rank is not None else {})},
        # as in a terminal (a shell's background job, as a test run may be, ignores SIGINT)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert started.exists(), "the forward did not start"
        os.kill(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "Traceback" not in err
    said = "torchscope: interrupted" if rank is None else f"torchscope: rank {rank}: interrupted"
    assert [line for line in err.splitlines() if line.strip()] == [said]


def test_diff_keeps_as_own_guess_when_bs_gets_it_less_far(tmp_path):
    # A fails at fc2 with its own guess [1, 8]; B's guess [1, 4] fails at A's first layer
    _write(
        tmp_path,
        "a.py",
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(8, 16)
                self.fc2 = nn.Linear(32, 4)

            def forward(self, x):
                return self.fc2(self.fc1(x))
        """,
    )
    _write(
        tmp_path,
        "b.py",
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(4, 16)
                self.fc2 = nn.Linear(16, 4)

            def forward(self, x):
                return self.fc2(self.fc1(x))
        """,
    )
    run = _cli("diff", "a.py:Net", "b.py:Net", cwd=tmp_path)
    assert "(1x16 and 32x4)" in run.stderr, run.stderr  # A as far as its own input takes it
    assert "(1x4 and 8x16)" not in run.stderr


def test_an_internal_error_is_exit_2_never_1_which_diff_check_reads_as_a_difference(
    monkeypatch, capsys
):
    # (QA: a text diff that crashed exited 1, so `diff --check` in CI said "the passes
    # differ" where torchscope had failed)
    from torchscope import cli

    def broken() -> int:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(cli, "main", broken)
    with pytest.raises(SystemExit) as ended:
        cli.run()
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "RecursionError" in err
    assert err.rstrip().splitlines()[-1] == (
        "torchscope: internal error (a bug: the stack above says where), exit 2; please report it"
    )


def test_a_forward_that_raises_on_a_guessed_input_says_the_input_was_a_guess(tmp_path):
    # (QA: only "the forward raised RuntimeError: shape '[1, 8, 2, 4]' is invalid …": the
    # README says the CLI then says how to pass --input, and the editor calls it a guess)
    (tmp_path / "viewed.py").write_text(
        "import torch\n"
        "from torch import nn\n"
        "class Viewed(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(8, 8)\n"
        "    def forward(self, x):\n"
        "        return self.fc(x).view(x.shape[0], x.shape[1], 2, 4)\n"
    )
    for command in ("trace", "summary"):
        extra = ["-o", "g.msgpack"] if command == "trace" else []
        run = _cli(command, "viewed.py:Viewed", *extra, cwd=tmp_path)
        assert run.returncode == 1, run.stderr
        lines = run.stderr.strip().splitlines()
        assert lines[0].startswith("torchscope: the forward raised RuntimeError")
        assert lines[-1] == (
            "torchscope: the input was a guess (torch.randn(1, 8)) and may be what is wrong: "
            "give the one the model takes with --input"
        )
    typed = _cli("summary", "viewed.py:Viewed", "--input", "torch.randn(1, 8)", cwd=tmp_path)
    assert typed.returncode == 1 and "guess" not in typed.stderr


def test_an_input_asked_for_token_ids_gives_an_example_of_ids(tmp_path):
    # (QA: an Embedding sized by a vocabulary the skipped top-level code fills was asked
    # for "e.g. --input 'torch.randn(1, 3, 224, 224)'", an image)
    (tmp_path / "voc.py").write_text(
        "import torch\n"
        "from torch import nn\n"
        "VOCAB = []\n"
        "for w in 'a b c'.split():\n"
        "    VOCAB.append(w)\n"
        "class Voc(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.e = nn.Embedding(len(VOCAB), 4)\n"
        "    def forward(self, ids):\n"
        "        return self.e(ids)\n"
    )
    run = _cli("summary", "voc.py:Voc", cwd=tmp_path)
    assert run.returncode == 2
    assert "e.g. --input 'torch.randint(0, 1000, (1, 16))'" in run.stderr
    assert "224" not in run.stderr


def test_a_class_the_file_imports_is_built_as_the_file_builds_it(tmp_path):
    # (QA: README says a class that needs arguments is built as the file builds it
    # (`encoder = Encoder(24, depth=3)` in main()); for a class the file imports (from the
    # project's layers.py, or transformers' GPT2Model(GPT2Config(…))) it said "needs
    # constructor arguments")
    (tmp_path / "layers.py").write_text(
        "from torch import nn\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self, width, depth=1):\n"
        "        super().__init__()\n"
        "        self.layers = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])\n"
        "    def forward(self, x):\n"
        "        return self.layers(x)\n"
    )
    (tmp_path / "train.py").write_text(
        "from layers import Encoder\n"
        "from transformers import GPT2Config, GPT2Model\n"
        "def main():\n"
        "    encoder = Encoder(24, depth=3)\n"
        "    gpt = GPT2Model(GPT2Config(n_layer=1, n_embd=16, n_head=2))\n"
        "if __name__ == '__main__':\n"
        "    main()\n"
    )
    for target, made in (("Encoder", "layers.2: Linear"), ("GPT2Model", "h.0: GPT2Block")):
        run = _cli("summary", f"train.py:{target}", cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert made in run.stdout, run.stdout


def test_an_imported_factory_is_not_traced_with_its_own_arguments(tmp_path):
    # (review: `make_encoder(24)` in the file, the factory imported: built with 24, then
    # traced with 24 as its input, "linear(): argument 'input' must be Tensor, not int")
    (tmp_path / "enc.py").write_text(
        "from torch import nn\ndef make_encoder(width):\n    return nn.Linear(width, width)\n"
    )
    (tmp_path / "train.py").write_text("from enc import make_encoder\nenc = make_encoder(24)\n")
    run = _cli("summary", "train.py:make_encoder", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "must be Tensor" not in run.stderr and "needs" in run.stderr, run.stderr


def test_an_imported_model_class_from_a_package_elsewhere_is_built_as_the_file_builds_it(
    tmp_path,
):
    # (review: `from pkg.net import Net` in scripts/train.py, pkg found on PYTHONPATH: the
    # file's folder alone could not tell Net is a model class, "needs constructor arguments")
    write_net_package(tmp_path)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text(
        "from pkg.net import Net\ndef main():\n    net = Net(8)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "-m", "torchscope", "summary", "scripts/train.py:Net"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert run.returncode == 0, run.stderr
    assert "fc: Linear  [1, 8] → [1, 2]" in run.stdout, run.stdout
