""":mod:`research.sentence_spoof`: the simulated choice, the spoofer's estimate, the test."""

from __future__ import annotations

import torch

from research import sentence_spoof as spoof
from watermark.sentences.key import SentenceKey


def test_the_choice_raises_the_hit_rate_and_the_spoofer_finds_a_planted_lean() -> None:
    rng = torch.Generator().manual_seed(0)
    v = torch.randn(400, 32, generator=rng)
    key = SentenceKey.of("k", 32, 6)
    plain = spoof.chain(v, key, 60, 5, 1, rng)
    chosen = spoof.chain(v, key, 60, 5, 8, rng)
    assert spoof.hit_rate(v, chosen, key) > spoof.hit_rate(v, plain, key) + 0.15
    p_chosen = sorted(spoof.p_value(v, rows, key) for rows in chosen)
    p_plain = sorted(spoof.p_value(v, rows, key) for rows in plain)
    assert p_chosen[30] < p_plain[30]  # medians
    marked = torch.cat([v[rows] for rows in chosen])
    guess = spoof.learnt_key(marked, v, key)
    assert set(guess.dims.tolist()) == set(key.dims.tolist())
    for dim, target in zip(guess.dims.tolist(), guess.targets[0].tolist()):
        assert target == bool(key.targets[0][key.dims.tolist().index(dim)])
