"""The aligned reading of :mod:`research.alignment` against brute force over every alignment,
and the cell reading's null moments."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from research.alignment import Moves, best_alignment, calibrated, cell_z, random_targets


def cost(seq: tuple[int, ...], moves: Moves, positions: int) -> int | None:
    """The moves off the diagonal of an alignment (None: not one ``moves`` allows)."""
    inserted, last, split, found = 0, None, False, 0
    for p in seq:
        if p == -1:
            inserted, found = inserted + 1, found + 1
        elif p >= positions:
            return None
        elif last is None:
            if p > moves.start:
                return None
            last, found = p, found + (p > 0)
        elif p == last:
            if not moves.splits or split:
                return None
            split, found = True, found + 1
        elif last < p <= last + 1 + moves.skip:
            last, split, found = p, False, found + p - last - 1
        else:
            return None
    return found if inserted <= moves.inserts else None


@pytest.mark.parametrize("seed", range(12))
def test_the_programme_finds_the_best_and_the_soft_sum_of_every_alignment(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, soft = int(rng.integers(1, 5)), float(rng.choice([0.0, 0.7]))
    moves = Moves(
        int(rng.integers(0, 3)),
        int(rng.integers(0, 3)),
        bool(rng.integers(0, 2)),
        int(rng.integers(0, 3)),
        penalty=float(rng.choice([0.0, 0.4])),
        soft=soft,
    )
    positions = moves.positions(m)
    a = rng.normal(size=(2, m, positions))
    best, path = best_alignment(a, moves, path=True)
    for row in range(2):
        values = []
        for seq in itertools.product(range(-1, positions), repeat=m):
            c = cost(seq, moves, positions)
            if c is not None:
                values.append(
                    sum(a[row, j, p] for j, p in enumerate(seq) if p >= 0) - moves.penalty * c
                )
        values = np.array(values)
        expected = np.log(np.exp(soft * values).sum()) / soft if soft else values.max()
        assert best[row] == pytest.approx(expected)
    hard = best_alignment(a[:1], Moves(**{**moves.__dict__, "soft": 0.0}))[0]
    assert cost(tuple(path), moves, positions) is not None
    took = sum(a[0, j, p] for j, p in enumerate(path) if p >= 0)
    assert took - moves.penalty * cost(tuple(path), moves, positions) == pytest.approx(hard)


def test_the_cell_reading_has_mean_zero_and_variance_one_over_keys() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 8)) * rng.integers(1, 30, size=(6, 8))
    cells = np.array([0, 0, 1, 2, -1, 2])
    z = cell_z(random_targets(rng, (40000, 3, 8)), cells, x)
    assert abs(z.mean()) < 0.02 and z.var() == pytest.approx(1.0, abs=0.03)


def test_the_calibrated_tail_is_the_share_of_draws_then_a_union_bound() -> None:
    null = np.random.default_rng(1).normal(size=4000)
    z = calibrated(np.array([-3.0, 0.0, 1.0, 4.0]), null)
    assert z[0] < -2 and abs(z[1]) < 0.1 and abs(z[2] - 1.0) < 0.1
    assert z[3] == pytest.approx(4.0, abs=0.15)  # one alignment: n_eff near 1
