"""Tests for the curve rows of earlier runs (evaluation.earlier_rows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.comparison import cell_differences
from evaluation.config import EvalConfig
from evaluation.earlier_rows import earlier_rows


def _results(path: Path, config: EvalConfig, rows: list[dict]) -> str:
    path.write_text(json.dumps({"config": config.to_dict(), "curves": {"rows": rows}}))
    return str(path)


def curves(**fields) -> EvalConfig:
    return EvalConfig.from_dict({"curves": fields})


def _row(method: str, attack: str, z: list[float], human: list[float] | None = None) -> dict:
    row = {"method": method, "attack": attack, "z": z, "family": method}
    row.update({"words_kept": 0.5, "roc_auc": 1.0, "tpr@1%fpr": 1.0})
    return row if human is None else {**row, "human_z": human}


def test_rows_of_an_earlier_run_pair_with_this_runs_on_the_first_prompts(tmp_path: Path) -> None:
    human = [0.1 * i - 1 for i in range(20)]
    old = curves(methods=["ours", "kgw1"], negatives=20)
    path = _results(
        tmp_path / "old.json",
        old,
        [
            _row("ours", "none", [5.0] * 8, human),  # made again by the new run: left out
            _row("kgw1", "none", [5.0] * 8, human),
            _row("kgw1", "cut", [0.0, 3.0, 0.0, 3.0, 9.0, 9.0, 9.0, 9.0]),
        ],
    )
    cfg = curves(methods=["ours"], negatives=20, baseline="kgw1", rows_from=[path])
    rows = earlier_rows(cfg)
    assert [(r["method"], r["attack"], r["from"]) for r in rows] == [
        ("kgw1", "none", path),
        ("kgw1", "cut", path),
    ]
    mine = [_row("ours", "none", [5.0] * 4, human), _row("ours", "cut", [3.0] * 4)]
    (diff,) = cell_differences({"rows": mine + rows}, "ours", "kgw1")[1:]
    assert diff["attack"] == "cut" and diff["texts"] == 4  # the first 4 prompts only
    assert diff["tpr_diff"] == pytest.approx(0.5)  # 4 of 4 flagged against 2 of 4

    other = curves(methods=["ours"], negatives=40, rows_from=[path])
    with pytest.raises(ValueError, match="other texts \\(curves.negatives: 20 there, 40 here\\)"):
        earlier_rows(other)
    absent = curves(methods=["ours"], baseline="synthid", negatives=20, rows_from=[path])
    with pytest.raises(ValueError, match="\\['synthid'\\] are neither curve methods nor in"):
        earlier_rows(absent)


def test_a_method_gathers_cells_from_files_that_made_the_same_texts(tmp_path: Path) -> None:
    human = [0.0] * 4
    config = curves(methods=["kgw1", "ours"])
    first = _results(
        tmp_path / "a.json",
        config,
        [_row("kgw1", "none", [5.0] * 4, human), _row("kgw1", "cut", [1.0] * 4)],
    )
    second = _results(
        tmp_path / "b.json",
        config,
        [
            _row("kgw1", "none", [5.0] * 4, human),  # the same texts: its new cell joins
            _row("kgw1", "cut", [2.0] * 4),
            _row("kgw1", "swap", [3.0] * 4),
            _row("ours", "none", [4.0] * 4, human),
        ],
    )
    third = _results(  # another `ours` (other z-scores): left out
        tmp_path / "c.json", config, [_row("ours", "none", [6.0] * 4, human), _row("ours", "x", [])]
    )
    cfg = curves(methods=["kgw0"], rows_from=[first, second, third])
    got = [(r["method"], r["attack"], r["z"][:1], r["from"]) for r in earlier_rows(cfg)]
    assert got == [
        ("kgw1", "none", [5.0], first),
        ("kgw1", "cut", [1.0], first),
        ("kgw1", "swap", [3.0], second),
        ("ours", "none", [4.0], second),
    ]


def test_the_results_of_a_flat_config_pair_too(tmp_path: Path) -> None:
    """A results.json of a run before the sections holds its config flat, partly (the fields of
    its time): a field it lacks is at its default."""
    human = [0.0] * 4
    flat = {"generator": "smollm2-135m", "seed": 0, "curve_methods": ["kgw1"], "curve_offset": 0}
    rows = [_row("kgw1", "none", [5.0] * 4, human), _row("kgw1", "cut", [1.0] * 4)]
    path = tmp_path / "flat.json"
    path.write_text(json.dumps({"config": flat, "curves": {"rows": rows}}))
    cfg = curves(methods=["ours"], baseline="kgw1", rows_from=[str(path)])
    assert [r["attack"] for r in earlier_rows(cfg)] == ["none", "cut"]
    path.write_text(json.dumps({"config": {**flat, "seed": 1}, "curves": {"rows": rows}}))
    with pytest.raises(ValueError, match="texts.seed: 1 there, 0 here"):
        earlier_rows(cfg)
