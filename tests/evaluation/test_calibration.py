"""Tests for the calibration stage (evaluation.calibration): p-values from stored flags."""

from __future__ import annotations

import pytest

from evaluation.calibration import calibration_report, variant_p_value
from watermark.detect.stats import green_test, windowed_test


def record(greens: list[bool], tested: list[bool], gamma: float = 0.5) -> dict:
    n = len(greens)
    return {
        "tested": tested,
        "token_ids": list(range(n)),
        "scored": [True] * n,
        "green_bits": [int(g) for g in greens],
        "gamma": [gamma] * n,
        "vocab_green": [gamma] * n,
        "layers": 1,
        "fresh_only": True,
        "awr": 1.0,
        "green_fraction": sum(greens) / n,
        "retokenization_matches": True,
        "positions_match": True,
    }


def test_variant_p_values_match_the_tests() -> None:
    greens = [True] * 10 + [False, True] * 15
    rec = record(greens, [True] * 40)
    assert variant_p_value(rec, True) == green_test(greens, [0.5] * 40)[1]
    bits = [[g] for g in greens]
    members = [list(range(40))] + [list(range(s, s + 8)) for s in range(0, 33, 2)]
    windowed = windowed_test(bits, [[0.5]] * 40, members)[0]
    assert variant_p_value(rec, True, [8]) == pytest.approx(windowed)
    only_tested = record(greens, [False] * 10 + [True] * 30)  # untested tokens are left out
    assert variant_p_value(only_tested, True) == green_test(greens[10:], [0.5] * 30)[1]


def test_report_rows() -> None:
    human = [record([False, True] * 20, [True] * 40) for _ in range(4)]
    marked = [record([True] * 40, [True] * 40)]
    out = calibration_report(human, marked, window_sizes=[8, 16])
    assert out["human_texts"] == 4 and out["watermarked_texts"] == 1
    assert "vocab/unique" in out and not any(k.startswith("mm/") for k in out)  # one null
    for name in ("vocab/unique", "vocab/unique/windows[8, 16]"):
        assert out[name]["fpr@p<0.01"] == 0.0 and out[name]["tpr@p<0.01"] == 1.0
    with pytest.raises(ValueError, match="no human records"):
        calibration_report([])
