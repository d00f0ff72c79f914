"""Static target finding (torchscope.server.find_targets): no execution, no torch."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchscope.server import find_targets as targets


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def load(path: Path, *roots: Path) -> tuple[targets.Project, targets.FileInfo]:
    project = targets.Project(roots)
    info = project.load(path)
    assert info is not None
    return project, info


def classes(path: Path, *roots: Path) -> list[str]:
    project, info = load(path, *roots)
    return [c.name for c in targets.module_classes(project, info)]


def line_of(path: Path, needle: str) -> int:
    """0-based line of the first line containing `needle`."""
    return next(i for i, line in enumerate(path.read_text().splitlines()) if needle in line)


def test_direct_and_aliased_bases(tmp_path):
    path = write(
        tmp_path,
        "m.py",
        """
        import torch
        import torch.nn as tnn
        from torch import nn
        from torch.nn import Module as Base, Sequential
        from transformers import PreTrainedModel, GPT2LMHeadModel, PretrainedConfig
        from transformers.modeling_utils import PreTrainedModel as PTM
        import lightning as L

        Alias = nn.Module

        class A(nn.Module): pass
        class B(torch.nn.Module): pass
        class C(tnn.Module): pass
        class D(Base): pass
        class E(Sequential): pass
        class F(PreTrainedModel): pass
        class G(GPT2LMHeadModel): pass
        class H(PTM): pass
        class I(Alias): pass
        class J(L.LightningModule): pass
        class K(A): pass           # a model class of the same file
        class Later(Defined): pass  # defined below: still a model
        class Typed(Generic2[int]): pass
        class Defined(nn.Linear): pass
        class Generic2(nn.Module, Generic[T]): pass
        class Config(PretrainedConfig): pass
        class Plain: pass
        class Param(nn.Parameter): pass
        class Gen(Generic[T]): pass

        def f():
            class Inner(nn.Module): pass  # not at module level
    """,
    )
    assert classes(path) == list("ABCDEFGHIJK") + ["Later", "Typed", "Defined", "Generic2"]


def test_bases_from_other_project_files(tmp_path):
    write(tmp_path, "pkg/__init__.py", "from .layers import Block as Block\n")
    write(
        tmp_path,
        "pkg/layers.py",
        """
        from torch import nn
        from .base import Base
        class Block(Base): pass
        class NotAModel: pass
    """,
    )
    write(tmp_path, "pkg/base.py", "import torch\nclass Base(torch.nn.Module): pass\n")
    write(tmp_path, "pkg/sub/__init__.py", "")
    write(
        tmp_path,
        "pkg/sub/deep.py",
        """
        from ..layers import Block
        from .. import layers
        from pkg import base
        class X(Block): pass
        class Y(layers.Block): pass
        class Z(base.Base): pass
        class W(layers.NotAModel): pass
    """,
    )
    write(
        tmp_path,
        "main.py",
        """
        from pkg import Block
        from pkg.layers import NotAModel
        import pkg.base
        from helpers import Helper
        class M(Block): pass
        class N(pkg.base.Base): pass
        class O(NotAModel): pass
        class P(Helper): pass
    """,
    )
    write(tmp_path, "src/helpers.py", "from torch import nn\nclass Helper(nn.Module): pass\n")
    assert classes(tmp_path / "pkg/sub/deep.py") == ["X", "Y", "Z"]
    assert classes(tmp_path / "main.py") == ["M", "N"]  # src/ is not a search root
    assert classes(tmp_path / "main.py", tmp_path / "src") == ["M", "N", "P"]


def test_import_cycles_end(tmp_path):
    write(tmp_path, "a.py", "from b import B\nclass A(B): pass\n")
    write(tmp_path, "b.py", "from a import A\nclass B(A): pass\n")
    assert classes(tmp_path / "a.py") == []


def test_broken_file_has_no_classes(tmp_path):
    path = write(tmp_path, "broken.py", "class A(nn.Module:\n")
    assert targets.Project().load(path) is None


ENCODED = {
    # what Python reads: a coding cookie (PEP 263), a UTF-8 byte-order mark (Windows editors)
    "latin1.py": "# -*- coding: latin-1 -*-\n# café\n".encode("latin-1"),
    "bom.py": "\ufeff# café\n".encode(),
}
MODEL_BYTES = b"from torch import nn\nclass A(nn.Module): pass\n"


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_files_python_decodes_are_read_as_python_does(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(ENCODED[name] + MODEL_BYTES)
    assert classes(path) == ["A"]


def test_unsaved_text_replaces_the_file(tmp_path):
    path = write(tmp_path, "m.py", "from torch import nn\nclass A(nn.Module): pass\n")
    project = targets.Project()
    info = project.load(path, "from torch import nn\nclass B(nn.Module): pass\n")
    assert info is not None
    assert [c.name for c in targets.module_classes(project, info)] == ["B"]


TARGETS = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 8)

        def forward(self, x):
            return self.fc(x)

    class Helper:
        pass

    def build_model(depth=2):
        return Net()

    def pair():
        m = Net()
        return m, torch.randn(1, 64)

    def helper(x):
        return x + 1

    model = Net()
    seq = nn.Sequential(nn.Linear(2, 2))
    made = build_model()
    number = helper(3)

    if __name__ == "__main__":
        local = Net()
        local(torch.randn(2, 64))
"""


@pytest.mark.parametrize(
    "needle, offset, expected",
    [
        ("class Net", 0, ("Net", "class", "class Net")),
        ("self.fc = nn.Linear", 4, ("Net", "class", "class Net")),  # in a method body
        ("return self.fc(x)", 0, ("Net", "class", "class Net")),
        ("def build_model", 5, ("build_model", "factory", "def build_model")),
        ("return Net()", 0, ("build_model", "factory", "def build_model")),
        ("def pair", 0, ("pair", "factory", "def pair")),
        ("model = Net()", 0, ("model", "instance", "model = Net()")),  # on the name
        ("model = Net()", 9, ("Net", "class", "class Net")),  # on the class in the call
        ("seq = nn.Sequential", 0, ("seq", "instance", "seq = nn.Sequential")),
        ("made = build_model()", 0, ("made", "instance", "made = build_model()")),
        ("local = Net()", 4, ("Net", "class", "class Net")),  # not importable: the class
        ("local(torch", 1, ("Net", "class", "class Net")),
        ("number = helper", 0, None),
        ("def helper", 4, None),
        ("class Helper", 0, None),
        ("import torch", 0, None),
    ],
)
def test_target_at(tmp_path, needle, offset, expected):
    path = write(tmp_path, "m.py", TARGETS)
    project, info = load(path)
    line = line_of(path, needle)
    character = path.read_text().splitlines()[line].index(needle) + offset
    found = targets.target_at(project, info, line, character)
    if expected is None:
        assert found is None
    else:
        name, kind, where = expected
        assert found is not None
        assert (found.target, found.kind, found.line) == (name, kind, line_of(path, where))


@pytest.mark.parametrize(
    "needle, expected",
    [
        ("model = Net()", ("model", "instance", "model = Net()")),
        ("made = build_model()", ("made", "instance", "made = build_model()")),
        ("local = Net()", ("Net", "class", "class Net")),  # under the main guard
        ("m = Net()", ("pair", "factory", "def pair")),  # inside a factory: the factory
        ("number = helper(3)", None),
    ],
)
def test_target_at_past_the_end_of_the_statement(tmp_path, needle, expected):
    """A right-click after the last character of `net = Net()` (the cursor at or past the end
    of the line) finds what the statement builds."""
    path = write(tmp_path, "m.py", TARGETS)
    project, info = load(path)
    line = line_of(path, needle)
    end = len(path.read_text().splitlines()[line])
    for character in (end, end + 5):
        found = targets.target_at(project, info, line, character)
        got = None if found is None else (found.target, found.kind, found.line)
        want = None if expected is None else (*expected[:2], line_of(path, expected[2]))
        assert got == want, (needle, character)


def test_target_at_past_the_end_in_a_plain_function(tmp_path):
    path = write(
        tmp_path,
        "m.py",
        "from torch import nn\nclass Net(nn.Module): pass\ndef main():\n    net = Net().eval()\n",
    )
    project, info = load(path)
    found = targets.target_at(project, info, 3, len("    net = Net().eval()"))
    assert found is not None and (found.target, found.kind, found.line) == ("Net", "class", 1)


def test_targets_in_lists_classes_instances_and_factories(tmp_path):
    path = write(tmp_path, "m.py", TARGETS)
    project, info = load(path)
    got = [(t.target, t.kind, t.line) for t in targets.targets_in(project, info)]
    assert got == [
        ("Net", "class", line_of(path, "class Net")),
        ("build_model", "factory", line_of(path, "def build_model")),
        ("pair", "factory", line_of(path, "def pair")),
        ("model", "instance", line_of(path, "model = Net()")),
        ("seq", "instance", line_of(path, "seq = nn.Sequential")),
        ("made", "instance", line_of(path, "made = build_model()")),
    ]


def test_a_function_with_arguments_is_a_factory_only_when_it_returns_a_model(tmp_path):
    """`build_model(cfg)` builds a model (traced as the file calls it, or with the arguments
    asked for); `make_optimizer(model, lr)` and `build_dataset(path)` do not, whatever
    their names say."""
    source = (
        "import torch\nfrom torch import nn\n"
        "class Net(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        "def build_model(cfg):\n    net = Net(cfg.dim)\n    return net\n"
        "def pair(dim, batch=1):\n    return Net(dim), torch.randn(batch, dim)\n"
        "def make_optimizer(model, lr):\n    return torch.optim.SGD(model.parameters(), lr)\n"
        "def build_dataset(path):\n    return list(open(path))\n"
    )
    path = write(tmp_path, "m.py", source)
    project, info = load(path)
    got = [(t.target, t.kind) for t in targets.targets_in(project, info)]
    assert got == [("Net", "class"), ("build_model", "factory"), ("pair", "factory")]


def test_a_function_returning_a_model_class_of_its_own_is_a_factory(tmp_path):
    """QA: `def outer(): class Inner(nn.Module): …; return Inner()` traced, but was no
    target (the editor said the file has no model) and a line inside it named none."""
    source = (
        "import torch\nfrom torch import nn\n"
        "def outer():\n"
        "    class Inner(nn.Module):\n"
        "        def forward(self, x):\n            return x * 2\n"
        "    return Inner()\n"
        "def pair():\n"
        "    class Local(nn.Module):\n"
        "        def forward(self, x):\n            return x + 1\n"
        "    m = Local()\n    return m, torch.randn(2)\n"
        "def helper():\n    class Plain:\n        pass\n    return Plain()\n"
    )
    path = write(tmp_path, "m.py", source)
    project, info = load(path)
    got = [(t.target, t.kind) for t in targets.targets_in(project, info)]
    assert got == [("outer", "factory"), ("pair", "factory")]
    line = source.splitlines().index("            return x * 2")
    found = targets.target_at(project, info, line, 12)
    assert found is not None and (found.target, found.kind) == ("outer", "factory")


def test_targets_in_a_file_without_models(tmp_path):
    path = write(tmp_path, "m.py", "import torch\nx = torch.zeros(3)\ndef f(a):\n    return a\n")
    project, info = load(path)
    assert targets.targets_in(project, info) == []


def test_target_at_utf16_columns(tmp_path):
    path = write(
        tmp_path,
        "m.py",
        "from torch import nn\nclass Net(nn.Module): pass\ns = '😀😀'; m = Net()\n",
    )
    project, info = load(path)
    # "m" is at str index 10, UTF-16 column 12 (each emoji is two UTF-16 units)
    found = targets.target_at(project, info, 2, 12)
    assert found is not None and (found.target, found.kind) == ("m", "instance")


def test_no_torch_imported():
    code = "import sys, torchscope.server.server; print('torch' in sys.modules)"

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_factory_building_a_model_with_a_method_chain(tmp_path) -> None:
    """examples/gpt2.py: `model = GPT2Model(...).eval()` then `return model, inputs`."""
    from pathlib import Path

    from torchscope.server.find_targets import Project, target_at

    example = Path(__file__).resolve().parents[2] / "examples" / "gpt2.py"
    project = Project((example.parent,))
    info = project.load(example)
    assert info is not None
    line = next(i for i, t in enumerate(example.read_text().splitlines()) if "GPT2Model(" in t)
    target = target_at(project, info, line, 8)
    assert target is not None and (target.target, target.kind) == ("gpt2", "factory")


def test_the_workspace_folder_of_a_file(tmp_path):
    """The folder a trace of the file runs in (multi-root: its own, not the first one)."""
    from torchscope.server.find_targets import workspace_folder

    a, b = (tmp_path / "a").resolve(), (tmp_path / "b").resolve()
    inner = b / "sub"
    for folder in (a, inner):
        folder.mkdir(parents=True)
    assert workspace_folder((a, b), b / "x.py") == b
    assert workspace_folder((a, b, inner), inner / "y.py") == inner
    assert workspace_folder((a,), tmp_path / "elsewhere.py") is None


# -- where the runner finds a project's package (src/ layouts) ------------------------------

SRC_MODEL = "from torch import nn\nclass Encoder(nn.Module): pass\n"
SUBCLASS = "from toolkit.encoder import Encoder\nclass Finetuned(Encoder): pass\n"


def _src_layout(ws: Path, src: str = "src") -> Path:
    write(ws, f"{src}/toolkit/__init__.py", "")
    write(ws, f"{src}/toolkit/encoder.py", SRC_MODEL)
    return write(ws, "scripts/finetune.py", SUBCLASS)


def test_a_package_found_through_the_runners_pythonpath(tmp_path):
    """`PYTHONPATH=lib` (relative: to the first workspace folder, where the runner starts), or an
    absolute folder."""
    ws = tmp_path.resolve()
    script = _src_layout(ws, "lib")
    assert classes(script, ws) == []
    project = targets.Project((ws,), python_path=("lib",))
    info = project.load(script)
    assert info is not None
    assert [c.name for c in targets.module_classes(project, info)] == ["Finetuned"]
    project = targets.Project((ws,), python_path=(str(ws / "lib"),))
    info = project.load(script)
    assert info is not None
    assert [c.name for c in targets.module_classes(project, info)] == ["Finetuned"]
    line = line_of(script, "class Finetuned")
    found = targets.target_at(project, info, line, 3)
    assert found is not None and (found.target, found.kind) == ("Finetuned", "class")


def test_a_src_folder_at_a_workspace_root_is_searched(tmp_path):
    ws = tmp_path.resolve()
    script = _src_layout(ws)
    assert classes(script, ws) == ["Finetuned"]
    assert classes(script) == []  # (no workspace folder: no guess)


@pytest.mark.parametrize(
    "insert",
    [
        'sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))',
        'sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))',
        'sys.path.append(os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "lib")))',
        'ROOT = Path(__file__).parent.parent\nsys.path.insert(0, str(ROOT / "lib"))',
        'ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))\nsys.path.insert(0, os.path.join(ROOT, "lib"))',
        'sys.path.insert(0, "{ws}/lib")',
        'sys.path.append("lib")',  # (relative: to the folder the runner runs in)
    ],
)
def test_a_package_found_through_sys_path_in_the_script(tmp_path, insert):
    ws = tmp_path.resolve()
    _src_layout(ws, "lib")
    header = "import os\nimport sys\nfrom pathlib import Path\n" + insert.format(ws=ws) + "\n"
    script = write(ws, "tools/train.py", header + SUBCLASS)
    assert classes(script, ws) == ["Finetuned"]


def test_sys_path_that_is_not_static_is_not_guessed(tmp_path):
    ws = tmp_path.resolve()
    _src_layout(ws, "lib")
    header = "import os, sys\nsys.path.insert(0, os.environ['LIB'])\n"
    script = write(ws, "tools/train.py", header + SUBCLASS)
    assert classes(script, ws) == []


def test_editable_installs_of_site_packages(tmp_path):
    """A `.pth` line naming a folder (`pip install -e .` of a src/ layout); its import lines
    and folders of the environment itself are not project folders."""
    ws = (tmp_path / "ws").resolve()
    _src_layout(ws, "lib")
    site = tmp_path / "venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "__editable__.toolkit-0.1.pth").write_text(f"{ws / 'lib'}\n")
    (site / "distutils-precedence.pth").write_text("import os; os.environ.get('x')\n")
    (site / "other.pth").write_text(f"# comment\n{site / 'inner'}\n/nonexistent/folder\n")
    (site / "inner").mkdir()
    assert targets.editable_folders([site]) == [ws / "lib"]
    script = ws / "scripts/finetune.py"
    project = targets.Project((ws,), python_path=tuple(map(str, targets.editable_folders([site]))))
    info = project.load(script)
    assert info is not None
    assert [c.name for c in targets.module_classes(project, info)] == ["Finetuned"]


def test_editable_finder_mappings(tmp_path):
    """setuptools' strict/compat editable installs: a finder module mapping each package to
    its folder."""
    ws = (tmp_path / "ws").resolve()
    _src_layout(ws, "lib")
    site = tmp_path / "site-pkgs"
    site.mkdir()
    (site / "__editable__.toolkit-0.1.pth").write_text(
        "import __editable___toolkit_0_1_finder; __editable___toolkit_0_1_finder.install()\n"
    )
    (site / "__editable___toolkit_0_1_finder.py").write_text(
        f"import sys\nMAPPING: dict[str, str] = {{'toolkit': {str(ws / 'lib' / 'toolkit')!r}}}\n"
    )
    assert targets.editable_folders([site]) == [ws / "lib"]


def test_the_runners_import_folders(monkeypatch):
    """The workspace's `.env` PYTHONPATH (as the extension passes it) first; not torchscope's
    own folder."""
    import json

    import torchscope
    from torchscope.server.runner_client import RUNNER_ENV, runner_import_folders

    monkeypatch.setenv(RUNNER_ENV, json.dumps({"PYTHONPATH": "src"}))
    folders = runner_import_folders()
    assert folders[0] == "src"
    assert str(Path(torchscope.__file__).resolve().parent.parent) not in folders


# -- models wrapped at import: torch.compile, .to(device) -----------------------------------

COMPILED = """
import torch
from torch import nn

class KwNet(nn.Module):
    def __init__(self, dim=4): super().__init__()

class ConvNet(nn.Module): pass

device = "cuda" if torch.cuda.is_available() else "cpu"
compiled = torch.compile(KwNet(dim=6))
model = ConvNet().to(device)
model = torch.compile(model)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
net = KwNet()
net = net.to(device).eval()
other = ConvNet()
other = make_something(other)
tc = torch.compile(lambda x: x)
"""


def test_compiled_and_moved_models_are_instances(tmp_path):
    path = write(tmp_path, "m.py", COMPILED)
    project, info = load(path)
    got = [(t.target, t.kind, t.line) for t in targets.targets_in(project, info)]
    assert got == [
        ("KwNet", "class", line_of(path, "class KwNet")),
        ("ConvNet", "class", line_of(path, "class ConvNet")),
        ("compiled", "instance", line_of(path, "compiled =")),
        ("model", "instance", line_of(path, "model = torch.compile")),
        ("net", "instance", line_of(path, "net = net.to")),
    ]
    for needle, expected in [
        ("compiled =", "compiled"),
        ("model = torch.compile", "model"),
        ("model = ConvNet()", "model"),  # (the model that `model` is at import)
        ("net = KwNet()", "net"),
    ]:
        found = targets.target_at(project, info, line_of(path, needle), 2)
        assert found is not None and (found.target, found.kind) == (expected, "instance"), needle
    # `other` ends as something else: its first line is the class it builds
    found = targets.target_at(project, info, line_of(path, "other = ConvNet()"), 12)
    assert found is not None and (found.target, found.kind) == ("ConvNet", "class")
    found = targets.target_at(project, info, line_of(path, "tc = "), 1)
    assert found is None


def test_a_torch_checkout_on_a_search_path_is_not_followed(tmp_path):
    """A PyTorch developer's editable install (or PYTHONPATH) of torch's sources: `nn.Module`
    is still judged by its name, not by the checkout's `class Module:`."""
    ws = tmp_path.resolve()
    write(ws, "pytorch/torch/__init__.py", "")
    write(ws, "pytorch/torch/nn/__init__.py", "from .modules import Module\n")
    write(ws, "pytorch/torch/nn/modules/__init__.py", "class Module:\n    pass\n")
    script = write(ws, "m.py", "import torch\nfrom torch import nn\nclass A(nn.Module): pass\n")
    write(ws, "b.py", "import torch\nclass B(torch.nn.Module): pass\n")
    project = targets.Project((ws,), python_path=("pytorch",))
    for path, expected in [(script, ["A"]), (ws / "b.py", ["B"])]:
        info = project.load(path)
        assert info is not None
        assert [c.name for c in targets.module_classes(project, info)] == expected


def test_relative_folders_in_a_multi_root_workspace(tmp_path):
    """The script's own `sys.path.append("lib")` is read from its workspace folder (where its
    trace runs); a relative PYTHONPATH entry from the first folder (where the runner starts)."""
    a, b = (tmp_path / "a").resolve(), (tmp_path / "b").resolve()
    _src_layout(a, "shared")
    _src_layout(b, "lib")
    own = write(b, "tools/own.py", "import sys\nsys.path.append('lib')\n" + SUBCLASS)
    env = write(b, "tools/env.py", SUBCLASS)
    assert classes(own, a, b) == ["Finetuned"]
    assert classes(env, a, b) == []
    project = targets.Project((a, b), python_path=("shared",))
    info = project.load(env)
    assert info is not None
    assert [c.name for c in targets.module_classes(project, info)] == ["Finetuned"]
