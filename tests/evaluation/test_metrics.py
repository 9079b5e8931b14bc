"""Tests for the evaluation metrics against hand-computed values (evaluation.metrics)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.metrics import (
    best_f1,
    detection_metrics,
    longest_repeat,
    median,
    ngram_repetition,
    tail_figures,
    tpr_at,
)

POS, NEG = [0.9, 0.8, 0.4], [0.5, 0.3, 0.2]


def test_detection_metrics_by_hand() -> None:
    m = detection_metrics(POS, NEG)
    assert m["roc_auc"] == pytest.approx(8 / 9)  # 8 of 9 (pos, neg) pairs ordered
    # thresholds: >= 0.8 -> P 1, R 2/3, F1 0.8; >= 0.4 -> P 3/4, R 1, F1 6/7
    assert best_f1(POS, NEG) == pytest.approx(6 / 7)
    assert m["tpr@1%fpr"] == pytest.approx(2 / 3)  # no false positive allowed: cut above 0.5
    assert tpr_at(np.array([POS]), np.array([NEG]), 0.34)[0] == 1.0  # one negative allowed
    assert tpr_at(np.array([POS]), np.array([NEG]), 1.0)[0] == 1.0  # every negative allowed
    assert detection_metrics([2.0, 3.0], [0.0, 1.0])["tpr@10%fpr"] == 1.0
    with pytest.raises(ValueError):
        detection_metrics([], NEG)


def test_repetition_and_medians_by_hand() -> None:
    assert ngram_repetition([1, 2, 1, 2, 1, 2], 2) == pytest.approx(1 - 2 / 5)
    assert ngram_repetition([1, 2, 3], 4) == 0.0
    assert ngram_repetition([5, 5, 5, 5], 1) == pytest.approx(0.75)
    assert median([3.0, 1.0, float("nan"), 2.0, 10.0]) == pytest.approx(2.5)


def test_longest_repeat_and_the_tail_by_hand() -> None:
    assert longest_repeat([1, 2, 3, 1, 2, 3, 1, 2]) == 5  # 1 2 3 1 2 at 0 and at 3 (overlap)
    assert longest_repeat([1, 2, 1, 3, 1, 2, 9]) == 2
    assert longest_repeat([5, 5, 5, 5]) == 3
    assert longest_repeat([1, 2, 3]) == longest_repeat([]) == 0
    loop = [7, 8] * 10  # rep-4 = 1 - 2/17
    calm = list(range(20))
    texts = [loop, calm, calm, calm]
    tail = tail_figures([ngram_repetition(t, 4) for t in texts], [longest_repeat(t) for t in texts])
    assert tail == {"rep4>0.2": 0.25, "rep4>0.4": 0.25, "longest_mean": 18 / 4, "longest_max": 18}
