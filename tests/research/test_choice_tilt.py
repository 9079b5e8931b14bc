"""The arithmetic of :mod:`research.choice_tilt` on hand-made picks: a choice that keeps one
candidate under every key has the largest tilt, one that spreads evenly has none; the gap is the
kept value less the pool's mean; word statistics of a sentence."""

from __future__ import annotations

import pytest
import torch

from research import choice_tilt as script


def test_kept_counts_per_pool() -> None:
    picks = torch.tensor([[0, 1], [0, 1], [2, 1]])  # 3 keys, 2 pools
    assert script.kept_counts(picks, 3).tolist() == [[2.0, 0.0, 1.0], [0.0, 3.0, 0.0]]


def test_tilt_of_always_one_and_of_even_spread() -> None:
    always = torch.zeros(4, 5, dtype=torch.long)  # 4 keys keep candidate 0 of 5 pools
    assert script.tilt(always, 4) == pytest.approx(0.75)  # |1 - 1/4| / 2 + 3 * (1/4) / 2
    even = torch.arange(4)[:, None].expand(4, 5)  # each candidate once per pool
    assert script.tilt(even, 4) == pytest.approx(0.0)


def test_gap_is_kept_less_pool_mean() -> None:
    values = torch.tensor([[1.0, 3.0], [0.0, 10.0]])  # pool means 2 and 5
    picks = torch.tensor([[1, 0], [1, 1]])  # key 0: +1, -5; key 1: +1, +5
    assert script.gap(picks, values) == pytest.approx((1 - 5 + 1 + 5) / 4)


def test_words_stats() -> None:
    assert script.words_stats("It's, It's, it's.") == pytest.approx((3.0, 1.0, 2 / 3))
    assert script.words_stats("A storm hit the coast today.") == (6.0, 0.0, 0.0)
    assert script.words_stats("...") == (0.0, 1.0, 0.0)
