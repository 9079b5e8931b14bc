"""Tests for the robustness curves' matched-quality choice (evaluation.curves, curve_report)."""

from __future__ import annotations

from pathlib import Path

from evaluation.curve_report import curve_plot, matched_table
from evaluation.curves import matched_quality, within_limits


def _row(method: str, family: str, ppl: float, rep4: float, z: float, attack: str = "none"):
    return {
        "method": method,
        "family": family,
        "attack": attack,
        "ppl_median": ppl,
        "rep4": rep4,
        "z_median": z,
        "roc_auc": 0.9,
        "tpr@1%fpr": 0.5,
        "words_kept": 1.0,
    }


def test_matched_quality_picks_the_strongest_setting_within_both_limits() -> None:
    rows = [
        {"method": "unwatermarked", "attack": "none", "ppl_median": 10.0, "rep4": 0.08},
        _row("kgw1", "kgw1", 12.0, 0.09, 8.0),  # PPL 1.2x: out
        _row("kgw1-d1.5", "kgw1", 10.9, 0.11, 6.0),  # rep-4 1.375x: out
        _row("kgw1-d1.0", "kgw1", 10.5, 0.10, 4.0),  # 1.05x / 1.25x: in (limits inclusive)
        _row("kgw1-d0.5", "kgw1", 10.1, 0.08, 2.0),  # in, weaker
        _row("ours", "ours", 10.4, 0.05, 5.0),
        _row("ours-b9", "ours", 11.5, 0.05, 9.0),  # out
        _row("kgw0", "kgw0", 13.0, 0.2, 9.0),  # no setting within the limits
    ]
    rows.append(_row("kgw1-d1.0", "kgw1", 0, 0, 0, attack="paraphrase@1.0"))
    curves = {"rows": rows}
    assert matched_quality(curves) == {"kgw1": "kgw1-d1.0", "ours": "ours"}
    assert matched_quality({"rows": rows[1:]}) == {}  # no unwatermarked reference
    table = matched_table(curves)
    assert table[0].startswith("| family (setting) |") and "paraphrase@1.0" in table[0]
    assert table[2].startswith("| kgw1 (kgw1-d1.0) | 1.050x / 1.250x | 0.900 / 0.500 (1.00)")
    assert table[3].endswith("| - |")  # ours was not attacked


def test_within_limits_is_inclusive_and_needs_both() -> None:
    ref = {"ppl_median": 10.0, "rep4": 0.08}
    assert within_limits({"ppl_median": 11.0, "rep4": 0.1}, ref)
    assert not within_limits({"ppl_median": 11.01, "rep4": 0.05}, ref)
    assert not within_limits({"ppl_median": 9.0, "rep4": 0.1001}, ref)
    assert within_limits({"ppl_median": 11.5, "rep4": 0.09}, ref, ppl_limit=1.2, rep4_limit=1.2)


def test_curves_are_drawn_against_words_kept_and_against_meaning_kept(tmp_path: Path) -> None:
    rows = [
        {**_row("ours", "ours", 10, 0.05, 5, attack=a), "words_kept": w, "similarity": m}
        for a, w, m in (("none", 1.0, 1.0), ("paraphrase@1.0", 0.78, 0.93))
    ]
    names = [curve_plot({"rows": rows}, tmp_path, axis) for axis in ("words", "meaning")]
    assert names == ["robustness_curves.png", "robustness_meaning.png"]
    assert all((tmp_path / n).stat().st_size > 1000 for n in names)


def test_rewritten_scores_only_where_some_texts_were_left_as_they_were() -> None:
    from evaluation.curves import rewritten_scores
    from evaluation.detection import MethodDetection

    def det(z: float) -> MethodDetection:
        return MethodDetection(z, 0.5, 100, 100, green_fraction=0.5, awr=1.0)

    neg = [det(0.1 * i - 1.0) for i in range(20)]
    pos = [det(9.0), det(9.0), det(0.0), det(0.5)]
    assert rewritten_scores(pos, neg, [True] * 4) == {"rewritten_mask": [True] * 4}
    found = rewritten_scores(pos, neg, [False, False, True, True])  # the strong two untouched
    assert found["rewritten_mask"] == [False, False, True, True]
    assert found["roc_auc_rewritten"] < 0.9 and found["tpr_rewritten"] == 0.0
