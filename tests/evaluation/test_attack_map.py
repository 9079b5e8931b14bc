"""``evaluation.attack_map``: the attacked rows of several runs on one plot."""

from __future__ import annotations

import json

from evaluation import attack_map


def _row(method: str, attack: str, kept: float, auc: float) -> dict:
    return {
        "method": method,
        "attack": attack,
        "words_kept": kept,
        "roc_auc": auc,
        "tpr@1%fpr": auc - 0.1,
        "z": [1.0],
    }


def test_points_skip_unattacked_and_quality_rows_and_the_last_run_wins() -> None:
    first = {
        "curves": {
            "rows": [
                {"method": "unwatermarked", "attack": "none", "ppl_median": 9.0},
                _row("ours", "none", 1.0, 1.0),
                _row("ours", "paraphrase@1.0", 0.8, 0.97),
            ]
        }
    }
    second = {
        "curves": {
            "rows": [
                _row("ours", "paraphrase@1.0", 0.79, 0.96),
                _row("kgw1", "llm_forced@t1r2", 0.55, 0.7),
            ]
        }
    }
    points = attack_map.map_points([first, second, {"methods": {}}])
    assert sorted((p["method"], p["attack"]) for p in points) == [
        ("kgw1", "llm_forced@t1r2"),
        ("ours", "paraphrase@1.0"),
    ]
    assert next(p for p in points if p["method"] == "ours")["roc_auc"] == 0.96
    assert "z" not in points[0]
    assert attack_map.attack_kind("llm_forced@t1r2+llm_paraphrase") == "llm_forced"


def test_cli_writes_the_png_and_refuses_results_without_attacked_rows(tmp_path, capsys) -> None:
    good = tmp_path / "a.json"
    good.write_text(json.dumps({"curves": {"rows": [_row("ours", "deletion@0.3", 0.7, 0.9)]}}))
    out = tmp_path / "map" / "map.png"
    assert attack_map.main([str(good), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(capsys.readouterr().out)["points"] == 1
    empty = tmp_path / "b.json"
    empty.write_text(json.dumps({"curves": {"rows": [_row("ours", "none", 1.0, 1.0)]}}))
    assert attack_map.main([str(empty), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("error: no attacked")
    assert attack_map.main([str(tmp_path / "missing.json"), "--out", str(out)]) == 2


def test_the_report_map_draws_other_runs_and_skips_a_missing_one(tmp_path, caplog) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"curves": {"rows": [_row("kgw1", "paraphrase@1.0", 0.8, 0.99)]}}))
    this = {"curves": {"rows": [_row("ours", "llm_forced@1.0t1", 0.55, 0.89)]}}
    name = attack_map.report_map(this, tmp_path, [str(other), str(tmp_path / "gone.json")])
    assert name == "attack_map.png" and (tmp_path / name).stat().st_size > 0
    assert "gone.json left out" in caplog.text
    assert attack_map.report_map({"curves": {"rows": []}}, tmp_path / "none", []) is None
