"""State a trace must leave as it was in models that handle memory and tensors unusually
(QA with unusual models): a forward that frees a buffer's, an input's or a weight's memory
(offloading code does, `untyped_storage().resize_(0)`), sparse and nested buffers, custom
ops that write their arguments, layers whose kernels write a tensor other than their first
argument, and nothing of the trace left on the parameters afterwards."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
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


@torch.library.custom_op("torchscope_test::clamp_in_place", mutates_args=("x",))
def clamp_in_place(x: torch.Tensor, low: float) -> None:
    x.clamp_(min=low)


@torch.library.custom_op("torchscope_test::fill_second", mutates_args=("out",))
def fill_second(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    out.fill_(7.0)
    return x * 2


class UsesCustomOps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 4)
        self.scratch = torch.zeros(3)  # a plain tensor attribute the second op writes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        clamp_in_place(x, 0.0)  # writes the forward's input
        z = self.l(x)
        clamp_in_place(z, 0.0)
        return fill_second(z, self.scratch)


def test_custom_ops_that_write_their_arguments() -> None:
    # QA: a custom op declaring `mutates_args` got no node when it returned None, the edges
    # after it carried the values from before the write, and what it wrote (the forward's
    # input, a plain tensor attribute, a parameter) stayed written
    m = UsesCustomOps()
    x = torch.randn(3, 4)
    x0 = x.clone()
    want = m(x.clone())
    m.scratch.zero_()  # (the plain forward wrote it)
    g = torchscope.trace(m, x)
    assert torch.equal(x, x0), "the input written by the op is put back"
    assert torch.equal(m.scratch, torch.zeros(3))
    ops = [n.name for n in g.nodes if n.kind == "op"]
    assert ops.count("clamp_in_place") == 2 and "fill_second" in ops, ops
    (out,) = [e for e in g.edges if g.nodes[e.dst].kind == "output"]
    assert out.stats["min"] == want.min().item() >= 0.0


class Renormalises(nn.Module):
    """Layers whose kernels write a tensor other than their first argument."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4, max_norm=0.5)
        self.bag = nn.EmbeddingBag(10, 4, max_norm=0.5)
        self.running_mean = torch.zeros(4)  # plain tensor attributes, not buffers
        self.running_var = torch.ones(4)

    def forward(self, ids: torch.Tensor, table: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids).sum(1) + self.bag(ids) + F.embedding(ids, table, max_norm=0.5).sum(1)
        h = F.batch_norm(h + 3, self.running_mean, self.running_var, training=True)
        return h + F.batch_norm(h, mean, torch.ones(4), training=True)


def test_writes_a_layer_makes_beside_its_first_argument_are_undone() -> None:
    # QA: an Embedding with max_norm kept its renormalised rows (with a warning blaming a
    # numpy view); F.batch_norm's running statistics given as plain tensors or arguments,
    # and an F.embedding table given as an argument, stayed written with no warning
    torch.manual_seed(0)
    m = Renormalises()
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    table = torch.randn(10, 4) * 3
    mean = torch.zeros(4)
    before = [t.detach().clone() for t in (m.emb.weight, m.bag.weight, table, mean)]
    g = torchscope.trace(m, ids, table, mean)
    assert g.error is None, g.error
    after = (m.emb.weight, m.bag.weight, table, mean)
    assert [torch.equal(a, b) for a, b in zip(after, before)] == [True] * 4
    assert torch.equal(m.running_mean, torch.zeros(4)) and torch.equal(m.running_var, torch.ones(4))
    assert not g.warnings, g.warnings
