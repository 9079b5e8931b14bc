"""Checks on the committed corpus files under data/corpus (schema, counts, split hygiene)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from data.splits import TRAIN, VAL
from mapper.corpus import load_corpus

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


@pytest.fixture(scope="module")
def corpus() -> tuple[list[dict], list[dict]]:
    if not (CORPUS / "sentences.jsonl.gz").is_file():
        pytest.skip("corpus not built yet (python -m data.build)")
    return load_corpus(CORPUS / "sentences.jsonl.gz"), load_corpus(CORPUS / "heldout.jsonl.gz")


def test_corpus_schema_and_counts(corpus: tuple[list[dict], list[dict]]) -> None:
    sentences, heldout = corpus
    keys = {"id", "doc", "source", "split", "text", "paraphrase", "shortened", "expanded"}
    for record in sentences:
        assert set(record) == keys | {"synonym"}
        assert record["source"] in {"wiki", "news"} and record["split"] in {TRAIN, VAL}
        assert all(isinstance(x, str) and x for k in ("paraphrase", "shortened") for x in record[k])
    assert len({r["id"] for r in sentences}) == len(sentences)
    val = [r for r in sentences if r["split"] == VAL]
    assert len(val) >= 1000 and len({r["doc"] for r in val}) >= 20
    assert {r["source"] for r in val} == {"wiki", "news"}
    assert sum(len(r["paraphrase"]) for r in sentences) >= 4000
    for kind in ("shortened", "expanded", "synonym"):
        assert sum(bool(r[kind]) for r in sentences) >= 0.6 * len(sentences)
    long_passages = [h for h in heldout if len(h["text"].split()) >= 150]
    assert len(long_passages) >= 300
    assert len({h["doc"] for h in heldout}) == len(heldout)


def test_corpus_splits_do_not_share_documents(corpus: tuple[list[dict], list[dict]]) -> None:
    sentences, heldout = corpus
    splits_of = defaultdict(set)
    for record in sentences:
        splits_of[record["doc"]].add(record["split"])
    assert all(len(s) == 1 for s in splits_of.values())
    heldout_docs = {h["doc"].split("-p")[0] for h in heldout}
    assert not heldout_docs & set(splits_of)
