"""Shared fixtures: a tiny random sentence embedder and a tiny corpus, built offline in seconds."""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

WORDS = (
    "river city council vote budget school team player season storm rain flood farmer crop "
    "price market bank loan doctor patient hospital court judge law police fire road bridge "
    "train station music band song film actor museum art history war peace treaty election"
).split()


@pytest.fixture(scope="session")
def tiny_embedder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 16-d sentence-transformers model (BERT, 1 layer) with MiniLM's real tokenizer."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    from data.packaged_models import resolve_model

    root = tmp_path_factory.mktemp("tiny_embedder")
    tok = AutoTokenizer.from_pretrained(str(resolve_model("minilm", "embedder")))
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
    )
    BertModel(cfg).save_pretrained(root / "bert")
    tok.save_pretrained(root / "bert")
    word = models.Transformer(str(root / "bert"), max_seq_length=64)
    model = SentenceTransformer(modules=[word, models.Pooling(16), models.Normalize()])
    model.save(str(root / "st"))
    return root / "st"


def make_records(n_docs: int = 12, per_doc: int = 8, seed: int = 0) -> list[dict]:
    """Synthetic corpus records in the `data/` schema, with every augmentation kind."""
    rng = random.Random(seed)
    records = []
    for d in range(n_docs):
        split = "val" if d % 4 == 0 else "train"
        for s in range(per_doc):
            words = rng.sample(WORDS, 10)
            text = " ".join(words).capitalize() + "."
            records.append(
                {
                    "id": f"d{d}-s{s}",
                    "doc": f"d{d}",
                    "source": "news",
                    "split": split,
                    "text": text,
                    "paraphrase": [" ".join(reversed(words)).capitalize() + "."],
                    "shortened": [" ".join(words[:7]).capitalize() + "."],
                    "expanded": ["In fact, " + " ".join(words) + " too."],
                    "synonym": [" ".join(words[:5] + rng.sample(WORDS, 5)).capitalize() + "."]
                    if s % 2 == 0
                    else [],
                }
            )
    return records


@pytest.fixture()
def tiny_corpus(tmp_path: Path) -> Path:
    """A gzip JSONL corpus of 96 synthetic sentences in 12 documents (3 of them validation)."""
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in make_records():
            f.write(json.dumps(r) + "\n")
    return path
