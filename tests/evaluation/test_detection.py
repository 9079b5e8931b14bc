"""Tests for the evaluation's detection type (evaluation.detection): caches written as
dicts before it existed load unchanged, and records written now keep their keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.detection import MethodDetection
from evaluation.store import Store
from watermark.detect.result import DetectionResult

# a line of runs/eval/matched/cache/detections.jsonl (ours), and a SynthID-style one with score
OLD_LINES = [
    '{"key": "ours-det-e654e8116642f1ce|03ae95d4586da79f4cc5", "z": -1.6402239098740974, '
    '"p": 0.9598836446144717, "num_scored": 139, "num_tokens": 200, '
    '"green_fraction": 0.4676258992805755, "awr": 0.695, "seconds": 1.190196104624988}',
    '{"key": "synthid-n5-abc|01", "z": 4.0, "p": 3.2e-05, "num_scored": 180, "num_tokens": 200, '
    '"green_fraction": 0.56, "awr": 0.9, "score": 0.56, "seconds": 0.01}',
]


def test_old_cache_records_load_and_are_written_back_the_same(tmp_path: Path) -> None:
    (tmp_path / "detections.jsonl").write_text("\n".join(OLD_LINES) + "\n")
    table = Store(tmp_path).table("detections")
    for line in OLD_LINES:
        record = json.loads(line)
        found = MethodDetection.from_record(table[record["key"]])
        assert found.z_score == record["z"] and found.p_value == record["p"]
        assert found.seconds == record["seconds"] and found.score == record.get("score")
        again = {"key": record["key"], **found.to_record()}
        assert json.dumps(again) == line  # same keys, same order, same values


def test_a_detection_without_score_or_time_leaves_them_out() -> None:
    result = DetectionResult(
        z_score=2.5,
        p_value=0.006,
        num_scored=90,
        num_tokens=100,
        green_fraction=0.6,
        awr=0.9,
        score=3.0,
    )
    found = MethodDetection.from_result(result)
    assert found == MethodDetection(2.5, 0.006, 90, 100, 0.6, 0.9)
    assert found.to_record() == {
        "z": 2.5,
        "p": 0.006,
        "num_scored": 90,
        "num_tokens": 100,
        "green_fraction": 0.6,
        "awr": 0.9,
    }
    assert MethodDetection.from_record(found.to_record()) == found


def test_scores_count_what_each_method_flags_at_p_001() -> None:
    from evaluation.run import score_detections

    def det(z: float, p: float) -> MethodDetection:
        return MethodDetection(z, p, 10, 10, 0.5, 1.0)

    pos = [det(4.0, 0.001), det(2.0, 0.02), det(3.0, 0.009999)]
    neg = [det(-1.0, 0.8), det(2.6, 0.005), det(0.0, 0.5), det(1.0, 0.2)]
    res = score_detections(pos, neg)
    assert res["tpr@p<0.01"] == pytest.approx(2 / 3) and res["fpr@p<0.01"] == 0.25
    assert res["z"] == [4.0, 2.0, 3.0]
