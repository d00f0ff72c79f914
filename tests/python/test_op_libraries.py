"""Which operator libraries the runner destroys before it imports the user's files again: those
the user's code made (directly, through torch.library.define, through custom_op), never those
an installed package made. The whole path (an edited file that registers operators, traced
again in the warm runner) is in test_runner.py."""

from __future__ import annotations

import torch

from torchscope.op_libraries import destroy_users_libraries, users_libraries_recorded

MAKES_A_LIBRARY = """
import torch
lib = torch.library.Library({ns!r}, "DEF")
lib.define("twice(Tensor x) -> Tensor")
lib.impl("twice", lambda x: x * 2, "CPU")
"""


def run_as(filename: str, ns: str) -> dict:
    scope: dict = {}
    with users_libraries_recorded():
        exec(compile(MAKES_A_LIBRARY.format(ns=ns), filename, "exec"), scope)
    return scope


def test_a_users_library_is_destroyed_and_can_be_made_again(tmp_path):
    user_file = str(tmp_path / "model.py")
    run_as(user_file, "torchscope_ut_user")
    assert torch.ops.torchscope_ut_user.twice(torch.ones(1)).item() == 2
    assert destroy_users_libraries() == 1
    run_as(user_file, "torchscope_ut_user")  # no "Only a single TORCH_LIBRARY …"
    assert torch.ops.torchscope_ut_user.twice(torch.ones(1)).item() == 2
    assert destroy_users_libraries() == 1


def test_an_installed_packages_library_stays(tmp_path):
    package_file = str(tmp_path / "lib" / "site-packages" / "somepkg" / "ops.py")
    scope = run_as(package_file, "torchscope_ut_pkg")
    assert destroy_users_libraries() == 0
    assert torch.ops.torchscope_ut_pkg.twice(torch.ones(1)).item() == 2
    scope["lib"]._destroy()  # (this test's own cleanup)


def test_torch_is_left_as_it_was():
    init = torch.library.Library.__init__
    with users_libraries_recorded():
        assert torch.library.Library.__init__ is not init
    assert torch.library.Library.__init__ is init
