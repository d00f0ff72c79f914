"""An expression for an input the trace was given as a value (a factory's example,
`example_input_array`): what the editor's input box starts with, to edit."""

from __future__ import annotations

import torch

from torchscope.inputs import input_expression


def test_tensors_become_expressions_of_their_shape_and_kind() -> None:
    assert input_expression(torch.zeros(2, 16)) == "torch.randn(2, 16)"
    assert input_expression(torch.zeros(3)) == "torch.randn(3)"
    assert input_expression(torch.zeros(2, 3, dtype=torch.float16)) == (
        "torch.randn(2, 3, dtype=torch.float16)"
    )
    ids = torch.tensor([[5, 1, 7]])
    assert input_expression(ids) == "torch.randint(0, 8, (1, 3))"
    assert input_expression(torch.ones(2, dtype=torch.bool)) == "torch.ones(2, dtype=torch.bool)"
    assert input_expression(torch.tensor(1.5)) == "torch.randn(())"


def test_positionals_and_keywords_as_the_box_reads_them() -> None:
    x, ids = torch.zeros(4, 8), torch.zeros(1, 5, dtype=torch.long)
    assert input_expression((x, ids)) == "(torch.randn(4, 8), torch.randint(0, 1, (1, 5)))"
    assert input_expression([x]) == "(torch.randn(4, 8),)"
    assert input_expression({"input_ids": ids}) == "{'input_ids': torch.randint(0, 1, (1, 5))}"


def test_anything_else_has_none() -> None:
    assert input_expression(object()) is None
    assert input_expression((torch.zeros(1), object())) is None
    assert input_expression(torch.zeros(2, dtype=torch.complex64)) is None
    assert input_expression(torch.zeros(2, device="meta")) == "torch.randn(2)"
