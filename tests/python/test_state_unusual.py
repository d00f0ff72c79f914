"""State a trace must leave as it was in models that handle memory and tensors unusually
(QA with unusual models): a forward that frees a buffer's, an input's or a weight's memory
(offloading code does, `untyped_storage().resize_(0)`), sparse and nested buffers, custom
ops that write their arguments, layers whose kernels write a tensor other than their first
argument, and nothing of the trace left on the parameters afterwards."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchscope

# (torch warns that sparse CSR and nested tensors are in beta)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class Frees(nn.Module):
    """Frees the memory of `what` after use, as offloading code does."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what
        self.l = nn.Linear(4, 4)
        self.register_buffer("cache", torch.arange(8.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.l(x) + self.cache[:4]
        if self.what == "buffer":
            self.cache.untyped_storage().resize_(0)
        elif self.what == "input":
            x.mul_(2)
            x.untyped_storage().resize_(0)
        else:
            self.l.weight.untyped_storage().resize_(0)
        return y


def test_memory_the_forward_frees_is_given_back_with_its_values() -> None:
    # QA: a freed buffer or input crashed the process (a copy into freed memory at the
    # restore); a freed weight came back as whatever the memory then held, with a warning
    # blaming a numpy view
    for what in ("buffer", "input", "weight"):
        m = Frees(what)
        before = {k: v.clone() for k, v in m.state_dict().items()}
        x = torch.randn(2, 4)
        x0 = x.clone()
        g = torchscope.trace(m, x)
        assert g.error is None, what
        for k, v in m.state_dict().items():
            assert v.untyped_storage().nbytes() == before[k].untyped_storage().nbytes(), (what, k)
            assert torch.equal(v, before[k]), (what, k)
        assert torch.equal(x, x0), what
        assert not g.warnings, (what, g.warnings)


class Graphs(nn.Module):
    """A GCN-style layer over a sparse adjacency buffer, with nested and CSR buffers beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("adj", torch.eye(5).to_sparse())
        self.register_buffer("csr", torch.eye(5).to_sparse_csr())
        self.register_buffer(
            "prototypes", torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(4, 3)])
        )
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.sparse.mm(self.adj, x))


def test_sparse_and_nested_buffers() -> None:
    # QA: every trace of a model holding one failed ("Cannot access storage of SparseTensorImpl",
    # "NestedTensorImpl doesn't support sizes"), and the CLI called it an internal error
    m = Graphs()
    x = torch.randn(5, 3)
    prototypes = m.prototypes.to_padded_tensor(0.0)
    g = torchscope.trace(m, x)
    assert g.error is None, g.error
    assert [n.name for n in g.nodes if n.kind == "module"] == ["Graphs", "Linear"]
    assert torch.equal(m.adj.to_dense(), torch.eye(5))
    assert torch.equal(m.csr.to_dense(), torch.eye(5))
    assert torch.equal(m.prototypes.to_padded_tensor(0.0), prototypes)


class WritesSparse(nn.Module):
    """Writes in place a sparse input, a sparse parameter and a nested input."""

    def __init__(self) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.eye(3).to_sparse())
        self.lin = nn.Linear(3, 3)

    def forward(self, a: torch.Tensor, nt: torch.Tensor) -> torch.Tensor:
        a.mul_(2)
        nt.mul_(3)
        with torch.no_grad():
            self.p.mul_(5)
        return self.lin(torch.sparse.mm(a, self.p.to_dense()))


def test_sparse_and_nested_tensors_written_in_place_are_put_back() -> None:
    # QA: a sparse input and a sparse parameter stayed doubled, with no warning; a nested
    # input written in place made the trace fail
    m = WritesSparse()
    a = torch.eye(3).to_sparse()
    nt = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)])
    versions = (a._version, nt._version, m.p._version)
    g = torchscope.trace(m, a, nt)
    assert g.error is None, g.error
    assert torch.equal(a.to_dense(), torch.eye(3))
    assert torch.equal(m.p.detach().to_dense(), torch.eye(3))
    ones = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)])
    assert torch.equal(nt.to_padded_tensor(0.0), ones.to_padded_tensor(0.0))
    assert (a._version, nt._version, m.p._version) == versions
    assert not g.warnings, g.warnings


class WeightUsedDirectly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))  # (as GPT-2's Conv1D)
        self.l = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l(x @ self.w)


def test_nothing_of_the_trace_stays_on_the_parameters() -> None:
    # QA: after a trace, `model.double()` with swap_module_params_on_conversion (torch's
    # future default) failed: "Couldn't swap Linear.weight" — a weak reference to every
    # parameter stayed, and torch.utils.swap_tensors refuses a tensor that has one
    for values in (False, True):
        m = WeightUsedDirectly()
        torchscope.trace_call(m, (torch.randn(2, 4),), {}, values=values, costs=values)
        swap = torch.__future__.get_swap_module_params_on_conversion()
        torch.__future__.set_swap_module_params_on_conversion(True)
        try:
            m.double()
        finally:
            torch.__future__.set_swap_module_params_on_conversion(swap)
        assert m.w.dtype is torch.float64 and m.l.weight.dtype is torch.float64
