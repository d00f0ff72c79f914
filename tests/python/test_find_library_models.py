"""Models built from an installed library's classes (x-transformers' TransformerWrapper,
diffusers' UNet2DConditionModel, einops' Rearrange layer): their bases are read from the
library's source in site-packages, statically as the project's own files are, so a file's
`model = Wrapper(…)` and `class Mine(Wrapper)` are models the lenses and `trace FILE.py`
find. Nothing is imported."""

from __future__ import annotations

from pathlib import Path

from test_server_find_targets import write  # (tests/python is on sys.path)

from torchscope.server import find_targets as targets


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site-packages"
    write(site, "fakelib/__init__.py", "from fakelib.core import Wrapper, Decoder, helper, Plain\n")
    write(
        site,
        "fakelib/core.py",
        """
        from torch.nn import Module
        from .blocks import Block

        class Decoder(Block):
            pass

        class Wrapper(Module):
            pass

        class Plain:
            pass

        def helper():
            return 1
        """,
    )
    write(
        site,
        "fakelib/blocks.py",
        """
        import torch

        class Block(torch.nn.Module):
            pass
        """,
    )
    write(site, "otherlib/__init__.py", "from fakelib import Wrapper as Reexported\n")
    return site


USER = """
import torch
from fakelib import Wrapper, Decoder, helper, Plain
from otherlib import Reexported

model = Wrapper(num_tokens=256, attn_layers=Decoder(dim=32))
dec = Decoder()
again = Reexported()
tokens = torch.randint(0, 256, (1, 16))
value = helper()
plain = Plain()

class Mine(Wrapper):
    pass

class NotAModel(Plain):
    pass
"""


def _targets(tmp_path: Path, site: Path | None) -> list[str]:
    user = write(tmp_path / "project", "lm.py", USER)
    project = targets.Project((user.parent,), library_roots=(site,) if site else ())
    info = project.load(user)
    assert info is not None
    return [t.target for t in targets.targets_in(project, info)]


def test_instances_and_subclasses_of_a_librarys_model_classes_are_models(tmp_path):
    assert _targets(tmp_path, _site(tmp_path)) == ["model", "dec", "again", "Mine"]


def test_without_the_librarys_folder_they_are_not(tmp_path):
    assert _targets(tmp_path, None) == []


def test_a_library_file_that_does_not_parse_or_loops_is_no_model(tmp_path):
    site = tmp_path / "site-packages"
    write(site, "broken/__init__.py", "class Broken(:\n")
    write(site, "loop/__init__.py", "from loop.a import A\n")
    write(site, "loop/a.py", "from loop import A\n")
    user = write(
        tmp_path / "project",
        "m.py",
        "from broken import Broken\nfrom loop import A\nx = Broken()\ny = A()\n",
    )
    project = targets.Project((user.parent,), library_roots=(site,))
    info = project.load(user)
    assert info is not None
    assert targets.targets_in(project, info) == []


def test_only_class_names_are_looked_up_and_within_a_budget(tmp_path, monkeypatch):
    """A lower-case name (`tqdm`, `nx.path_graph`) is no class: no library file is read for
    it; a lookup that would parse more library source than its budget is no model."""
    site = _site(tmp_path)
    user = write(tmp_path / "project", "m.py", "import fakelib\nv = fakelib.helper()\n")
    project = targets.Project((user.parent,), library_roots=(site,))
    info = project.load(user)
    assert info is not None and targets.targets_in(project, info) == []
    assert list(project._cache) == [user.resolve()]

    monkeypatch.setattr(targets, "_LIBRARY_LOOKUP_MAX", 10)  # (fewer bytes than any file)
    lm = write(tmp_path / "project", "lm.py", USER)
    project = targets.Project((lm.parent,), library_roots=(site,))
    info = project.load(lm)
    assert info is not None and targets.targets_in(project, info) == []
