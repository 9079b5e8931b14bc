"""The comparison of :mod:`research.refactor_snapshot` (no models)."""

from __future__ import annotations

import json
from pathlib import Path

from research import refactor_snapshot as script


def test_compare_finds_a_changed_detection_and_a_moved_fingerprint(tmp_path: Path, capsys) -> None:
    row = {"fingerprint": "wm-1", "detect": [{"p_value": 0.5}, {"p_value": 0.01}]}
    before = {"default": {**row, "generate": [[[1, 2], [1]]], "generate1": [[[3], []]]}}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(before))
    b.write_text(json.dumps(before))
    assert script.compare(a, b) == 0
    changed = json.loads(json.dumps(before))
    changed["default"]["detect"][1]["p_value"] = 0.0100001
    b.write_text(json.dumps(changed))
    assert script.compare(a, b) == 1
    assert '"detections_identical": "1/2"' in capsys.readouterr().out
    moved = json.loads(json.dumps(before))
    moved["default"]["fingerprint"] = "wm-2"
    b.write_text(json.dumps(moved))
    assert script.compare(a, b) == 1
