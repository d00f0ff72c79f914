"""A rank traced alone (paused at a breakpoint, or `local_collectives=True` from the API)
cannot talk to one other rank: the error says why in words true for both ways."""

from __future__ import annotations

import pytest
import torch

from torchscope.collectives import RankTracedAlone, run_locally


def test_point_to_point_alone_is_refused_in_words_for_the_api_too() -> None:
    t = torch.ones(2)
    with pytest.raises(RankTracedAlone) as raised:
        # (the c10d op torch.distributed.send runs; its group is never reached)
        run_locally(torch.ops.c10d.send.default, ([t], None, 1, 0), {})
    message = str(raised.value)
    assert "point-to-point" in message and "traced alone" in message
    assert "paused at a breakpoint" in message and "local_collectives" in message
