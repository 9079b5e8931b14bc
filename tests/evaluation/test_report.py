"""The report's comparison section (evaluation.curve_report.comparison_lines): baseline, methods."""

from __future__ import annotations

from evaluation.curve_report import comparison_lines


def _curves() -> dict:
    """Ours clearly ahead of a KGW-1 variant after one attack, KGW-0 level with it; no
    unwatermarked quality row."""
    human = [0.1 * i - 1.5 for i in range(30)]
    rows = []
    methods = (("kgw0", "kgw0", 0.5), ("ours", "ours", 6.0), ("kgw1-d1.0", "kgw1", 0.5))
    for method, family, z_attacked in methods:
        rows.append(
            {
                "method": method,
                "family": family,
                "attack": "none",
                "words_kept": 1.0,
                "roc_auc": 1.0,
                "tpr@1%fpr": 1.0,
                "z": [8.0] * 20,
                "human_z": human,
            }
        )
        rows.append(
            {
                "method": method,
                "family": family,
                "attack": "paraphrase@1.0",
                "words_kept": 0.8,
                "roc_auc": 0.9,
                "tpr@1%fpr": 0.5,
                "z": [z_attacked + 0.01 * i for i in range(20)],
            }
        )
    return {"rows": rows}


def test_differences_use_the_named_baseline_and_need_one() -> None:
    assert comparison_lines(_curves()) == []  # no quality reference: no matched KGW-1
    lines = comparison_lines(_curves(), "kgw1-d1.0")
    assert lines[0].startswith("**ours against kgw1-d1.0**")
    row = next(line for line in lines if line.startswith("| paraphrase@1.0"))
    assert "resolved, ahead" in row
    titles = [line for line in lines if line.startswith("**")]
    assert titles == [
        "**ours against kgw1-d1.0** (same prompts and human texts; paired bootstrap, "
        "2,000 draws, 95% intervals)",
        "**kgw0 against kgw1-d1.0** (same prompts and human texts; paired bootstrap, "
        "2,000 draws, 95% intervals)",
    ]
    kgw0 = lines[lines.index(titles[1]) :]
    assert "within noise" in next(line for line in kgw0 if line.startswith("| paraphrase@1.0"))


def test_a_cell_with_texts_left_as_they_were_is_also_compared_on_the_rewritten_ones() -> None:
    curves = _curves()
    for row in curves["rows"]:
        if row["attack"] != "none":  # ours: its first 5 texts left as they were (z 8)
            ours = row["method"] == "ours"
            row["rewritten_mask"] = [not (ours and i < 5) for i in range(20)]
            if ours:
                row["z"] = [8.0] * 5 + [0.5 + 0.01 * i for i in range(15)]
    lines = comparison_lines(curves, "kgw1-d1.0")
    ours = lines[: lines.index(next(x for x in lines if x.startswith("**kgw0")))]
    whole = next(x for x in ours if x.startswith("| paraphrase@1.0 ("))
    alone = next(x for x in ours if x.startswith("| paraphrase@1.0, rewritten for both"))
    assert "resolved, ahead" in whole  # the 5 untouched texts carry it
    assert "(15 texts)" in alone and "within noise" in alone  # level where both were rewritten
    assert not any("rewritten for both" in x for x in lines[len(ours) :])  # kgw0: all rewritten


def test_ours_is_also_compared_to_each_further_baseline() -> None:
    lines = comparison_lines(_curves(), "kgw1-d1.0", also=["kgw0", "missing", "kgw1-d1.0"])
    titles = [line.split("**")[1] for line in lines if line.startswith("**")]
    assert titles == ["ours against kgw1-d1.0", "kgw0 against kgw1-d1.0", "ours against kgw0"]
    last = lines[lines.index(next(x for x in lines if x.startswith("**ours against kgw0"))) :]
    assert "resolved, ahead" in next(x for x in last if x.startswith("| paraphrase@1.0"))
