"""Tests for the code metrics and the SimHash baseline (mapper.metrics)."""

from __future__ import annotations

import pytest
import torch

from mapper.metrics import agreement, code_metrics, simhash_codes


def test_simhash_is_deterministic_and_centred():
    emb = torch.randn(20, 8)
    center = emb.mean(0)
    a = simhash_codes(emb, center, 32, seed=3)
    assert torch.equal(a, simhash_codes(emb, center, 32, seed=3))
    assert not torch.equal(a, simhash_codes(emb, center, 32, seed=4))
    gen = torch.Generator().manual_seed(3)
    proj = torch.randn(8, 32, generator=gen)
    assert torch.equal(a, (emb - center) @ proj > 0)


def test_code_metrics_hand_computed():
    codes = torch.tensor(
        [
            [1, 1, 0, 0],  # s0: balanced
            [1, 1, 1, 0],  # s1: 3/4 positive
            [1, 1, 0, 1],  # aug of s0: 3/4 bits agree
            [0, 0, 1, 1],  # unrelated to s0: 0 agree
        ],
        dtype=torch.bool,
    )
    emb = torch.tensor([[0.0], [1.0], [0.1], [3.0]])
    pairs = {
        "paraphrase": (torch.tensor([0]), torch.tensor([2])),
        "unrelated": (torch.tensor([0, 1]), torch.tensor([3, 3])),
    }
    m = code_metrics(codes, emb, torch.tensor([0, 1]), pairs)
    assert m["sent_balance_mean"] == pytest.approx(0.125)
    assert m["agree_paraphrase"] == pytest.approx(0.75)
    assert m["agree_unrelated"] == pytest.approx((0.0 + 0.25) / 2)
    # dims over s0, s1: fractions 1, 1, .5, 0 -> deviations .5 .5 0 .5; within 0.2: 1/4
    assert m["dim_within_tol"] == pytest.approx(0.25)
    assert m["dim_balance_max"] == pytest.approx(0.5)
    # emb distances .1, 3, 2 vs hamming .25, 1, .75: same order -> spearman 1
    assert m["spearman"] == pytest.approx(1.0, abs=1e-4)
    assert agreement(codes, torch.tensor([0]), torch.tensor([1])).item() == pytest.approx(0.75)
