"""Tests for the Poisson-binomial tail and the green-token test (watermark.stats)."""

from __future__ import annotations

import math
from itertools import product

import pytest

from watermark.stats import green_test, poisson_binomial_sf


def test_poisson_binomial_matches_brute_force() -> None:
    probs = [0.1, 0.5, 0.9, 0.3, 0.65, 0.2, 0.5]
    for k in range(len(probs) + 2):
        brute = 0.0
        for bits in product([0, 1], repeat=len(probs)):
            if sum(bits) >= k:
                brute += math.prod(p if b else 1 - p for p, b in zip(probs, bits))
        assert poisson_binomial_sf(k, probs) == pytest.approx(brute, abs=1e-12)
    assert poisson_binomial_sf(60, [0.5] * 100) == pytest.approx(
        sum(math.comb(100, j) for j in range(60, 101)) / 2**100, rel=1e-9
    )
    assert green_test([], []) == (0.0, 1.0)
    z, p = green_test([True] * 5, [1.0] * 5)  # degenerate null: finite, uninformative
    assert math.isfinite(z) and p == pytest.approx(1.0)
    z, p = green_test([True] * 30, [0.5] * 30)
    assert z == pytest.approx(math.sqrt(30)) and p == pytest.approx(0.5**30)
