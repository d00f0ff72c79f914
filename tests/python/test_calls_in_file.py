"""What the file itself calls its model with (server/calls_in_file.py): the input of a call
of the model and the arguments it builds it with, read statically."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from test_server_find_targets import line_of, load, write  # (tests/python is on sys.path)

from torchscope.server import calls_in_file


def input_call(*args: Any) -> Optional[str]:
    """The expression `found_input` finds (its source aside)."""
    found = calls_in_file.found_input(*args)
    return found.text if found is not None else None


@pytest.mark.parametrize(
    "source, target, expected",
    [
        ("model = Net()\nout = model(torch.randn(2, 64))\n", "model", "torch.randn(2, 64)"),
        ("Net()(torch.zeros(1, 3, 32, 32))\n", "Net", "torch.zeros(1, 3, 32, 32)"),
        (
            "if __name__ == '__main__':\n    m = Net()\n    m(torch.ones(1), torch.ones(2))\n",
            "Net",
            "(torch.ones(1), torch.ones(2))",
        ),
        (
            "m = make()\nm(input_ids=torch.zeros(1, 4, dtype=torch.long))\n",
            "make",
            "{'input_ids': torch.zeros(1, 4, dtype=torch.long)}",
        ),
        # a name the file binds once stands for its value
        ("model = Net()\nx = torch.randn(2, 64)\nmodel(x)\n", "model", "torch.randn(2, 64)"),
        (
            "def main():\n    b = 4\n    x = torch.zeros(b, 3, 32, 32)\n    Net()(x)\n",
            "Net",
            "torch.zeros(4, 3, 32, 32)",
        ),
        ("model = Net()\nx = torch.ones(1)\nx = torch.ones(2)\nmodel(x)\n", "model", None),
        # one dict is one argument (a batch), not keywords
        (
            "model = Net()\nbatch = {'x': torch.ones(2)}\nmodel(batch)\n",
            "model",
            "({'x': torch.ones(2)},)",
        ),
        (
            "model = Net()\nmodel([torch.ones(1), torch.ones(2)])\n",
            "model",
            "([torch.ones(1), torch.ones(2)],)",
        ),
        ("def f(x):\n    model(x)\nmodel = Net()\nx = torch.ones(1)\n", "model", None),
        ("model = Net()\nx = torch.load('batch.pt')\nmodel(x)\n", "model", None),  # a file
        ("model = Net()\nds = data.MNIST('/d', download=True)\nmodel(ds[0])\n", "model", None),
        ("model = Net()\nmodel.forward(torch.randn(3, 64))\n", "model", "torch.randn(3, 64)"),
        ("Net(torch.randn(2))\n", "Net", None),  # a constructor call, not a forward
        ("model = Net()\nmodel(torch.ones(1), k=2)\n", "model", None),  # mixed
        ("other = Net()\nother(torch.ones(1))\n", "model", None),
    ],
)
def test_input_call(tmp_path, source, target, expected):
    header = (
        "import torch\nfrom torch import nn\nfrom torchvision import datasets as data\n"
        "class Net(nn.Module): pass\ndef make(): return Net()\n"
    )
    path = write(tmp_path, "m.py", header + source)
    project, info = load(path)
    assert input_call(project, info, target) == expected


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def main():\n    net = Net(12)\n    net(torch.randn(2, 12))\n", ("12", 9)),
        (
            "if __name__ == '__main__':\n    Net(Config(dim=8), act=nn.GELU())\n",
            ("Config(dim=8), act=nn.GELU()", 9),
        ),
        ("net = Net(Config(dim=8), depth=2)\n", ("Config(dim=8), depth=2", 8)),
        ("net = Net(DIM, dtype=torch.float16)\n", ("DIM, dtype=torch.float16", 8)),
        ("net = Net(act=nn.GELU(), sizes=(3, 5))\n", ("act=nn.GELU(), sizes=(3, 5)", 8)),
        ("def main(cfg):\n    Net(cfg)\n", None),  # a local: only the program knows it
        ("def main(args):\n    Net(args.dim)\n", None),
        ("net = Net(torch.load('cfg.pt'))\n", None),  # may read a file: never run
        ("net = Net(build(3))\n", None),  # a function of the file: may do anything
        ("net = Net(**KW)\n", ("**KW", 8)),  # a module-level dict of plain values
        ("def main(cfg):\n    Net(**cfg)\n", None),
        ("def main():\n    cfg = Config(dim=8)\n    Net(cfg)\n", ("Config(dim=8)", 10)),
        ("def main():\n    vocab = build(3)\n    Net(vocab)\n", None),
        ("net = Net(GPT2Config(n_layer=2))\n", ("GPT2Config(n_layer=2)", 8)),
        ("net = Net(transformers.LlamaConfig())\n", ("transformers.LlamaConfig()", 8)),
        ("net = Net(AutoConfig.from_pretrained('gpt2'))\n", None),  # downloads
        ("net = Net(config.load())\n", None),
        ("net = Net()\n", None),  # no arguments: nothing to find
        ("a = Net(DIM)\nb = Net(3)\n", ("DIM", 8)),  # the first by line
    ],
)
def test_ctor_call(tmp_path, source, expected):
    """The arguments the file's own construction of a class passes, when they can be
    evaluated in its namespace without running anything but constructors of values."""
    header = (
        "import torch, transformers\nfrom torch import nn; from transformers import GPT2Config, AutoConfig\n"
        "DIM = 64\nKW = {}\n"
        "class Config: pass\nclass Net(nn.Module): pass\ndef build(n): return n\n"
    )
    path = write(tmp_path, "m.py", header + source)
    project, info = load(path)
    found = calls_in_file.ctor_call(info, "Net")
    assert ((found.text, found.line) if found and found.usable else None) == expected
    assert found is None or not found.argparse_defaults


SCOPED_HEADER = """import torch
from torch import nn
class Config:
    def __init__(self, dim):
        self.dim = dim
class Net(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc = nn.Linear(cfg.dim, 2)
    def forward(self, x):
        return self.fc(x)
"""


@pytest.mark.parametrize(
    "source, input_expected, ctor_expected",
    [
        # the README's own examples: a parameter named like the variable elsewhere in the file
        # (forward's `x`, __init__'s `cfg`) is another scope's name, not a second binding
        (
            "def main():\n    cfg = Config(dim=8)\n    model = Net(cfg)\n"
            "    x = torch.randn(2, 8)\n    model(x)\n",
            "torch.randn(2, 8)",
            "Config(dim=8)",
        ),
        # the module's own name, read in a function that does not bind it
        (
            "cfg = Config(dim=8)\nx = torch.randn(2, 8)\n"
            "def main():\n    model = Net(cfg)\n    model(x)\n",
            "torch.randn(2, 8)",
            "Config(dim=8)",
        ),
        # a function's local, not the module's name of the same spelling
        (
            "x = torch.randn(5, 8)\ncfg = Config(dim=3)\n"
            "def main():\n    cfg = Config(dim=8)\n    model = Net(cfg)\n"
            "    x = torch.ones(2, 8)\n    model(x)\n",
            "torch.ones(2, 8)",
            "Config(dim=8)",
        ),
        # bound twice in the call's scope, or a parameter there: the program decides
        (
            "def main(cfg):\n    model = Net(cfg)\n    x = torch.ones(1, 8)\n"
            "    x = torch.ones(2, 8)\n    model(x)\n",
            None,
            None,
        ),
        # `global x` in the calling function: whatever the program last stored there
        (
            "x = torch.ones(1, 8)\ndef main():\n    global x\n    model = Net(Config(dim=8))\n"
            "    model(x)\n",
            None,
            "Config(dim=8)",
        ),
    ],
)
def test_names_resolve_in_the_scope_of_the_call(tmp_path, source, input_expected, ctor_expected):
    path = write(tmp_path, "m.py", SCOPED_HEADER + source)
    project, info = load(path)
    assert input_call(project, info, "Net") == input_expected
    found = calls_in_file.ctor_call(info, "Net")
    assert (found.text if found and found.usable else None) == ctor_expected


ARGPARSE = """
import argparse
import torch
from torch import nn
class Net(nn.Module):
    pass
def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("-d", "--depth", default="3", type=int)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--no-bias", action="store_true")
    parser.add_argument("--data", required=True)
    parser.add_argument("--act", default=nn.GELU)
    args = parser.parse_args()
    {call}
"""


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            "model = Net(args.hidden_size, depth=args.depth, bias=not args.no_bias)",
            "64, depth=3, bias=not False",
        ),
        (
            "model = Net(args.hidden_size * 2, p=args.dropout, act=args.act)",
            "64 * 2, p=0.1, act=nn.GELU",
        ),
        ("model = Net(args.data)", None),  # required: no default to stand in
        ("model = Net(args.missing)", None),
        ("model = Net(opts.hidden_size)", None),  # not the parser's result
    ],
)
def test_ctor_call_with_argparse_defaults(tmp_path, call, expected):
    """`Net(args.hidden_size)` in a script: argparse's defaults stand in for the command line
    (what `python train.py` with no options builds)."""
    path = write(tmp_path, "train.py", ARGPARSE.format(call=call))
    project, info = load(path)
    found = calls_in_file.ctor_call(info, "Net")
    assert (found.text if found and found.usable else None) == expected
    if found and found.usable:
        assert found.argparse_defaults and found.line == line_of(path, call) + 1


def test_ctor_call_that_cannot_be_evaluated_is_given_as_written(tmp_path):
    """For the user to start from: the arguments as the file writes them."""
    source = (
        "import torch\nfrom torch import nn\nclass Net(nn.Module): pass\n"
        "def main(tok, args):\n    Net(len(tok), dim=args.dim, **extra)\n"
    )
    path = write(tmp_path, "m.py", source)
    project, info = load(path)
    found = calls_in_file.ctor_call(info, "Net")
    assert found == ("len(tok), dim=args.dim, **extra", 5, False, False)


def test_input_call_with_argparse_defaults(tmp_path):
    call = "model = Net(args.hidden_size)\n    model(torch.randn(args.depth, args.hidden_size))"
    path = write(tmp_path, "train.py", ARGPARSE.format(call=call))
    project, info = load(path)
    assert input_call(project, info, "Net") == "torch.randn(3, 64)"


def test_calls_inside_methods_and_nested_functions_resolve_their_names(tmp_path):
    source = (
        "class Outer(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        cfg = Config(dim=8)\n"
        "        self.net = Net(cfg)\n"
        "def main():\n"
        "    def run():\n"
        "        x = torch.zeros(3, 8)\n"
        "        Net(Config(dim=8))(x)\n"
        "    run()\n"
    )
    path = write(tmp_path, "m.py", SCOPED_HEADER + source)
    project, info = load(path)
    found = calls_in_file.ctor_call(info, "Net")
    assert found is not None and found.usable and found.text == "Config(dim=8)"
    assert input_call(project, info, "Net") == "torch.zeros(3, 8)"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # a factory builds one size, main() another and calls that one: its input fits it
        (
            "def small():\n    return Encoder(6)\n\n"
            "def main():\n    encoder = Encoder(24)\n    encoder(torch.randn(7, 24))\n",
            ("24", "torch.randn(7, 24)"),
        ),
        # built and called at once
        (
            "tiny = Encoder(6)\n\ndef main():\n    Encoder(24)(torch.randn(7, 24))\n",
            ("24", "torch.randn(7, 24)"),
        ),
        # no construction is called: the first, as before
        ("a = Encoder(6)\nb = Encoder(24)\n", ("6", None)),
    ],
)
def test_the_construction_used_is_the_one_whose_instance_the_file_calls(tmp_path, source, expected):
    """A QA pass: the model was built as the factory builds it (Encoder(6)) and called with
    the input main() gives its own Encoder(24): the forward raised on the shapes."""
    header = (
        "import torch\nfrom torch import nn\n"
        "class Encoder(nn.Module):\n"
        "    def __init__(self, dim):\n        super().__init__()\n"
        "        self.fc = nn.Linear(dim, dim)\n"
        "    def forward(self, x):\n        return self.fc(x)\n\n"
    )
    path = write(tmp_path, "m.py", header + source)
    project, info = load(path)
    found = calls_in_file.ctor_call(info, "Encoder")
    assert (found.text if found else None, input_call(project, info, "Encoder")) == (expected)


@pytest.mark.parametrize(
    "source, target, expected",
    [
        # positional and keyword arguments together: the positional ones named after the
        # forward's parameters, as one dict (it was no input: "give one")
        ("Net()(torch.ones(1), k=2)\n", "Net", "{'x': torch.ones(1), 'k': 2}"),
        (
            "m = Net()\nm(torch.ones(1), torch.ones(2), k=2)\n",
            "Net",
            "{'x': torch.ones(1), 'y': torch.ones(2), 'k': 2}",
        ),
        ("model = Net()\nmodel(torch.ones(1), k=2)\n", "model", "{'x': torch.ones(1), 'k': 2}"),
        # more positionals than the forward names, or one named twice: not an input
        ("Net()(torch.ones(1), torch.ones(2), torch.ones(3), k=2)\n", "Net", None),
        ("Net()(torch.ones(1), x=2)\n", "Net", None),
        # `*args`: a positional past the named ones has no name
        ("Star()(torch.ones(1), torch.ones(2), k=2)\n", "Star", None),
        ("Star()(torch.ones(1), k=2)\n", "Star", "{'x': torch.ones(1), 'k': 2}"),
    ],
)
def test_input_call_with_positionals_and_keywords(tmp_path, source, target, expected):
    header = (
        "import torch\nfrom torch import nn\n"
        "class Net(nn.Module):\n    def forward(self, x, y=None, *, k=1):\n        return x\n"
        "class Star(nn.Module):\n    def forward(self, x, *rest, k=1):\n        return x\n"
    )
    path = write(tmp_path, "m.py", header + source)
    project, info = load(path)
    assert input_call(project, info, target) == expected


_HEADER = (
    "import os\nimport subprocess\nimport numpy as np\nimport torch\nfrom torch import nn\n"
    "from torch import randn as rn, load\nimport subprocess as sp\n"
    "import torch.nn.functional as F\n"
    "class Net(nn.Module): pass\n"
)


@pytest.mark.parametrize(
    "call",
    [
        "model(os.system('touch pwned') or torch.randn(2, 4))",
        "model(torch.load('batch.pt', weights_only=False))",
        "model(subprocess.run(['sh', '-c', 'x']) and torch.ones(2))",
        "model(torch.from_numpy(np.load('x.npy')))",
        "model(torch.randn(2, 4).new_tensor(os.getpid()))",
        "model(torch.hub.load('a/b', 'c'))",
        "model(getattr(os, 'system')('x'))",
        "model(load('batch.pt'))",
        # (a security review's: a dunder reached through a value, an array's writer, an
        # import that rebinds a builtin's or torch.nn's name)
        "model(torch.randn(1).backward.__globals__['torch'].serialization.os.system('x') or torch.randn(3, 4))",
        "model(np.array(['echo x']).tofile('written.sh', sep='') or torch.randn(3, 4))",
        "model(sp.Popen('touch x', shell=True) and torch.randn(3, 4))",
    ],
)
def test_an_input_call_that_may_run_anything_is_not_taken(tmp_path, call):
    """The input written in the file's call of its model is evaluated by the trace: like a
    constructor's arguments, it may only build values (a security QA pass had `os.system`
    and `torch.load` of a pickle run from a main-guard line at one click of the lens)."""
    path = write(
        tmp_path, "m.py", _HEADER + f"if __name__ == '__main__':\n    model = Net()\n    {call}\n"
    )
    project, info = load(path)
    assert input_call(project, info, "Net") is None


@pytest.mark.parametrize(
    "call",
    [
        "torch.randn(2, 4).float()",
        "torch.randint(0, 10, (1, 8)).long()",
        "torch.randn(2, 3).to(torch.float16)",
        "torch.ones(2, 4).unsqueeze(0).expand(3, 2, 4)",
        "torch.from_numpy(np.zeros((2, 4), dtype=np.float32))",
        "torch.tensor(np.random.rand(2, 4), dtype=torch.float32)",
        "torch.cat([torch.ones(1, 4), torch.zeros(1, 4)])",
        "rn(2, 4)",
        "F.one_hot(torch.randint(0, 10, (4,)), 10).float()",
    ],
)
def test_an_input_call_that_only_builds_values_is_still_taken(tmp_path, call):
    path = write(
        tmp_path,
        "m.py",
        _HEADER + f"if __name__ == '__main__':\n    model = Net()\n    model({call})\n",
    )
    project, info = load(path)
    assert input_call(project, info, "Net") == call


ARGPARSE_HELPER = """
import argparse
import torch
from torch import nn
class Net(nn.Module):
    pass
def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--in-channels", type=int, default=1)
    p.add_argument("--width", type=int, default=8)
    {parse}
def main():
    {bind}
    model = Net(args.in_channels, width=args.width).to("cpu")
"""


@pytest.mark.parametrize(
    "parse, bind",
    [
        ("return p.parse_args()", "args = get_args()"),
        ("args = p.parse_args()\n    return args", "args = get_args()"),
        ("return p.parse_known_args()[0]", "args = get_args()"),
        ("return p", "args = get_args().parse_known_args()[0]"),
    ],
)
def test_argparse_defaults_through_a_function_that_parses(tmp_path, parse, bind):
    """The most common training script: `args = get_args()`, the parser in a function of
    its own that returns what `parse_args()` gives."""
    path = write(tmp_path, "train.py", ARGPARSE_HELPER.format(parse=parse, bind=bind))
    project, info = load(path)
    found = calls_in_file.ctor_call(info, "Net")
    assert found is not None and found.usable and found.text == "1, width=8", found


ARGPARSE_PASSED = """
import argparse
import torch
from torch import nn
class Net(nn.Module):
    pass
def main(opts):
    model = Net(opts.in_channels, width=opts.width)
if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--in-channels", type=int, default=1)
    p.add_argument("--width", type=int, default=8)
    main({arg})
"""


@pytest.mark.parametrize("arg", ["p.parse_args()", "p.parse_known_args()[0]"])
def test_argparse_defaults_passed_to_the_function_that_builds(tmp_path, arg):
    """`main(parser.parse_args())`: the parameter that takes the parser's result."""
    path = write(tmp_path, "train.py", ARGPARSE_PASSED.format(arg=arg))
    project, info = load(path)
    found = calls_in_file.ctor_call(info, "Net")
    assert found is not None and found.usable and found.text == "1, width=8", found


def test_an_example_a_factory_returns_that_may_run_anything_is_not_taken(tmp_path):
    source = _HEADER + (
        "def build():\n    return Net(), os.system('touch pwned') or torch.randn(3, 4)\n"
    )
    project, info = load(write(tmp_path, "m.py", source))
    assert input_call(project, info, "Net") is None
    fine = _HEADER + "def build():\n    return Net(), torch.randn(3, 4).float()\n"
    project, info = load(write(tmp_path, "n.py", fine))
    assert input_call(project, info, "Net") == "torch.randn(3, 4).float()"


@pytest.mark.parametrize(
    "header, call, usable",
    [
        ("from os import system as RunConfig\n", "Net(RunConfig('touch x'))", False),
        ("from os import system as int\n", "Net(int('touch x'))", False),
        ("import subprocess as nn\n", "Net(nn.Popen('touch x'))", False),
        ("from transformers import GPT2Config\n", "Net(GPT2Config(n_layer=2))", True),
        ("import torch.nn as nn\n", "Net(act=nn.GELU())", True),
        ("", "Net(int('3'), torch.zeros(2))", True),
    ],
)
def test_constructor_arguments_judge_names_as_their_imports_make_them(
    tmp_path, header, call, usable
):
    source = f"import torch\nimport torch.nn\n{header}class Net(torch.nn.Module): pass\n"
    source += f"if __name__ == '__main__':\n    model = {call}\n"
    project, info = load(write(tmp_path, "m.py", source))
    found = calls_in_file.ctor_call(info, "Net")
    assert found is not None and found.usable is usable, found
