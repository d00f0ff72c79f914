"""The Python API given arguments of the wrong kind (a QA pass): a message that names the
argument and what it takes, raised before anything runs, never an error from deep inside
that blames the user's model or line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

import torchscope
from torchscope import notebook
from torchscope.diff import diff_graphs


class Many(nn.Module):
    def forward(self, x):
        for _ in range(100):  # (more than the 32 torch calls between cancel checks)
            x = x + 1
        return x


@pytest.mark.parametrize("cancel", [True, 1, "stop"])
def test_a_cancel_that_is_not_a_function_is_refused_up_front(cancel) -> None:
    with pytest.raises(TypeError, match=r"cancel must be a function .*, not a (bool|int|str)"):
        torchscope.trace_call(Many(), (torch.ones(2),), cancel=cancel)


@pytest.mark.parametrize("budget", ["5", [5], True])
def test_a_time_budget_that_is_not_a_number_is_refused(budget) -> None:
    with pytest.raises(TypeError, match=r"time_budget is a number of seconds"):
        torchscope.trace_call(Many(), (torch.ones(2),), time_budget=budget)


def test_keyword_arguments_that_are_not_a_mapping_are_refused() -> None:
    with pytest.raises(TypeError, match=r"kwargs is a dict of the forward's keyword arguments"):
        torchscope.trace_call(Many(), (torch.ones(2),), [1])  # type: ignore[arg-type]


def test_show_graph_given_a_model_says_to_use_show() -> None:
    with pytest.raises(TypeError, match=r"show_graph draws a traced Graph .*torchscope.show"):
        torchscope.show_graph(nn.Linear(2, 2))  # type: ignore[arg-type]


@pytest.mark.parametrize("height", [math.nan, math.inf, "900"])
def test_show_graph_given_a_height_that_is_no_size_says_so(height) -> None:
    graph = torchscope.trace(nn.Linear(2, 2), torch.ones(1, 2))
    with pytest.raises((TypeError, ValueError), match=r"height is a number of pixels"):
        notebook.show_graph(graph, height=height)


@pytest.mark.parametrize("other", ["a.json", None, 3])
def test_diff_given_something_else_than_a_graph_says_so(other) -> None:
    graph = torchscope.trace(nn.Linear(2, 2), torch.ones(1, 2))
    with pytest.raises(TypeError, match=r"diff_graphs compares two torchscope Graphs"):
        diff_graphs(graph, other)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Graph.load"):
        diff_graphs(other, graph)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", '{"a":', "not json"])
def test_loading_a_json_file_that_is_no_json_is_a_graph_format_error(tmp_path, text) -> None:
    path = Path(tmp_path) / "g.json"
    path.write_text(text)
    with pytest.raises(torchscope.GraphFormatError, match=r"not JSON"):
        torchscope.Graph.load(path)
