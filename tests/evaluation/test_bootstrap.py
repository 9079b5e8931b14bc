"""Paired bootstrap intervals: the AUC and TPR they resample equal the metrics' own."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.bootstrap import auc, auc_difference, quality_ratio, tpr_at
from evaluation.metrics import detection_metrics


def test_auc_and_tpr_match_the_detection_metrics_with_ties() -> None:
    rng = np.random.default_rng(0)
    pos = np.round(rng.normal(1.0, 1.0, 60), 1)  # rounded: many ties
    neg = np.round(rng.normal(0.0, 1.0, 200), 1)
    ref = detection_metrics(pos.tolist(), neg.tolist())
    assert auc(pos[None], neg[None])[0] == pytest.approx(ref["roc_auc"], abs=1e-6)  # float32 there
    assert tpr_at(pos[None], neg[None], 0.01)[0] <= ref["tpr@1%fpr"] + 1e-12


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
