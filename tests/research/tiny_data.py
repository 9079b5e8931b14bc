"""Tiny inputs for the research modules' smoke tests, in the formats of the real ones: candidate
pools and rewrite pairs (``data/sentence-key/``), a held-out corpus, an evaluation store, and
a loader of the tiny models (``conftest.tiny``) for the modules that load a config."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from types import SimpleNamespace

from evaluation.cache_keys import text_hash
from tests.helpers import WORDS
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig

PLAIN = [w for w in WORDS if w.isalpha()]
FORCED = "llm_forced[test]|1.0|0"


def sentence(rng: random.Random, words: int = 6) -> str:
    """A capitalised sentence of random words with a full stop."""
    return " ".join(rng.choice(PLAIN) for _ in range(words)).capitalize() + "."


def _write(path: Path, rows: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return path


def write_pools(folder: Path, docs: int = 4, per_doc: int = 3, candidates: int = 6) -> Path:
    """``pools.jsonl.gz``: ``per_doc`` pools of each document (a prefix and next sentences),
    the same ones in the ``heldout`` and ``train`` splits."""
    rng, rows = random.Random(0), []
    for split in ("heldout", "train"):
        for d in range(docs):
            for k in range(per_doc):
                rows.append(
                    {
                        "id": f"{split}-d{d}:{k + 2}",
                        "doc": f"{split}-d{d}",
                        "split": split,
                        "prefix": " ".join(sentence(rng) for _ in range(k + 2)),
                        "candidates": [sentence(rng) for _ in range(candidates)] + [""],
                    }
                )
    return _write(Path(folder) / "pools.jsonl.gz", rows)


def write_rewrites(folder: Path, passages: int = 6) -> Path:
    """``rewrites.jsonl.gz``: forced rewrites of short passages in the ``heldout`` and ``val``
    splits (each sentence's words shuffled, one sentence replaced)."""
    rng, rows = random.Random(1), []
    for split in ("heldout", "val"):
        for n in range(passages):
            text = [sentence(rng) for _ in range(3)]
            rewrite = [
                " ".join(rng.sample(s[:-1].lower().split(), 6)).capitalize() + "." for s in text[:2]
            ] + [sentence(rng)]
            rows.append(
                {
                    "id": f"{split}-{n}",
                    "split": split,
                    "kind": "forced",
                    "text": " ".join(text),
                    "rewrite": " ".join(rewrite),
                }
            )
    return _write(Path(folder) / "rewrites.jsonl.gz", rows)


def write_heldout(path: Path, docs: int = 8) -> Path:
    """A held-out corpus whose documents hold, after four opening sentences, about 190 words of
    the tiny generator's vocabulary in sentences it reads (full stops apart)."""
    rng, rows = random.Random(2), []
    for d in range(docs):
        body = " ".join(" ".join(rng.choice(PLAIN) for _ in range(9)) + " ." for _ in range(19))
        text = " ".join([*(sentence(rng) for _ in range(4)), body])
        rows.append({"doc": f"h{d}", "source": "news", "text": text})
    return _write(Path(path), rows)


def write_store(folder: Path, method: str, texts: list[str], attack: str = FORCED) -> Path:
    """An evaluation store holding ``texts`` as ``method``'s generations and a rewrite of each
    (its sentences in reverse order, the first words of each kept)."""
    folder.mkdir(parents=True, exist_ok=True)
    generations, attacks = [], []
    for n, text in enumerate(texts):
        generations.append({"key": f"{method}|tiny|0|{n}", "text": text})
        rewrite = " ".join(reversed([s.strip() + "." for s in text.split(".") if s.strip()]))
        attacks.append({"key": f"{attack}|{text_hash(text)}", "text": rewrite})
    for name, rows in (("generations", generations), ("attacks", attacks)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def tiny_loader(tiny: SimpleNamespace, wm: Watermark, paths: list[Path]):
    """A ``load`` for the research modules: a config (or a file of ``paths``) loads with the
    tiny models; anything else (the shipped default, a shipped config) is ``wm``."""
    parts = dict(
        tokenizer=tiny.gtok,
        generator=tiny.gen,
        measurement_model=tiny.mm,
        mm_tokenizer=tiny.gtok,
        embedder=tiny.emb,
        mapper=tiny.mapper,
    )

    def load(config: object) -> Watermark:
        if isinstance(config, WatermarkConfig):
            return Watermark.load(config, **parts)
        if config is not None and Path(config) in paths:
            return Watermark.load(WatermarkConfig.load(config), **parts)
        return wm

    return load
