"""Tests for each mapper loss term against hand values and plain loops (mapper.losses)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from mapper import losses


def test_rescale_matches_paper_endpoints():
    d = torch.tensor([0.0, 1.0, 2.0])
    # L=0, U=2 -> L'=-2, U'=4; midpoint 1 -> 1.
    assert losses.rescale_distance(d, 0.0, 2.0).tolist() == [-2.0, 1.0, 4.0]
    with pytest.raises(ValueError):
        losses.rescale_distance(d, 1.0, 1.0)


def test_distance_loss_hand_computed():
    u = torch.tensor([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    v = torch.tensor([[0.0], [3.0], [1.0]])
    # pairs (0,1),(0,2),(1,2): du = 2, 1, sqrt(5); U = 3 -> T(d) = d/3*6 - 2 = 2d - 2
    # dv = 3, 1, 2 -> |2-3| + |0-1| + |2*sqrt(5)-2-2|
    expected = (1.0 + 1.0 + abs(2 * math.sqrt(5) - 4)) / 3
    got = losses.distance_loss(u, v, upper=3.0)
    assert got.item() == pytest.approx(expected, abs=1e-4)


def test_distance_loss_uses_all_pairs_not_index_aligned():
    torch.manual_seed(0)
    u, v = torch.randn(6, 4), torch.randn(6, 3)
    total = 0.0
    for i, j in itertools.combinations(range(6), 2):
        t = losses.rescale_distance((u[i] - u[j]).norm(), 0.0, 5.0)
        total += abs(t - (v[i] - v[j]).norm()).item()
    assert losses.distance_loss(u, v, upper=5.0).item() == pytest.approx(total / 15, abs=1e-4)


def test_distance_loss_gradient_finite_with_duplicates():
    u = torch.ones(3, 4)
    v = torch.ones(3, 5, requires_grad=True)
    losses.distance_loss(u, v, upper=2.0).backward()
    assert torch.isfinite(v.grad).all()


def test_balance_terms_are_different_quantities():
    # Rows are balanced but each column is constant: sentence term 0, dimension term 1.
    s = torch.tensor([[1.0, -1.0], [1.0, -1.0], [1.0, -1.0]])
    assert losses.sentence_balance_loss(s).item() == 0.0
    assert losses.dimension_balance_loss(s).item() == 1.0
    # Columns balanced, rows constant: the reverse.
    s = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
    assert losses.sentence_balance_loss(s).item() == 1.0
    assert losses.dimension_balance_loss(s).item() == 0.0


def test_balance_hand_computed():
    s = torch.tensor([[1.0, 1.0, -1.0, 1.0], [-1.0, -1.0, -1.0, 1.0]])
    # row means: 0.5, -0.5 -> 0.5 ; column means: 0, 0, -1, 1 -> 0.5
    assert losses.sentence_balance_loss(s).item() == pytest.approx(0.5)
    assert losses.dimension_balance_loss(s).item() == pytest.approx(0.5)


def test_soft_sign_is_scale_free_and_tends_to_sign():
    v = torch.tensor([[0.3, -0.1, 2.0, -0.5]])
    assert torch.allclose(losses.soft_sign(v, 3.0), losses.soft_sign(10 * v, 3.0), atol=1e-6)
    assert torch.equal(losses.soft_sign(v, 1000.0).sign(), v.sign())
    assert (losses.soft_sign(v, 1000.0).abs() > 0.999).all()


def test_contrastive_hand_computed():
    v = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    v_aug = torch.tensor([[3.0, 4.0], [1.0, 1.0], [1.0, 2.0]])
    owner = torch.tensor([0, 1, 1])
    # distances: 5, 0, 1 -> mean 2
    assert losses.contrastive_loss(v, v_aug, owner).item() == pytest.approx(2.0, abs=1e-4)
    assert losses.contrastive_loss(v, v_aug[:0], owner[:0]).item() == 0.0


def test_decorrelation_hand_computed():
    # Columns 0 and 1 identical (corr 1), column 2 orthogonal to both (corr 0): off-diagonal
    # squared correlations are 1, 1 (the (0,1) pair both ways) and four zeros -> 2 / 6.
    s = torch.tensor([[1.0, 1.0, 1.0], [-1.0, -1.0, 1.0], [1.0, 1.0, -1.0], [-1.0, -1.0, -1.0]])
    assert losses.decorrelation_loss(s).item() == pytest.approx(2.0 / 6.0, abs=1e-6)
    # Anti-correlated columns count as much as correlated ones.
    s[:, 1] = -s[:, 0]
    assert losses.decorrelation_loss(s).item() == pytest.approx(2.0 / 6.0, abs=1e-6)
    # Mutually orthogonal balanced columns: 0.
    h = torch.tensor([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])
    assert losses.decorrelation_loss(h).item() == pytest.approx(0.0, abs=1e-6)
