"""Tests for document-level splits and held-out passages (data.splits)."""

from __future__ import annotations

from data.sources import Document
from data.splits import HELDOUT, TRAIN, VAL, assign_splits, heldout_passages


def _fake_docs() -> list[Document]:
    docs = [Document(f"news-lee-{i:03d}", "news", ["x"], sentences=["s"] * 6) for i in range(5)]
    docs += [Document(f"news-bg-{i:03d}", "news", ["x"], sentences=["s"] * 7) for i in range(40)]
    docs += [
        Document(f"wiki-{i}", "wiki", ["x"], sentences=["s"] * (20 + 7 * i)) for i in range(30)
    ]
    return docs


def test_split_is_by_document_and_deterministic() -> None:
    docs = _fake_docs()
    split = assign_splits(docs, seed=0, heldout_news_background=10, min_val_sentences=200)
    assert split == assign_splits(docs, seed=0, heldout_news_background=10, min_val_sentences=200)
    assert set(split) == {d.doc for d in docs}
    assert all(split[d.doc] == HELDOUT for d in docs if d.doc.startswith("news-lee-"))
    assert sum(split[d.doc] == HELDOUT for d in docs if d.doc.startswith("news-bg-")) == 10
    val = [d for d in docs if split[d.doc] == VAL]
    assert sum(len(d.sentences) for d in val) >= 200
    assert {d.source for d in val} == {"news", "wiki"}
    assert any(split[d.doc] == TRAIN for d in docs)
    assert split != assign_splits(docs, seed=1, heldout_news_background=10, min_val_sentences=200)


def test_heldout_passages_have_bounded_length() -> None:
    sentence = "The river rose quickly after a week of heavy rain in the hills. "
    paragraphs = [sentence * n for n in (3, 5, 30, 2, 8, 4)]
    doc = Document("wiki-1", "wiki", [p.strip() for p in paragraphs])
    passages = heldout_passages(doc)
    assert len(passages) >= 3
    assert len({p["doc"] for p in passages}) == len(passages)
    lengths = [len(p["text"].split()) for p in passages]
    assert all(150 <= n <= 300 + 13 for n in lengths[:-1])
    assert sum(lengths) == sum(len(p.split()) for p in paragraphs)
    news = Document("news-bg-001", "news", ["One article."])
    expected = [{"doc": "news-bg-001", "source": "news", "text": "One article."}]
    assert heldout_passages(news) == expected
