"""What only an unused function reads is top-level work a trace leaves out (QA: a
`run_log = open("run.log", "w")` read only by `train()` truncated the user's log on every
trace of `Net`; `loader = DataLoader(...torch.load(...))` read only by `train()` ran and
failed the import). What the model does use still runs: a helper its forward calls, a
factory a kept statement calls, a decorator, defaults and annotations, a base class."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from torchscope.build_target import build
from torchscope.definitions import definitions

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)

"""


def _write(tmp_path: Path, name: str, text: str, **paths: Path) -> Path:
    text = textwrap.dedent(text)
    for key, value in paths.items():
        text = text.replace(key, repr(str(value)))
    path = tmp_path / name
    path.write_text(text)
    return path


def _kept(source: str, target: str = "Net") -> str:
    """The kept module as source text."""
    return ast.unparse(definitions(textwrap.dedent(source), {target}).tree)


def _skipped(source: str, target: str = "Net") -> list[str]:
    return [s.text for s in definitions(textwrap.dedent(source), {target}).skipped]


def test_what_only_an_unused_function_reads_is_skipped():
    source = (
        NET
        + """
run_log = open("run.log", "w")


def train():
    model = Net()
    for step in range(10):
        run_log.write(f"{step}\\n")


valid = make_loader()


@torch.no_grad()
def evaluate(model):
    return [model(x) for x in valid]
"""
    )
    # (a decorator that only wraps the function registers nothing: still unused)
    assert _skipped(source) == ['run_log = open("run.log", "w")', "valid = make_loader()"]
    kept = _kept(source)
    assert "def train" in kept  # the definition itself is harmless
    assert "open(" not in kept
    # a decorator that may keep the function (a registry): as if used
    registered = (
        NET + "KERNELS = load_kernels()\n@MODELS.register\ndef act(x):\n    return KERNELS\n"
    )
    assert _skipped(registered) == []
    # traced itself, the function needs what it reads
    assert "open(" in _kept(source, "train")


def test_tracing_a_model_keeps_the_log_an_unused_function_writes(tmp_path):
    """QA, in the CLI: `run.log` was 30 bytes before a trace of `Net`, 0 after."""
    log = tmp_path / "run.log"
    log.write_text("precious results of yesterday\n")
    path = _write(
        tmp_path,
        "train_log.py",
        NET
        + """
run_log = open(LOG, "w")   # the training run's log


def train():
    model = Net()
    for step in range(10):
        loss = model(torch.randn(4, 8)).sum()
        run_log.write(f"{step} {loss.item()}\\n")


if __name__ == "__main__":
    train()
""",
        LOG=log,
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchscope",
            "trace",
            f"{path}:Net",
            "-o",
            str(tmp_path / "g.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert log.read_text() == "precious results of yesterday\n"
    built = build(f"{path}:Net")
    assert log.read_text() == "precious results of yesterday\n"
    line = (
        path.read_text()
        .splitlines()
        .index(f'run_log = open({str(log)!r}, "w")   # the training run\'s log')
    )
    assert [s.line for s in built.skipped] == [line + 1]


def test_a_data_set_only_the_training_function_reads_is_not_loaded(tmp_path, capfd):
    """QA: `torch.load("data/train.pt")` (no such file) behind `loader`, which only `train()`
    reads, ran and failed the import ("runs-code")."""
    path = _write(
        tmp_path,
        "train_script.py",
        NET
        + """
from torch.utils.data import DataLoader, TensorDataset

print("TOP LEVEL RAN")
dataset = TensorDataset(*torch.load(DATA))   # no data on this machine
loader = DataLoader(dataset, batch_size=8, shuffle=True)


def train():
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    train()
""",
        DATA=tmp_path / "data" / "train.pt",
    )
    built = build(f"{path}:Net")
    assert isinstance(built.model, torch.nn.Module)
    lines = path.read_text().splitlines()
    work = [lines.index('print("TOP LEVEL RAN")') + 1 + i for i in range(3)]
    assert [s.line for s in built.skipped] == work  # the print, the data set, the loader
    assert not hasattr(built.module, "dataset") and not hasattr(built.module, "loader")
    assert "TOP LEVEL RAN" not in capfd.readouterr().out


def test_a_helper_the_forward_calls_has_what_it_reads(tmp_path):
    path = _write(
        tmp_path,
        "helper_scale.py",
        """
        import torch
        from torch import nn

        SCALE = float("2.5")   # a call: kept only because a used function reads it
        UNUSED = float("9")


        def scaled(x):
            return x * SCALE


        class Base(nn.Module):
            def shift(self, x):
                return x + OFFSET


        OFFSET = int("1")


        class Net(Base):
            def forward(self, x):
                return self.shift(scaled(x))
        """,
    )
    built = build(f"{path}:Net")
    assert built.module.SCALE == 2.5 and built.module.OFFSET == 1
    assert not hasattr(built.module, "UNUSED")
    assert torch.equal(built.model(torch.ones(2)), torch.full((2,), 3.5))


def test_a_module_level_call_the_model_needs_runs_with_what_it_reads(tmp_path):
    """`CFG = make_cfg()`, read by the class: kept, and `make_cfg` needs what it reads."""
    path = _write(
        tmp_path,
        "made_cfg.py",
        """
        import torch
        from torch import nn

        BASE = int("3")


        def make_cfg():
            return {"hidden": BASE * 2}


        CFG = make_cfg()


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, CFG["hidden"])

            def forward(self, x):
                return self.fc(x)
        """,
    )
    built = build(f"{path}:Net")
    assert built.skipped == []
    assert built.model.fc.out_features == 6


def test_what_defining_a_function_evaluates_is_kept():
    """Decorators (and what the decorator's body reads: it runs at import), default
    arguments and annotations are evaluated when the `def` runs, used or not."""
    source = """
        import typing
        from torch import nn

        SEEN = list()
        T = typing.TypeVar("T")
        DEFAULT = float("0.5")
        DATA = open("data.txt").read()


        def register(fn):
            SEEN.append(fn.__name__)
            return fn


        @register
        def act(x):
            return x * 2


        def unused(x: T, p=DEFAULT) -> T:
            return DATA

        class Net(nn.Module):
            pass
        """
    assert _skipped(source) == ['DATA = open("data.txt").read()']
    namespace: dict[str, object] = {}
    exec(compile(definitions(textwrap.dedent(source), {"Net"}).tree, "<m>", "exec"), namespace)
    assert namespace["SEEN"] == ["act"]


def test_an_unused_class_s_methods_are_like_unused_functions():
    """A `Trainer` class whose methods read the data loader: its body (what runs at import)
    is kept, its methods' reads are not, unless the class is used."""
    source = """
        from torch import nn

        LR = float("0.1")
        loader = make_loader()


        class Trainer:
            lr = LR

            def fit(self):
                for batch in loader:
                    pass


        class Net(nn.Module):
            pass
        """
    assert _skipped(source) == ["loader = make_loader()"]
    assert "lr = LR" in _kept(source)
    assert "make_loader" in _kept(source, "Trainer")


def test_a_function_the_model_s_code_reaches_by_name_keeps_what_it_reads():
    """`global` names a used function writes, and code that looks names up at run time
    (`globals()[...]`): what it may reach stays, as before."""
    source = """
        from torch import nn

        CACHE = dict()
        TABLE = make_table()


        def reset():
            global CACHE
            CACHE = {}


        def act_table(x):
            return TABLE[x]


        class Net(nn.Module):
            def forward(self, x):
                reset()
                return globals()["act_" + "table"](x)
        """
    assert _skipped(source) == []


def test_the_file_s_own_construction_of_the_model_still_has_its_arguments(tmp_path):
    """`Wide(hidden=HIDDEN)` in `main()` builds a class that needs arguments: a constant
    computed by builtins (`int("7")`) is kept for it; a loaded one is not."""
    source = """
        import torch
        from torch import nn

        HIDDEN = int("7")
        DATA = torch.load("data.pt")


        class Wide(nn.Module):
            def __init__(self, hidden):
                super().__init__()
                self.fc = nn.Linear(4, hidden)

            def forward(self, x):
                return self.fc(x)


        def main():
            model = Wide(hidden=HIDDEN)
            other = Wide(DATA.shape[0])
            for batch in DATA:
                model(batch)
        """
    assert _skipped(source, "Wide") == ['DATA = torch.load("data.pt")']
    path = _write(tmp_path, "wide_main.py", source)
    built = build(f"{path}:Wide")
    assert built.model.fc.out_features == 7
    assert built.built_as.startswith("Wide(hidden=HIDDEN)")
