"""Tests for the resumable JSONL result cache (evaluation.store)."""

from __future__ import annotations

import json
from pathlib import Path

from evaluation.store import Store


def test_store_resumes_and_ignores_a_cut_line(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.put("t", [{"key": "a", "v": 1}, {"key": "b", "v": 2}])
    with (tmp_path / "t.jsonl").open("a") as f:
        f.write('{"key": "c", "v"')  # killed mid-write
    again = Store(tmp_path).table("t")
    assert sorted(again) == ["a", "b"] and again["b"]["v"] == 2


def test_a_saved_seed_is_read_before_the_run_and_merges_on_save(tmp_path: Path) -> None:
    run = Store(tmp_path / "run")
    run.put("t", [{"key": "a", "v": 1}, {"key": "b", "v": 2}])
    seed = tmp_path / "seed"
    assert run.save_seed(seed) == {"t": 2}
    first = (seed / "t.jsonl.gz").read_bytes()
    assert Store(tmp_path / "run").save_seed(seed) == {"t": 2}
    assert (seed / "t.jsonl.gz").read_bytes() == first  # the same tables write the same bytes

    fresh = Store(tmp_path / "fresh", [seed])  # a new checkout: the run's folder is empty
    assert fresh.table("t")["b"]["v"] == 2
    fresh.put("t", [{"key": "b", "v": 3}, {"key": "c", "v": 4}])
    assert (
        not (seed / "t.jsonl").exists()
        and Store(tmp_path / "fresh", [seed]).table("t")["b"]["v"] == 3
    )

    other = Store(tmp_path / "other")  # a second run saved into the same seed adds its records
    other.put("u", [{"key": "x", "v": 5}])
    assert other.save_seed(seed) == {"t": 2, "u": 1}
    assert fresh.save_seed(seed) == {"t": 3, "u": 1}
    assert Store(tmp_path / "empty", [seed]).table("t")["c"]["v"] == 4


def test_a_table_read_as_a_file_gets_the_seeds_records_it_lacks(tmp_path: Path) -> None:
    """The LLM rewrites' cache is read and appended by data's own code, by path: the seeds'
    records must be in that file, and the run's own records must win and not be doubled."""
    Store(tmp_path / "old").put("p", [{"key": "a", "v": 1}, {"key": "b", "v": 2}])
    seed = tmp_path / "seed"
    Store(tmp_path / "old").save_seed(seed)
    run = Store(tmp_path / "run", [seed])
    run.put("p", [{"key": "b", "v": 9}])
    assert run.table("p")["b"]["v"] == 9
    path = run.file("p")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert sorted((r["key"], r["v"]) for r in lines) == [("a", 1), ("b", 9)]
    with path.open("a") as f:  # the data code appends a record of its own
        f.write(json.dumps({"key": "c", "v": 3}) + "\n")
    assert run.table("p")["c"]["v"] == 3  # read again after the file was handed out
    assert run.file("p").read_text().count('"key"') == 3  # a second call adds nothing


def test_a_table_of_another_format_is_left_out_of_the_seed(tmp_path: Path) -> None:
    run = Store(tmp_path / "run")
    run.put("t", [{"key": "a", "v": 1}])
    (tmp_path / "run" / "paraphrases.jsonl").write_text('{"id": "x", "mode": "plain"}\n')
    assert run.save_seed(tmp_path / "seed") == {"t": 1}
    assert not (tmp_path / "seed" / "paraphrases.jsonl.gz").exists()
