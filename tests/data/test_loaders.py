"""Tests for corpus loading and the sentence-compression loader (data.loaders)."""

from __future__ import annotations

from pathlib import Path

import pytest

from data.loaders import load_corpus


def test_load_corpus_missing_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="python -m data.build"):
        load_corpus(tmp_path / "nope.jsonl.gz")


def test_sentence_compression_loader_maps_pairs(tmp_path: Path, monkeypatch) -> None:
    import datasets

    from data.loaders import load_sentence_compression, write_corpus

    rows = [
        {"set": ["The mayor of the city said on Monday that taxes will rise.", "Taxes will rise."]},
        {"set": ["Same sentence twice.", "Same sentence twice."]},
    ]
    monkeypatch.setattr(datasets, "load_dataset", lambda name, split: rows)
    records = load_sentence_compression(val_fraction=0.0)
    assert [r["shortened"] for r in records] == [["Taxes will rise."], []]
    assert {r["split"] for r in records} == {"train"}
    assert records[0]["paraphrase"] == [] and records[0]["doc"] == records[0]["id"]
    assert load_corpus(write_corpus(records, tmp_path / "sc.jsonl.gz")) == records
