"""Paired bootstrap intervals, and the AUC and TPR at an FPR that they resample (the metrics'
own) against the ROC curve's."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.bootstrap import auc_difference, quality_ratio
from evaluation.metrics import auc, detection_metrics, roc_curve, tpr_at


def slow_auc_and_tpr(pos: list[float], neg: list[float], fpr: float) -> tuple[float, float]:
    """ROC-AUC over every (positive, negative) pair, ties half; the largest TPR of a threshold
    (positive at score >= t) whose FPR is at most ``fpr``."""
    pairs = [(p > n) + 0.5 * (p == n) for p in pos for n in neg]
    rates = [
        (sum(n >= t for n in neg) / len(neg), sum(p >= t for p in pos) / len(pos))
        for t in set(pos + neg)
    ]
    tpr = max([0.0] + [t for f, t in rates if f <= fpr + 1e-12])
    return sum(pairs) / len(pairs), tpr


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_and_tpr_match_the_slow_reference_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pos = np.round(rng.normal(1.0, 1.0, 60), 1)  # rounded: many ties
    neg = np.round(rng.normal(0.0, 1.0, 200 + seed), 1)
    for level in (0.01, 0.05, 0.1, 0.34):
        area, best = slow_auc_and_tpr(pos.tolist(), neg.tolist(), level)
        assert auc(pos[None], neg[None])[0] == pytest.approx(area, abs=1e-12)
        assert tpr_at(pos[None], neg[None], level)[0] == best
    got = detection_metrics(pos.tolist(), neg.tolist())
    assert got["roc_auc"] == auc(pos[None], neg[None])[0]
    assert got["tpr@1%fpr"] == tpr_at(pos[None], neg[None], 0.01)[0]
    fpr, tpr = roc_curve(pos.tolist(), neg.tolist())  # torchmetrics (float32): the plots' curve
    trapezoid = sum((f1 - f0) * (t0 + t1) / 2 for f0, f1, t0, t1 in zip(fpr, fpr[1:], tpr, tpr[1:]))
    assert got["roc_auc"] == pytest.approx(trapezoid, abs=1e-6)


def test_identical_methods_differ_by_exactly_zero_and_a_gap_is_resolved() -> None:
    rng = np.random.default_rng(1)
    pos, neg = rng.normal(2, 1, 80), rng.normal(0, 1, 160)
    same = auc_difference(pos, neg, pos, neg, draws=300)
    assert same["auc_diff"] == 0 and same["auc_ci"] == [0.0, 0.0] and not same["resolved"]
    weaker = auc_difference(pos, neg, pos - 1.5, neg, draws=300)
    assert weaker["auc_diff"] > 0 and weaker["resolved"] and weaker["auc_ci"][0] > 0
    with pytest.raises(ValueError, match="same prompts"):
        auc_difference(pos, neg, pos[:-1], neg)


def test_quality_ratio_is_the_ratio_of_medians_and_means() -> None:
    ppl, ref = np.array([10.0, 12.0, 14.0]), np.array([10.0, 10.0, 10.0])
    out = quality_ratio(ppl, [0.1, 0.1, 0.1], ref, [0.05, 0.05, 0.05], draws=200)
    assert out["ppl_ratio"] == pytest.approx(1.2) and out["rep4_ratio"] == pytest.approx(2.0)
    assert out["ppl_ci"][0] >= 1.0 and out["ppl_ci"][1] <= 1.4 and out["prompts"] == 3


def test_paired_mean_difference_and_the_tail_of_quality_ratio() -> None:
    from evaluation.bootstrap import mean_difference, mean_interval, quality_ratio

    same = mean_difference([0, 1, 0, 1], [0, 1, 0, 1])
    assert same["diff"] == 0.0 and same["ci"] == [0.0, 0.0] and not same["resolved"]
    gap = mean_difference([1.0] * 30, [0.0] * 30)
    assert gap["diff"] == 1.0 and gap["resolved"]
    assert mean_interval([1.0, 1.0]) == [1.0, 1.0]
    q = quality_ratio([1, 1, 1, 1], [0.5, 0.0, 0.0, 0.3], [1, 1, 1, 1], [0.0, 0.0, 0.0, 0.3])
    assert q["rep4>0.2"]["diff"] == pytest.approx(0.25)  # 2 of 4 texts against 1 of 4
    assert q["rep4>0.4"]["diff"] == pytest.approx(0.25)
