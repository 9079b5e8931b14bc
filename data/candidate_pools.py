"""Candidate pools for the sentence mapper: N next sentences sampled after a prefix.

The sentence layer keeps the best of N candidates of each next sentence, and those candidates
share their prefix's topic, so a key space in which they all lean the same way buys the choice
little. A pool is what the layer sees: a prefix (the opening sentences of a document, two to six
of them) and N continuations sampled by a config's generator with that config's sampling settings
(the shipped config's unless another is named), each cut where the layer cuts a candidate
(:class:`~watermark.sentences.spans.SentenceEnds`, at most
:data:`~watermark.generate.keep.MAX_SENTENCE_TOKENS`). They are drawn by the product
itself: one unwatermarked ``Watermark.generate`` call over the N copies of each prefix of a
batch (no watermark is needed: the pool is about how the candidates spread, not about which one
a key keeps). Pools committed before 0.9 were drawn with the same settings by a loop of this
module's own, so they are not token for token what this draws.

Pools are sampled in batches of prefixes, N rows each, seeded per batch, and appended to a JSONL
cache as each batch finishes, so an interrupted build resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm
from transformers import StoppingCriteriaList

from data.sentence_rewrites import read_jsonl_gz
from data.sources import split_sentences
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig
from watermark.generate.generation import eos_ids
from watermark.generate.keep import MAX_SENTENCE_TOKENS
from watermark.sentences.spans import SentenceEnds, sentence_spans

PREFIX_SENTENCES = (2, 3, 4, 5, 6)


def document_sentences(corpus_dir: Path, split: str) -> dict[str, list[str]]:
    """The sentences of each ``split`` document in reading order: the training corpus's for
    train and val, the held-out records' (cut by :func:`data.sources.split_sentences`)."""
    if split == "heldout":
        out = {}
        for r in read_jsonl_gz(corpus_dir / "heldout.jsonl.gz"):
            out[r["doc"]] = [s for p in r["text"].split("\n") for s in split_sentences(p)]
        return out
    by_doc: dict[str, list[str]] = {}
    for r in read_jsonl_gz(corpus_dir / "sentences.jsonl.gz"):
        if r["split"] == split:
            by_doc.setdefault(r["doc"], []).append(r["text"])
    return by_doc


def prefixes(corpus_dir: Path, split: str, count: int, seed: int = 0) -> list[dict]:
    """``count`` prefixes ``{"id", "doc", "prefix", "next"}``: a document's opening 2-6
    sentences (drawn per document) and the human sentence that follows, documents in a seeded
    order, cycling through them until ``count`` are found."""
    docs = document_sentences(corpus_dir, split)
    order = sorted(docs)
    random.Random(f"{seed}:pools:{split}").shuffle(order)
    out: list[dict] = []
    for turn in range(len(PREFIX_SENTENCES)):
        for doc in order:
            sentences = docs[doc]
            k = PREFIX_SENTENCES[(turn + int(hashlib.sha1(doc.encode()).hexdigest(), 16)) % 5]
            if len(sentences) > k and len(out) < count:
                prefix = " ".join(sentences[:k])
                out.append({"id": f"{doc}:{k}", "doc": doc, "prefix": prefix, "next": sentences[k]})
    return out


def first_sentence(text: str) -> str | None:
    """The first complete sentence of a continuation, or ``None`` (no end mark reached)."""
    spans = sentence_spans(text)
    if not spans or not spans[0][2]:
        return None
    a, b, _ = spans[0]
    return text[a:b]


def sample_pools(wm: Watermark, batch: Sequence[dict], candidates: int, seed: int) -> list[list]:
    """Per prefix, ``candidates`` sampled first sentences (``None`` where a row did not end one
    within :data:`~watermark.generate.keep.MAX_SENTENCE_TOKENS`), from one unwatermarked
    ``wm.generate`` call over each prefix's copies, seeded by the batch's ids and ``seed``."""
    digest = hashlib.sha256("".join(p["id"] for p in batch).encode()).hexdigest()
    ends = SentenceEnds(wm.tokenizer, eos_ids(wm.generator, wm.tokenizer))
    outs = wm.generate(
        [p["prefix"] for p in batch for _ in range(candidates)],
        max_new_tokens=MAX_SENTENCE_TOKENS,
        seed=int(digest[:8], 16) + seed,
        watermark=False,
        stopping_criteria=StoppingCriteriaList([ends]),
    )
    rows = [first_sentence(o.text) for o in outs]
    return [rows[i * candidates : (i + 1) * candidates] for i in range(len(batch))]


def load_watermark(config: WatermarkConfig | None) -> Watermark:
    """The watermark whose generator and sampling settings draw the pools."""
    return Watermark.load(config)


def build_pools(
    wanted: Sequence[dict],
    cache: Path,
    candidates: int = 32,
    batch_size: int = 8,
    seed: int = 0,
    progress: bool = True,
    config: WatermarkConfig | None = None,
) -> list[dict]:
    """The pool of every prefix in ``wanted`` (``{**prefix, "candidates": [...]}``), sampling
    only those missing from the JSONL ``cache`` (appended batch by batch) with ``config``'s
    generator and sampling settings (default: the shipped config's)."""
    done = {}
    if cache.is_file():
        for line in cache.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by an interruption
            done[(record["id"], record["prefix"])] = record
    todo = [p for p in wanted if (p["id"], p["prefix"]) not in done]
    if todo:
        wm = load_watermark(config)
        cache.parent.mkdir(parents=True, exist_ok=True)
        with cache.open("a", encoding="utf-8") as handle:
            for b in tqdm(range(0, len(todo), batch_size), desc="pools", disable=not progress):
                batch = todo[b : b + batch_size]
                for p, pool in zip(batch, sample_pools(wm, batch, candidates, seed)):
                    done[(p["id"], p["prefix"])] = record = {**p, "candidates": pool}
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                handle.flush()
    return [done[(p["id"], p["prefix"])] for p in wanted]
