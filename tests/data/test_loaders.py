"""Tests for the sentence-compression loader and the corpus writer (data.loaders)."""

from __future__ import annotations

from pathlib import Path

from mapper.corpus import load_corpus


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
