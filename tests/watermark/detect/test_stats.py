"""Tests for the Poisson-binomial tail and the green-token test (watermark.detect.stats)."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest

from watermark.detect.stats import green_test, normal_sf, poisson_binomial_sf, z_score


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


def test_z_score_and_normal_tail() -> None:
    assert z_score(75, 50.0, 25.0) == 5.0  # KGW: 75 green of 100 at gamma 1/2
    assert z_score(3, 3.0, 0.0) == 0.0  # nothing tested
    assert green_test([True, False, True], [0.2, 0.5, 0.4])[0] == pytest.approx(
        z_score(2, 1.1, 0.65)
    )
    assert normal_sf(0.0) == pytest.approx(0.5) and normal_sf(1.6448536) == pytest.approx(0.05)
    assert normal_sf(-1.0) + normal_sf(1.0) == pytest.approx(1.0)


def test_window_spans_cover_the_text_with_a_quarter_stride() -> None:
    from watermark.detect.stats import window_spans

    assert window_spans(10, []) == [(0, 10)]
    assert window_spans(10, [4]) == [
        (0, 10),
        (0, 4),
        (1, 5),
        (2, 6),
        (3, 7),
        (4, 8),
        (5, 9),
        (6, 10),
    ]
    assert window_spans(10, [8, 12]) == [(0, 10), (0, 8), (2, 10)]  # 12 >= n: whole text only
    assert window_spans(0, [4]) == [(0, 0)]


def stretch() -> tuple[list[list[bool]], list[list[int]]]:
    """92 tokens, alternating green/red except a green stretch of 12 at 40..51, and windows of
    12 at a stride of 3 (the whole text first)."""
    bits = [[False], [True]] * 20 + [[True]] * 12 + [[False], [True]] * 20
    members = [list(range(92))] + [list(range(s, s + 12)) for s in range(0, 81, 3)]
    return bits, members


def test_windowed_test_finds_the_marked_stretch_and_corrects() -> None:
    from watermark.detect.stats import windowed_test

    bits, members = stretch()
    gammas = [[0.5]] * len(bits)
    p, best = windowed_test(bits, gammas, members)
    assert all(bits[i][0] for i in members[best]) and len(members[best]) == 12  # the stretch
    single = 0.5**12
    assert single < p <= len(members) * single  # corrected, and by less than a union bound
    assert windowed_test(bits, gammas, members[:1])[0] == pytest.approx(
        green_test([b[0] for b in bits], [0.5] * 92)[1], rel=1e-12
    )  # one window (a text shorter than every size): the exact p-value
    whole = green_test([b[0] for b in bits], [0.5] * 92)[1]
    p_two, _ = windowed_test(bits, gammas, [members[0], members[0]])  # the same window twice
    assert p_two == pytest.approx(whole, abs=0.025)  # simulated: estimates it (sd 0.0074)
    assert windowed_test(bits, gammas, [[]]) == (1.0, 0)
    assert windowed_test([], [], [[]]) == (1.0, 0)
    # Beyond the simulation's reach (no draw as extreme), the union bound is reported.
    strong = [[True]] * 60
    p, _ = windowed_test(strong, [[0.5]] * 60, [list(range(60)), list(range(30))], draws=100)
    assert p == pytest.approx(2 * 0.5**60)


def test_windowed_test_is_calibrated_under_the_null() -> None:
    from watermark.detect.stats import windowed_test

    rng = np.random.default_rng(0)
    ps = []
    members = [list(range(80))] + [
        list(range(s, s + w)) for w in (16, 32) for s in range(0, 80 - w + 1, w // 4)
    ]
    for _ in range(400):
        g = rng.uniform(0.3, 0.7, size=80)
        bits = [[bool(b)] for b in rng.random(80) < g]
        ps.append(windowed_test(bits, [[x] for x in g], members, draws=500)[0])
    ps = np.array(ps)
    assert np.mean(ps < 0.05) <= 0.05 + 0.02 and np.mean(ps < 0.2) <= 0.2 + 0.03
    assert np.mean(ps < 0.2) >= 0.2 - 0.06  # not a union bound: close to nominal


def test_tail_table_matches_the_one_at_a_time_recursion() -> None:
    from tests.reference import tail_table as reference
    from watermark.detect.stats import tail_table

    rng = np.random.default_rng(3)
    for n in (0, 1, 5, 31, 32, 33, 64, 97, 400):
        probs = rng.uniform(0.0, 1.0, size=n)
        if n > 5:
            probs[:3] = [0.0, 1.0, 0.5]  # degenerate Bernoullis too
        fast, slow = tail_table(probs), np.array(reference(probs.tolist()))
        assert fast.shape == (n + 2,)
        # relative precision down to the far tail (values far below 1e-100 for n = 400)
        keep = slow > 1e-290
        assert np.allclose(fast[keep], slow[keep], rtol=1e-11, atol=0.0)
        assert np.all(fast[~keep] < 1e-280)


def test_windowed_test_matches_the_exact_null() -> None:
    """The simulation (one draw per atom of rows read by the same windows) estimates the exact
    corrected p-value, found by enumerating every outcome: overlapping windows, a row read by
    no window, two lists per row, and a window that reads a row twice."""
    from tests.reference import window_null_exact
    from watermark.detect.stats import windowed_test

    rng = np.random.default_rng(5)
    cases = [
        (9, 1, [list(range(9)), [0, 1, 2, 3], [3, 4, 5, 6], [5, 6, 7]]),  # row 8: whole text only
        (6, 2, [list(range(5)), [0, 1, 2], [2, 3, 4]]),  # row 5: no window
        (7, 1, [list(range(7)), [0, 1, 1, 2], [4, 5, 6]]),  # row 1 read twice by one window
    ]
    for rows, width, members in cases:
        for _ in range(3):
            gammas = rng.uniform(0.2, 0.8, size=(rows, width)).tolist()
            green = (rng.random((rows, width)) < 0.6).tolist()
            exact = window_null_exact(green, gammas, members)
            draws = 20000
            p, best = windowed_test(green, gammas, members, draws=draws, seed=1)
            sd = math.sqrt(exact * (1 - exact) / draws) + 1 / draws
            assert abs(p - exact) <= 4.5 * sd, (p, exact)
            counts = [sum(green[r][k] for r in m for k in range(width)) for m in members]
            assert best in range(len(members)) and counts[best] >= 0


def test_atoms_match_the_dense_read_table() -> None:
    """The windowed test's atoms, built row by row, are the unique rows of the dense
    rows x windows read table, in its order (so the seeded draws land on the same atoms)."""
    from watermark.detect.stats import atoms

    rng = np.random.default_rng(3)
    for _ in range(40):
        n, w = int(rng.integers(3, 120)), int(rng.integers(1, 25))
        members = [np.sort(rng.integers(0, n, size=int(rng.integers(0, 40)))) for _ in range(w)]
        reads = np.zeros((n, w), dtype=np.int64)
        for k, m in enumerate(members):
            np.add.at(reads[:, k], m, 1)
        used = np.flatnonzero(reads.any(axis=1))
        rows, windows = atoms(members)
        if not len(used):
            assert rows == []
            continue
        weights, inverse = np.unique(reads[used], axis=0, return_inverse=True)
        inverse = inverse.ravel()
        assert [r.tolist() for r in rows] == [
            used[inverse == a].tolist() for a in range(len(weights))
        ]
        dense = np.zeros_like(weights)
        for k, (ids, times) in enumerate(windows):
            dense[ids, k] = times
        assert np.array_equal(dense, weights)
