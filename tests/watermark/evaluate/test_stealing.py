"""Tests for the watermark-stealing attacker (watermark.evaluate.stealing)."""

from __future__ import annotations

import math

import pytest
import torch

from watermark.evaluate.stealing import FavouredTokens, StealingProcessor


def test_favoured_tokens_by_hand() -> None:
    marked = [[1, 2, 1, 2, 1, 3]]  # 6 tokens: 1 x3, 2 x2, 3 x1
    own = [[1, 3, 3, 3]]  # 4 tokens: 1 x1, 3 x3
    V = 10
    fav = FavouredTokens(marked, own, V, width=0)
    ratio_1 = (3 + 1) / (6 + V) / ((1 + 1) / (4 + V))
    assert fav.scores([])[1] == pytest.approx(math.log(ratio_1))
    assert fav.scores([])[3] == 0.0  # rarer in watermarked text than in its own: not favoured
    assert fav.scores([])[5] == 0.0  # never seen
    ctx = FavouredTokens(marked, own, V, width=1, min_context=2)
    after_1 = ctx.scores([7, 1])  # context 1 seen 3 times (followed by 2, 2, 3)
    assert after_1[2] > 0 and after_1[1] == 0.0
    assert torch.equal(ctx.scores([7, 3]), fav.scores([]))  # unseen context: context-free


def test_stealing_processor_boosts_estimate() -> None:
    fav = FavouredTokens([[4, 4, 4]], [[5]], 8, width=0)
    scores = torch.zeros(2, 8)
    out = StealingProcessor(fav, boost=3.0)(torch.tensor([[1, 2], [3, 4]]), scores)
    assert out[:, 4].tolist() == [pytest.approx(3.0 * float(fav.free[4]))] * 2
    assert (out[:, :4] == 0).all() and float(fav.free[4]) > 0
