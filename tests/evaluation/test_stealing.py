"""Tests for the watermark-stealing attacker (evaluation.stealing)."""

from __future__ import annotations

import math

import pytest
import torch

from evaluation.stealing import FavouredTokens, StealingProcessor, prompt_units


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


def test_prompt_units_never_spoof_on_a_learnt_prompt() -> None:
    corpus = [{"id": f"d{i}", "prompt": f"p{i}"} for i in range(10)]
    steal, spoof = prompt_units(corpus, first=3, steal=6, spoof=4)
    assert [u["prompt"] for u in steal] == ["p3", "p4", "p5", "p6", "p7", "p8"]
    assert [u["prompt"] for u in spoof] == ["p9", "p0", "p1", "p2"]  # past the end: the start
    assert [u["id"] for u in spoof] == ["d9#s6", "d0#s7", "d1#s8", "d2#s9"]
    steal, spoof = prompt_units(corpus, first=3, steal=8, spoof=4)  # 12 > 10: prompts repeat
    assert len(steal) == 8 and [u["prompt"] for u in spoof] == ["p1", "p2", "p3", "p4"]
    assert len({u["id"] for u in steal + spoof}) == 12
