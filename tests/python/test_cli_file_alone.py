"""A target given as the file alone (`torchscope trace net.py`): the one model the file
defines is traced, and a file with several or none says which names there are. A name the
file lacks lists the models it has."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import run, write  # (tests/python is on sys.path)

ONE = """
import torch
from torch import nn

def helper(x):
    return x + 1

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(x)
"""

SEVERAL = """
import torch
from torch import nn

class Encoder(nn.Module):
    def forward(self, x):
        return x * 2

class Decoder(nn.Module):
    def forward(self, x):
        return x + 1

model = Encoder()
"""

NONE = """
def add(a, b):
    return a + b
"""


def test_a_file_with_one_model_traces_it(tmp_path: Path, capsys) -> None:
    net = write(tmp_path, "net.py", ONE)
    out = tmp_path / "g.json"
    rc, _, err = run(["trace", str(net), "--input", "torch.randn(3, 4)", "-o", str(out)], capsys)
    assert rc == 0, err
    wire = json.loads(out.read_text())
    assert wire["model"]["name"] == "Net"
    assert "Net, the one model net.py defines" in err


def test_summary_and_diff_take_the_file_alone_too(tmp_path: Path, capsys) -> None:
    net = write(tmp_path, "net.py", ONE)
    rc, out, err = run(["summary", str(net), "--input", "torch.randn(3, 4)"], capsys)
    assert rc == 0 and "fc: Linear" in out, err
    rc, out, err = run(["diff", str(net), f"{net}:Net", "--input", "torch.randn(3, 4)"], capsys)
    assert rc == 0, err


def test_a_file_with_several_models_names_them(tmp_path: Path, capsys) -> None:
    several = write(tmp_path, "several.py", SEVERAL)
    rc, _, err = run(["trace", str(several), "-o", str(tmp_path / "g.json")], capsys)
    assert rc == 2 and err.count("\n") == 1
    assert "several.py defines 3 models: Encoder, Decoder, model" in err
    assert f"{several}:NAME" in err
    assert not (tmp_path / "g.json").exists()


def test_a_file_with_no_model_says_so(tmp_path: Path, capsys) -> None:
    none = write(tmp_path, "none.py", NONE)
    rc, _, err = run(["trace", str(none), "-o", str(tmp_path / "g.json")], capsys)
    assert rc == 2 and err.count("\n") == 1
    assert "none.py defines no model" in err and "FILE.py:NAME" in err


def test_a_name_the_file_lacks_lists_its_models(tmp_path: Path, capsys) -> None:
    several = write(tmp_path, "several.py", SEVERAL)
    rc, _, err = run(["trace", f"{several}:Encodr", "-o", str(tmp_path / "g.json")], capsys)
    assert rc == 2 and err.count("\n") == 1
    assert "several.py has no name 'Encodr'" in err
    assert "its models: Encoder, Decoder, model" in err


def test_a_missing_file_alone_is_still_a_missing_file(tmp_path: Path, capsys) -> None:
    rc, _, err = run(["trace", str(tmp_path / "gone.py"), "-o", str(tmp_path / "g.json")], capsys)
    assert rc == 2 and ("no such file" in err or "FILE.py:NAME" in err)


LIBRARY = """
import torch
from somelib import TransformerWrapper, Decoder

model = TransformerWrapper(num_tokens=256, attn_layers=Decoder(dim=32, depth=2))
tokens = torch.randint(0, 256, (1, 16))
"""


def test_a_file_of_library_models_names_what_it_builds(tmp_path: Path, capsys) -> None:
    """A model built from a library's class (x-transformers, diffusers) can't be told from
    the file's text: the message says so, and names what the file builds at its top level,
    instead of "defines no model"."""
    lm = write(tmp_path, "lm.py", LIBRARY)
    rc, _, err = run(["trace", str(lm), "-o", str(tmp_path / "g.json")], capsys)
    assert rc == 2 and err.count("\n") == 1
    assert "lm.py defines no model torchscope can tell from its text" in err
    assert "it builds model, tokens at its top level" in err and f"{lm}:NAME" in err


SCRIPT = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(x)

model = Net().to("cpu")
criterion = nn.CrossEntropyLoss()
"""


def test_a_script_with_its_model_an_instance_of_it_and_a_loss_traces_the_model(
    tmp_path: Path, capsys
) -> None:
    """(a review's: the most common script layout said "defines 3 models: Net, model,
    criterion") An instance of the file's own model class is that model, and one of torch's
    own layers (a loss) is no model to pick."""
    script = write(tmp_path, "script.py", SCRIPT)
    out = tmp_path / "g.json"
    rc, _, err = run(["trace", str(script), "--input", "torch.randn(3, 4)", "-o", str(out)], capsys)
    assert rc == 0, err
    assert json.loads(out.read_text())["model"]["name"] == "Net"
    assert "tracing Net" in err
