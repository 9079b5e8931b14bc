""":mod:`research.compare_runs`: one method's cells in two runs, paired, and refused when
the runs did not test the same texts."""

from __future__ import annotations

import random

import pytest

from research import compare_runs as compare

CONFIG = {"heldout": "h.jsonl.gz", "sources": ["news"], "seed": 0, "curve_prompts": 40}


def run(shift: float, humans: list[float], seed: int) -> dict:
    rng = random.Random(seed)
    rows = [
        {"method": "kgw1", "attack": "none", "z": [0.0] * 40, "human_z": humans},
        {"method": "ours", "attack": "none", "z": [5.0] * 40, "human_z": humans},
    ]
    for attack, kept in (("paraphrase@1.0", 0.8), ("synonym@1.0", 0.5)):
        z = [rng.gauss(shift + 4 * kept - 2.5, 1.0) for _ in range(40)]
        rows.append({"method": "ours", "attack": attack, "z": z, "words_kept": kept})
    for row in rows:
        row.setdefault("words_kept", 1.0)
        row["roc_auc"], row["tpr@1%fpr"] = 1.0, 1.0
    return {"config": CONFIG, "curves": {"rows": rows}}


def test_cells_are_paired_and_a_large_shift_is_resolved() -> None:
    humans = [random.Random(1).gauss(0, 1) for _ in range(100)]
    curves = compare.merged(run(2.0, humans, 0), run(0.0, humans, 0), "ours", ("new", "old"))
    assert {r["method"] for r in curves["rows"]} == {"new", "old"}
    cells = compare.cell_differences(curves, "new", "old")
    assert [c["attack"] for c in cells] == ["none", "paraphrase@1.0", "synonym@1.0"]
    assert all(c["auc_diff"] > 0 for c in cells[1:])
    assert cells[1]["resolved"] and cells[2]["resolved"]  # 2 z of lift, AUC far from 1
    same = compare.merged(run(0.0, humans, 0), run(0.0, humans, 0), "ours", ("a", "b"))
    assert all(
        c["auc_diff"] == 0 and not c["resolved"] for c in compare.cell_differences(same, "a", "b")
    )


def test_runs_of_other_texts_are_refused() -> None:
    humans = [float(i) for i in range(100)]
    noisy = [h + 1e-4 for h in humans]  # the same texts, float noise between runs
    assert compare.merged(run(0.0, humans, 0), run(0.0, noisy, 0), "ours", ("a", "b"))
    with pytest.raises(SystemExit, match="human texts"):
        compare.merged(run(0.0, humans, 0), run(0.0, humans[::-1], 0), "ours", ("a", "b"))
    other = run(0.0, humans, 0)
    other["config"] = {**CONFIG, "seed": 1}
    with pytest.raises(SystemExit, match="texts.seed"):
        compare.merged(run(0.0, humans, 0), other, "ours", ("a", "b"))
    sectioned = run(0.0, humans, 0)  # a run of today's config, in sections, against a flat one
    sectioned["config"] = {
        "texts": {"heldout": "h.jsonl.gz", "sources": ["news"], "seed": 0},
        "curves": {"prompts": 40},
    }
    assert compare.merged(sectioned, run(0.0, humans, 0), "ours", ("a", "b"))
    with pytest.raises(SystemExit, match="no curves"):
        compare.merged(run(0.0, humans, 0), run(0.0, humans, 0), "kgw0", ("a", "b"))


def test_the_module_compares_two_result_files(tmp_path, capsys) -> None:
    import json

    humans = [random.Random(1).gauss(0, 1) for _ in range(100)]
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    new.write_text(json.dumps(run(2.0, humans, 0)))
    old.write_text(json.dumps(run(0.0, humans, 0)))
    compare.main([str(new), str(old), "--names", "0.10,0.9"])
    cells = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    assert [c["attack"] for c in cells] == ["none", "paraphrase@1.0", "synonym@1.0"]
    with pytest.raises(SystemExit, match="two labels"):
        compare.main([str(new), str(old), "--names", "a"])
