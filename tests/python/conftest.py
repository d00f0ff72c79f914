"""Shared fixtures: each zoo model traced once per session, with its independent ground truth."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import zoo  # noqa: E402

import torchscope  # noqa: E402


@dataclasses.dataclass
class Traced:
    name: str
    model: Any
    args: tuple
    kwargs: dict
    graph: torchscope.Graph
    calls: list[zoo.CallSeen]  # our own hooks on an identical, separately built model
    result: Any  # the real output of that plain forward
    keep: list


_cache: dict[str, Traced] = {}


def get_traced(name: str) -> Traced:
    if name not in _cache:
        model, args, kwargs = zoo.build(name)
        graph = torchscope.trace(model, *args, **kwargs)
        twin, targs, tkwargs = zoo.build(name)
        calls, result, keep = zoo.record_calls(twin, targs, tkwargs)
        _cache[name] = Traced(name, model, args, kwargs, graph, calls, result, keep)
    return _cache[name]


@pytest.fixture(params=zoo.WORKING)
def traced(request) -> Traced:
    return get_traced(request.param)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/*.msgpack from the tracer",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden")) or bool(
        os.environ.get("UPDATE_GOLDEN")
    )
