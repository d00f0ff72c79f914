"""Reading ahead at a breakpoint: while the user picks a model from the palette's list, the
debuggee reads the statistics a first trace of the model listed first would read once and
keep (the weights its forward uses directly), so that the pick is followed by less work.
The trace then shows the same statistics it would have read itself, and a weight changed
since is read again."""

from __future__ import annotations

import json
import sys

import torch
from torch import nn

from torchscope import debug, weight_stats
from torchscope.stats import tensor_stats
from torchscope.tracer import read_ahead, trace


class Scale(nn.Module):
    """A user's module whose forward uses its parameter directly: a constant of the graph."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.randn(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gain


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.attn = nn.MultiheadAttention(6, 2)  # a torch.nn layer with a torch.nn layer inside
        self.scale = Scale(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale(self.lin(x))


def _constant_stats(graph, target: str) -> list[dict]:
    ids = {n.id for n in graph.nodes if n.kind == "constant" and n.target == target}
    return [e.stats for e in graph.edges if e.src in ids]


def test_reads_the_weights_a_forward_uses_directly_and_no_torch_nn_layers():
    torch.manual_seed(0)
    net = Net()
    assert read_ahead(net) == 6
    assert weight_stats.is_kept(net.scale.gain)
    owned = [*net.lin.parameters(), *net.attn.parameters()]
    assert not any(weight_stats.is_kept(p) for p in owned)
    assert read_ahead(net) == 0  # kept: nothing to read again


def test_the_trace_shows_what_was_read_ahead_and_reads_a_changed_weight_again():
    torch.manual_seed(1)
    net, x = Net(), torch.randn(3, 6)
    read_ahead(net)
    [seen] = {json.dumps(s, sort_keys=True) for s in _constant_stats(trace(net, x), "scale.gain")}
    expected = tensor_stats(net.scale.gain.detach())
    assert expected is not None and json.loads(seen) == expected.stats
    with torch.no_grad():
        net.scale.gain.mul_(-3.0)  # a new version: what was read ahead no longer holds
    assert not weight_stats.is_kept(net.scale.gain)
    [seen] = {json.dumps(s, sort_keys=True) for s in _constant_stats(trace(net, x), "scale.gain")}
    expected = tensor_stats(net.scale.gain.detach())
    assert expected is not None and json.loads(seen) == expected.stats


def test_reads_no_more_than_its_limit():
    big, small = torch.randn(1000), torch.randn(10)
    assert weight_stats.read_ahead([big, small], limit=500) == 10
    assert weight_stats.is_kept(small) and not weight_stats.is_kept(big)


def test_warm_reads_ahead_for_the_listed_model_and_never_fails():
    torch.manual_seed(2)
    model = Net()  # noqa: F841 - found by the request's expression in this frame
    frame = sys._getframe()

    def warm(**req: str) -> dict:
        return json.loads(debug.handle(json.dumps({"op": "warm", **req}), frame=frame))

    plain = warm()
    assert plain["ok"] and "readAhead" not in plain
    ahead = warm(expr="model")
    assert ahead["ok"] and ahead["readAhead"] == 6, ahead
    assert weight_stats.is_kept(model.scale.gain)
    missing = warm(expr="no_such_model")
    assert missing["ok"] and missing["readAhead"] == 0, missing
