"""Deterministic document-level train / val / held-out split and held-out passages.

Held-out documents are never used to train the Semantic Mapping Model; they are kept for watermark
evaluation (prompts and human text) and for calibrating detection on human text. Every decision
below depends only on the sorted document ids and a seed, so the split is reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from data.sources import Document, split_sentences

HELDOUT, TRAIN, VAL = "heldout", "train", "val"


def _shuffled(ids: Sequence[str], seed: int, salt: str) -> list[str]:
    ordered = sorted(ids)
    random.Random(f"{seed}:{salt}").shuffle(ordered)
    return ordered


def _take_sentences(
    docs: list[Document], seed: int, salt: str, target: int, overshoot: float = 1.3
) -> set[str]:
    """Pick documents in a seeded order until they hold ``target`` sentences.

    Documents that would push the total beyond ``overshoot * target`` are skipped, so one huge
    article cannot dominate the pick and many documents contribute.
    """
    by_id = {d.doc: d for d in docs}
    chosen: set[str] = set()
    total = 0
    for doc_id in _shuffled(list(by_id), seed, salt):
        if total >= target:
            break
        size = len(by_id[doc_id].sentences)
        if size == 0 or total + size > overshoot * target:
            continue
        chosen.add(doc_id)
        total += size
    return chosen


def assign_splits(
    docs: list[Document],
    seed: int = 0,
    heldout_news_background: int = 150,
    heldout_wiki_fraction: float = 0.15,
    val_fraction: float = 0.10,
    min_val_sentences: int = 1200,
) -> dict[str, str]:
    """Assign every document to ``heldout``, ``train`` or ``val``.

    Held out: all ``lee.cor`` articles, ``heldout_news_background`` of the ``lee_background``
    articles and Wikipedia articles holding about ``heldout_wiki_fraction`` of the Wikipedia
    sentences (whole articles, many of them, in a seeded order). Of the rest,
    documents holding about ``val_fraction`` of each source's sentences go to ``val`` (at least
    ``min_val_sentences`` in total, topped up from Wikipedia), the others to ``train``.

    Args:
        docs: All documents, with sentences.
        seed: Seed of the document shuffles.
        heldout_news_background: Number of ``lee_background`` articles to hold out.
        heldout_wiki_fraction: Fraction of the Wikipedia sentences to hold out (whole articles).
        val_fraction: Target fraction of the remaining sentences (per source) for validation.
        min_val_sentences: Minimum number of validation sentences.

    Returns:
        Mapping from document id to split name.
    """
    split: dict[str, str] = {}
    background = [d.doc for d in docs if d.doc.startswith("news-bg-")]
    for d in docs:
        if d.doc.startswith("news-lee-"):
            split[d.doc] = HELDOUT
    for doc_id in _shuffled(background, seed, "heldout-news")[:heldout_news_background]:
        split[doc_id] = HELDOUT
    wiki_docs = [d for d in docs if d.source == "wiki"]
    target = round(heldout_wiki_fraction * sum(len(d.sentences) for d in wiki_docs))
    for doc_id in _take_sentences(wiki_docs, seed, "heldout-wiki", target):
        split[doc_id] = HELDOUT

    rest = [d for d in docs if d.doc not in split]
    val: set[str] = set()
    for source in ("news", "wiki"):
        pool = [d for d in rest if d.source == source]
        target = round(val_fraction * sum(len(d.sentences) for d in pool))
        val |= _take_sentences(pool, seed, f"val-{source}", target)
    have = sum(len(d.sentences) for d in rest if d.doc in val)
    if have < min_val_sentences:
        pool = [d for d in rest if d.source == "wiki" and d.doc not in val]
        val |= _take_sentences(pool, seed, "val-topup", min_val_sentences - have, overshoot=2.0)
    for d in rest:
        split[d.doc] = VAL if d.doc in val else TRAIN
    return split


def heldout_passages(doc: Document, min_words: int = 150, max_words: int = 300) -> list[dict]:
    """Turn one held-out document into records ``{"doc", "source", "text"}``.

    News articles stay whole. Wikipedia articles are cut into passages of roughly
    ``min_words``-``max_words`` words: a passage closes at the end of a paragraph once it has
    ``min_words`` words, or before a sentence that would take it past ``max_words``. Paragraph
    breaks inside a passage are kept as newlines; a short remainder joins the previous passage.
    Passage ids are ``{doc}-p{index:03d}``.

    Args:
        doc: A held-out document.
        min_words: Close a passage at a paragraph end once it has at least this many words.
        max_words: Never grow a passage of ``min_words`` or more beyond this many words.

    Returns:
        The passage records, in reading order.
    """
    if doc.source != "wiki":
        return [{"doc": doc.doc, "source": doc.source, "text": doc.text}]
    passages: list[list[list[str]]] = []  # passage -> paragraphs -> sentences
    current: list[list[str]] = []
    words = 0
    for paragraph in doc.paragraphs:
        current.append([])
        for sentence in split_sentences(paragraph):
            size = len(sentence.split())
            if words >= min_words and words + size > max_words:
                passages.append([p for p in current if p])
                current, words = [[]], 0
            current[-1].append(sentence)
            words += size
        if words >= min_words:
            passages.append(current)
            current, words = [], 0
    current = [p for p in current if p]
    if current:
        if passages and words < min_words // 2:
            passages[-1].extend(current)
        else:
            passages.append(current)
    return [
        {
            "doc": f"{doc.doc}-p{i:03d}",
            "source": doc.source,
            "text": "\n".join(" ".join(par) for par in passage),
        }
        for i, passage in enumerate(passages)
    ]
