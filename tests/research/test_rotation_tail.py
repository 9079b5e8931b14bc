"""The rotation-FPR arithmetic of :mod:`research.rotation_tail` against direct counting."""

from __future__ import annotations

import itertools

import numpy as np

from research import rotation_tail


def test_rotation_counts_every_set_of_keys_like_a_loop() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(40, 6)) ** 3  # a heavy lower tail, so the cut-offs are reached
    out = rotation_tail.rotation(p, 3, 0.01, draws=50)
    sets = list(itertools.combinations(range(6), 3))
    counts = [sum(min(1.0, 3 * min(p[i, k] for k in s)) < 0.01 for i in range(40)) for s in sets]
    entry = out["p<0.01"]
    assert out["sets"] == 20
    assert entry["fpr"] == round(sum(counts) / (40 * 20), 5)
    assert entry["config_keys_count"] == counts[0]
    assert entry["count_min_median_max"] == [min(counts), float(np.median(counts)), max(counts)]
    assert entry["sets_at_or_below"] == round(np.mean([c / 40 <= 0.01 for c in counts]), 4)
    assert entry["ci95"][0] <= entry["fpr"] <= entry["ci95"][1]


def test_uniform_p_values_give_the_nominal_rates() -> None:
    p = np.random.default_rng(1).uniform(size=(4000, 12))
    pooled = rotation_tail.pooled(p)
    assert abs(pooled["p<0.05"]["share"] - 0.05) < 0.005
    assert 0.7 < pooled["p<0.05"]["var_over_binomial"] < 1.5
    assert abs(rotation_tail.rotation(p, 3, 0.01, draws=20)["p<0.01"]["fpr"] - 0.01) < 0.002


def test_one_per_dim_keeps_the_first_token_of_each_dimension() -> None:
    rec = {"green": [True, True, False, True], "gamma": [0.5] * 4, "dim": [7, 7, 3, 7]}
    assert rotation_tail.one_per_dim_p(rec) == 0.75  # kept: green, not green; P(G >= 1) = 3/4
