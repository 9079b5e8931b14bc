"""Meaning-keeping rewrites of short passages by the 1.5B model, for the sentence mapper.

A *passage* is three consecutive corpus sentences of one document: train and val passages from
``data/corpus/sentences.jsonl.gz`` (the mapper's own splits), held-out passages from
``data/corpus/heldout.jsonl.gz`` (measurement only, never trained on). Each is rewritten by
Qwen2.5-Coder-1.5B (:mod:`data.paraphraser_model`) in one of three ways:

* ``forced``: every sentence restated and reordered, facts listed, sampled at temperature 1
  (the evaluation's forced rewrite, :func:`data.llm_rewrites.forced_task`);
* ``round_trip``: into French and back, greedy (:func:`data.llm_rewrites.round_trip`);
* ``paraphrase``: the evaluation's whole-text paraphrase, greedy.

Each record keeps the passage, its rewrite (``None`` where the judge rejected it), the rewrite's
MPNet cosine to the passage and the share of the passage's facts it keeps, so a reader can filter
on them. The LLM runs are cached per text (:func:`data.llm_paraphrase.run_text_paraphrases`) and
resume where they stopped; the finished table is a committed seed, so a fresh clone decodes
nothing.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Sequence
from pathlib import Path

from data.llm_paraphrase import PARAPHRASE, run_text_paraphrases
from data.llm_rewrites import forced_task, round_trip
from data.sources import split_sentences

MODEL = "qwen2.5-coder-1.5b"
PASSAGE_SENTENCES = 3
KINDS = ("forced", "round_trip", "paraphrase")
# (split, kind) -> passages rewritten; the order is the build order (what is needed first)
PLAN = (
    ("val", "forced", 96),
    ("train", "forced", 400),
    ("heldout", "forced", 128),
    ("val", "round_trip", 32),
    ("train", "round_trip", 120),
    ("train", "paraphrase", 96),
)


def read_jsonl_gz(path: Path) -> list[dict]:
    """The records of a gzip JSONL file (empty when it is missing)."""
    if not path.is_file():
        return []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def corpus_passages(corpus: Path, split: str) -> list[dict]:
    """Non-overlapping windows of :data:`PASSAGE_SENTENCES` consecutive sentences of each
    ``split`` document of the training corpus (``{"id", "doc", "source", "text"}``)."""
    by_doc: dict[str, list[dict]] = {}
    for r in read_jsonl_gz(corpus):
        if r["split"] == split:
            by_doc.setdefault(r["doc"], []).append(r)
    out = []
    for doc, rows in by_doc.items():
        for start in range(0, len(rows) - PASSAGE_SENTENCES + 1, PASSAGE_SENTENCES):
            window = rows[start : start + PASSAGE_SENTENCES]
            text = " ".join(r["text"] for r in window)
            out.append(
                {"id": window[0]["id"], "doc": doc, "source": window[0]["source"], "text": text}
            )
    return out


def heldout_passages(heldout: Path) -> list[dict]:
    """Per held-out record, the sentences after its first two (an evaluation prompt's), three
    at a time, at most two windows a record."""
    out = []
    for index, r in enumerate(read_jsonl_gz(heldout)):
        sentences = [s for p in r["text"].split("\n") for s in split_sentences(p)]
        for w, start in enumerate(range(2, len(sentences) - PASSAGE_SENTENCES + 1, 3)):
            if w == 2:
                break
            text = " ".join(sentences[start : start + PASSAGE_SENTENCES])
            out.append(
                {
                    "id": f"{r['doc']}-{index}-w{w}",
                    "doc": r["doc"],
                    "source": r["source"],
                    "text": text,
                }
            )
    return out


def select(passages: Sequence[dict], count: int, seed: int, salt: str) -> list[dict]:
    """``count`` passages in a seeded order, news and wiki in turn (news is the smaller
    source, so each gets about half where it has enough)."""
    by_source: dict[str, list[dict]] = {}
    for p in sorted(passages, key=lambda p: p["id"]):
        by_source.setdefault(p["source"], []).append(p)
    for name, rows in by_source.items():
        random.Random(f"{seed}:{salt}:{name}").shuffle(rows)
    picked, turn = [], sorted(by_source)
    while len(picked) < count and any(by_source.values()):
        for name in turn:
            if by_source[name] and len(picked) < count:
                picked.append(by_source[name].pop())
    return picked


def rewrite(kind: str, texts: list[str], cache: Path, batch_size: int) -> list[str | None]:
    """The 1.5B model's ``kind`` rewrite of each text (``None``: rejected by the judge)."""
    if kind == "forced":
        task = forced_task(1.0, seed=0, list_facts=True)
        return run_text_paraphrases(texts, cache, MODEL, batch_size, task=task)
    if kind == "round_trip":
        return round_trip(texts, cache, MODEL, batch_size)
    if kind == "paraphrase":
        return run_text_paraphrases(texts, cache, MODEL, batch_size, task=PARAPHRASE)
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def passages_of(split: str, corpus_dir: Path) -> list[dict]:
    """Every candidate passage of ``split``."""
    if split == "heldout":
        return heldout_passages(corpus_dir / "heldout.jsonl.gz")
    return corpus_passages(corpus_dir / "sentences.jsonl.gz", split)


def build(
    corpus_dir: Path,
    cache: Path,
    plan: Sequence[tuple[str, str, int]] = PLAN,
    batch_size: int = 16,
    seed: int = 0,
) -> list[dict]:
    """Runs (or reads from ``cache``) every step of ``plan`` and returns one record per
    passage and kind, the meaning checks not yet filled in."""
    records = []
    for split, kind, count in plan:
        chosen = select(passages_of(split, corpus_dir), count, seed, f"{split}:{kind}")
        outs = rewrite(kind, [p["text"] for p in chosen], cache, batch_size)
        records += [{**p, "split": split, "kind": kind, "rewrite": o} for p, o in zip(chosen, outs)]
    return records


def add_meaning_checks(records: list[dict], embedder: str = "mpnet") -> None:
    """Fills in ``similarity`` (the embedder's cosine of passage and rewrite) and
    ``facts_kept`` (the share of the passage's names and numbers the rewrite keeps)."""
    from data.llm_rewrites import NUMBER, WORD, facts
    from watermark.models.loaders import load_embedder

    done = [r for r in records if r["rewrite"]]
    model = load_embedder(embedder)
    a = model.encode([r["text"] for r in done], convert_to_tensor=True, normalize_embeddings=True)
    b = model.encode(
        [r["rewrite"] for r in done], convert_to_tensor=True, normalize_embeddings=True
    )
    for r, cos in zip(done, (a * b).sum(1).tolist()):
        wanted = facts(r["text"])
        there = set(NUMBER.findall(r["rewrite"])) | {w.lower() for w in WORD.findall(r["rewrite"])}
        there |= {n.replace(",", "").replace(".", "") for n in NUMBER.findall(r["rewrite"])}
        r["similarity"] = round(float(cos), 4)
        r["facts_kept"] = round(len(wanted & there) / len(wanted), 4) if wanted else 1.0
    for r in records:
        r.setdefault("similarity", None)
        r.setdefault("facts_kept", None)
