"""Tests for the Poisson-binomial tail and the green-token test (watermark.stats)."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
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


def test_windows_cover_the_text_with_a_quarter_stride() -> None:
    from watermark.stats import windows

    assert windows(10, []) == [(0, 10)]
    assert windows(10, [4]) == [(0, 10), (0, 4), (1, 5), (2, 6), (3, 7), (4, 8), (5, 9), (6, 10)]
    assert windows(10, [8, 12]) == [(0, 10), (0, 8), (2, 10)]  # 12 >= n: only the whole text
    assert windows(0, [4]) == [(0, 0)]


def test_windowed_test_finds_the_marked_stretch_and_corrects() -> None:
    from watermark.stats import windowed_test

    bits = [[False], [True]] * 20 + [[True]] * 12 + [[False], [True]] * 20  # a green stretch
    gammas = [[0.5]] * len(bits)
    p, (start, end) = windowed_test(bits, gammas, [12])
    flat = [b[0] for b in bits[start:end]]
    spans = 1 + len(range(0, len(bits) - 12 + 1, 3)) + (1 if (len(bits) - 12) % 3 else 0)
    assert flat == [True] * 12  # the best window is the stretch
    assert p == pytest.approx(min(1.0, spans * 0.5**12))
    assert windowed_test(bits, gammas, [])[0] == green_test([b[0] for b in bits], [0.5] * 92)[1]
    assert windowed_test([], [], [12]) == (1.0, (0, 0))


def test_windowed_test_is_calibrated_under_the_null() -> None:
    from watermark.stats import windowed_test

    rng = np.random.default_rng(0)
    ps = []
    for _ in range(400):
        g = rng.uniform(0.3, 0.7, size=80)
        bits = [[bool(b)] for b in rng.random(80) < g]
        ps.append(windowed_test(bits, [[x] for x in g], [16, 32])[0])
    assert np.mean(np.array(ps) < 0.05) <= 0.05 and np.mean(np.array(ps) < 0.2) <= 0.2
