"""Tests for the resumable JSONL result cache (evaluation.store)."""

from __future__ import annotations

from pathlib import Path

from evaluation.store import Store


def test_store_resumes_and_ignores_a_cut_line(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.put("t", [{"key": "a", "v": 1}, {"key": "b", "v": 2}])
    with (tmp_path / "t.jsonl").open("a") as f:
        f.write('{"key": "c", "v"')  # killed mid-write
    again = Store(tmp_path).table("t")
    assert sorted(again) == ["a", "b"] and again["b"]["v"] == 2
