"""Tests for the spoofing counts and decryption rate (evaluation.security)."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from evaluation.security import decryption_rate, follower_counts, most_common_context


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
    share = torch.zeros(10)
    share[[1, 5]] = torch.tensor([0.5, 0.25])  # a token green in a share of the lists
    rate, _ = decryption_rate(follower_counts(ids, []), [1, 2, 5, 6, 7], share, top=3)
    assert rate == pytest.approx((0.5 + 0.25 + 0.0) / 3)


def test_opening_green_share(tiny) -> None:
    """A shared opening list gives 0/1 shares (that list); prefix lists give shares between."""
    from evaluation.security import opening_green_share

    ids = [[5, 6, 7, 8, 9, 10], [11, 12, 13]]
    shared = tiny.make(opening_steps=50)
    share = opening_green_share(shared, ids)
    assert torch.equal(share, shared.core.green_lists([1], [[]]).mask()[0, 0].float())
    per_prefix = opening_green_share(tiny.make(opening_steps=0, embed_window=4), ids)
    assert ((per_prefix > 0) & (per_prefix < 1)).any()


def test_fixed_semantics_core_uses_the_opening_list_at_every_step(tiny) -> None:
    from evaluation.security import FixedSemanticsCore

    core = tiny.make().core
    fixed = FixedSemanticsCore(core.config, core.tokenizer, core.measurement, core.semantic)
    late = fixed.green_lists([1, 40], [[], list(range(3, 42))])
    assert torch.equal(late.signs[0], late.signs[1])  # the opening list at every step
    assert torch.equal(late.signs[0], core.green_lists([1], [[]]).signs[0])
    assert not torch.equal(late.signs[1], core.green_lists([40], [list(range(3, 42))]).signs[0])
    assert len(fixed.green_lists([], [])) == 0
