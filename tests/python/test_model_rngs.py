"""A trace leaves the random generators the model holds as they were: a `torch.Generator`, a
numpy `Generator` or `RandomState`, a `random.Random`, as a module's attribute, in a dict or
list a module holds, or among the forward's arguments."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import torchscope


class Noisy(nn.Module):
    """Adds noise drawn from `self.draw(shape)`: the generator it holds is built by `make`."""

    def __init__(self, make: Callable[[], Any], draw: Callable[[Any, int], torch.Tensor]) -> None:
        super().__init__()
        self.rng = make()
        self.draw = draw

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.draw(self.rng, x.shape[0])


_KINDS = {
    "torch": (
        lambda: torch.Generator().manual_seed(0),
        lambda g, n: torch.randn(n, generator=g),
    ),
    "numpy-generator": (
        lambda: np.random.default_rng(0),
        lambda g, n: torch.from_numpy(g.standard_normal(n)).float(),
    ),
    "numpy-randomstate": (
        lambda: np.random.RandomState(0),
        lambda g, n: torch.from_numpy(g.standard_normal(n)).float(),
    ),
    "numpy-bitgenerator": (
        lambda: np.random.PCG64(0),
        lambda g, n: torch.from_numpy(np.random.Generator(g).standard_normal(n)).float(),
    ),
    "python-random": (
        lambda: random.Random(0),
        lambda g, n: torch.tensor([g.gauss(0.0, 1.0) for _ in range(n)]),
    ),
}


def _first_forwards(build: Callable[[], nn.Module], x: torch.Tensor, trace_args=None):
    """The outputs of two forwards of a model built fresh, untraced, and of the same after a
    trace: a trace must not change them."""
    plain = build()
    expected = [plain(x), plain(x)]
    traced = build()
    torchscope.trace(traced, *(trace_args or (x,)))
    return expected, [traced(x), traced(x)]


@pytest.mark.parametrize("kind", list(_KINDS))
def test_generator_attribute_restored(kind: str) -> None:
    make, draw = _KINDS[kind]
    expected, got = _first_forwards(lambda: Noisy(make, draw), torch.zeros(3))
    assert torch.equal(expected[0], got[0]), f"the trace advanced the model's {kind} generator"
    assert torch.equal(expected[1], got[1])


def test_the_generator_noticed_in_a_nested_module() -> None:
    make, draw = _KINDS["torch"]

    def build() -> nn.Module:
        torch.manual_seed(1)
        return nn.Sequential(nn.Linear(3, 3), Noisy(make, draw))

    expected, got = _first_forwards(build, torch.ones(3))
    assert torch.equal(expected[0], got[0])


class InADict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gens = {"noise": torch.Generator().manual_seed(0)}
        self.more = [np.random.default_rng(0)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noise = torch.randn(x.shape, generator=self.gens["noise"])
        return x + noise + torch.from_numpy(self.more[0].standard_normal(x.shape[0])).float()


def test_generator_in_dict_and_list_attributes_restored() -> None:
    expected, got = _first_forwards(InADict, torch.zeros(3))
    assert torch.equal(expected[0], got[0]), "a generator in a dict or list attribute advanced"


class Drawing(nn.Module):
    def forward(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return x + torch.randn(x.shape, generator=generator)


def test_generator_argument_restored() -> None:
    g = torch.Generator().manual_seed(0)
    before = g.get_state()
    torchscope.trace(Drawing(), torch.zeros(3), g)
    assert torch.equal(g.get_state(), before), "the generator passed to the forward advanced"


def test_generator_keyword_argument_and_in_an_object_restored() -> None:
    class Sampler:
        def __init__(self) -> None:
            self.rng = np.random.default_rng(0)
            self.py = random.Random(0)

    class Sampling(nn.Module):
        def forward(self, x: torch.Tensor, *, generator: torch.Generator, sampler: Sampler):
            noise = torch.from_numpy(sampler.rng.standard_normal(x.shape[0])).float()
            return x + torch.randn(x.shape, generator=generator) + noise + sampler.py.random()

    g = torch.Generator().manual_seed(0)
    sampler = Sampler()
    before = (g.get_state(), sampler.rng.bit_generator.state, sampler.py.getstate())
    torchscope.trace(Sampling(), torch.zeros(3), generator=g, sampler=sampler)
    assert torch.equal(g.get_state(), before[0])
    assert sampler.rng.bit_generator.state == before[1]
    assert sampler.py.getstate() == before[2]


class Failing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gen = torch.Generator().manual_seed(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.randn(3, generator=self.gen)
        raise RuntimeError("boom")


def test_generator_restored_when_the_forward_raises() -> None:
    m = Failing()
    before = m.gen.get_state()
    with pytest.raises(RuntimeError, match="boom"):
        torchscope.trace(m, torch.zeros(3))
    assert torch.equal(m.gen.get_state(), before)


def test_a_generator_the_forward_rebinds_is_back_with_its_state() -> None:
    class Reseeding(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gen = torch.Generator().manual_seed(0)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            torch.randn(3, generator=self.gen)
            self.gen = torch.Generator().manual_seed(5)
            return x + torch.randn(x.shape, generator=self.gen)

    m = Reseeding()
    gen, before = m.gen, m.gen.get_state()
    torchscope.trace(m, torch.zeros(3))
    assert m.gen is gen
    assert torch.equal(gen.get_state(), before)


def test_a_shared_generator_is_kept_once_and_restored() -> None:
    g = torch.Generator().manual_seed(0)
    make = lambda: g  # noqa: E731 - every layer holds the same one
    draw = _KINDS["torch"][1]
    model = nn.Sequential(*(Noisy(make, draw) for _ in range(3)))
    before = g.get_state()
    torchscope.trace(model, torch.zeros(3))
    assert torch.equal(g.get_state(), before)


def test_a_system_random_attribute_is_left_alone() -> None:
    class Sys(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rng = random.SystemRandom()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.rng.random()

    graph = torchscope.trace(Sys(), torch.zeros(3))
    assert not graph.warnings


class NoiseSource:
    """A plain helper object holding the generator: two levels below the module."""

    def __init__(self) -> None:
        self.gen = torch.Generator().manual_seed(0)


_FILE_GENERATOR = torch.Generator().manual_seed(0)  # one the forward reads as a global


def test_a_torch_generator_any_call_draws_from_is_restored_wherever_it_is_held() -> None:
    """Only generators one level into a module's attributes (or among its arguments) were
    kept: one inside a helper object, or a global, advanced with the trace, and the
    program's next draws differed."""

    class Deep(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.noise = NoiseSource()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + torch.randn(x.shape, generator=self.noise.gen)
            return x.bernoulli_(0.5, generator=_FILE_GENERATOR)

    m = Deep()
    before = (m.noise.gen.get_state(), _FILE_GENERATOR.get_state())
    torchscope.trace(m, torch.zeros(3))
    assert torch.equal(m.noise.gen.get_state(), before[0]), "the helper's generator advanced"
    assert torch.equal(_FILE_GENERATOR.get_state(), before[1]), "the global generator advanced"


def test_torch_s_own_generator_named_in_a_call_is_put_back_as_before_the_forward() -> None:
    """`generator=torch.default_generator` after a draw from it: kept part way through (the
    first fix's `keep_generator`) and put back after the global state, the RNG stayed one
    draw ahead (review)."""

    class Named(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + torch.rand(3)
            return x + torch.randn(3, generator=torch.default_generator)

    torch.manual_seed(0)
    before = torch.get_rng_state()
    torchscope.trace(Named(), torch.zeros(3))
    assert torch.equal(torch.get_rng_state(), before)
