"""The arithmetic of :mod:`research.kept_rewrites` on hand-made outputs: kept signs counted
per margin bin, and the rewrite's hits weighed by the original's margins (equal to the key's
own z when the rewrite is the original)."""

from __future__ import annotations

import pytest
import torch

from research import kept_rewrites as script
from watermark.sentences.key import SentenceKey, margin_bins, margins


def test_kept_share_counts_each_bin() -> None:
    v = torch.randn(64, 16, generator=torch.Generator().manual_seed(0))
    w = v.clone()
    w[:, 0] = -w[:, 0]  # output 0 always flips, the others always keep
    dims = torch.tensor([0, 1])
    bins = margin_bins(margins(v))[:, dims]
    expected = [
        float(((bins == b) & (dims == 1)).sum() / (bins == b).sum())
        for b in range(int(bins.max()) + 1)
    ]
    assert script.kept_share(v, w, dims) == pytest.approx(expected)


def test_own_weights_on_an_unchanged_rewrite_is_the_keys_z() -> None:
    key = SentenceKey.of("k", 16, 8, 0, "own", "margin", 4)
    v = torch.randn(10, 16, generator=torch.Generator().manual_seed(1))
    groups = key.groups(v, None)
    found = script.real_hits_own_weights(key, v, v, groups)
    assert found == pytest.approx(key.evidence(v, groups))
    flipped = script.real_hits_own_weights(key, v, -v, groups)
    assert flipped == pytest.approx(-key.evidence(v, groups))
