"""torch's process-wide settings a trace (and the runner, between files) puts back:
`state.GlobalSettings`, when a setting can't be read or put back."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchscope
from torchscope.state import GlobalSettings


def _unreadable() -> str:
    raise RuntimeError("not in this build")


def test_a_setting_this_build_lacks_leaves_the_others_put_back(monkeypatch):
    """One setting that can't be read (a backend this build lacks) shifted every later one
    onto the wrong getter: deterministic algorithms switched on stayed on."""
    monkeypatch.setattr(torch, "get_float32_matmul_precision", _unreadable)
    settings = GlobalSettings()
    assert not torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    threads = torch.get_num_threads()
    torch.set_num_threads(threads + 1)
    try:
        assert settings.restore() == []
        assert not torch.are_deterministic_algorithms_enabled()
        assert torch.get_num_threads() == threads
    finally:
        torch.use_deterministic_algorithms(False)
        torch.set_num_threads(threads)


class SetsPrecision(nn.Module):
    def forward(self, x):
        torch.set_float32_matmul_precision("medium")
        return x + 1


def test_a_setting_that_cannot_be_put_back_is_said(monkeypatch):
    """A setting the forward changed that would not go back was dropped without a word."""
    before = torch.get_float32_matmul_precision()

    def refuse(value: str) -> None:
        raise RuntimeError("refused")

    real = torch.set_float32_matmul_precision
    graph = None
    try:
        with monkeypatch.context() as m:
            # the forward's own call goes through; the put back after it is refused
            calls = []

            def once_then_refuse(value: str) -> None:
                calls.append(value)
                if len(calls) > 1:
                    refuse(value)
                real(value)

            m.setattr(torch, "set_float32_matmul_precision", once_then_refuse)
            graph = torchscope.trace(SetsPrecision(), torch.ones(2), values=False, costs=False)
    finally:
        real(before)
    assert any(
        "float32 matmul precision" in w and "could not be put back" in w for w in graph.warnings
    ), graph.warnings


@pytest.fixture(autouse=True)
def _settings_as_they_were():
    precision = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(precision)
