"""Tests for the spoofing counts and decryption rate (watermark.evaluate.security)."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from watermark.evaluate.security import decryption_rate, follower_counts, most_common_context


def test_spoofing_counts_by_hand() -> None:
    ids = [[1, 5, 1, 6, 1, 5], [2, 1, 5]]
    assert follower_counts(ids, [1]) == Counter({5: 3, 6: 1})
    assert follower_counts(ids, []) == Counter({1: 4, 5: 3, 6: 1, 2: 1})
    assert most_common_context(ids, 1) == [1] and most_common_context(ids, 0) == []
    green = torch.zeros(10, dtype=torch.bool)
    green[[5, 2]] = True
    # common = {1, 2, 5, 6, 7}; seen: 1 (4), 5 (3), 2 (1), 6 (1); top 3 = 1, 5, then 2 (ties by id)
    rate, size = decryption_rate(follower_counts(ids, []), [1, 2, 5, 6, 7], green, top=3)
    assert size == 3 and rate == pytest.approx(2 / 3)
    assert decryption_rate(Counter(), [1], green, 3)[1] == 0
