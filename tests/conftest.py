"""Shared fixtures: a tiny random sentence embedder, a tiny corpus and tiny watermark models."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs one worker per core: one thread each
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``slow`` tests first (a stable sort): they are the long ones (real models, child
    processes), and started first they leave the short ones to fill both workers at the end, so
    `make test`'s two workers finish together."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def tiny_embedder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random 16-d sentence-transformers model (BERT, 1 layer) with MiniLM's real tokenizer."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    from watermark.models.loaders import resolve_model

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


@pytest.fixture()
def tiny_corpus(tmp_path: Path) -> Path:
    """A gzip JSONL corpus of 96 synthetic sentences in 12 documents (3 of them validation)."""
    from tests.helpers import make_records

    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in make_records():
            f.write(json.dumps(r) + "\n")
    return path


# device of the tiny watermark models: `WM_TEST_DEVICE=cuda pytest ...` runs the fast == reference
# tests on a GPU (CI has none and uses the CPU)
TEST_DEVICE = os.environ.get("WM_TEST_DEVICE", "cpu")


@pytest.fixture(scope="module")
def tiny(tiny_embedder_dir: Path) -> SimpleNamespace:
    """Tiny random generator / MM / mapper and the tiny embedder; ``make`` builds a Watermark.

    Module-scoped, as it was in the single watermark test file: every test module that uses
    it gets its own instance. Models live on ``WM_TEST_DEVICE`` (default ``cpu``).
    """
    from sentence_transformers import SentenceTransformer

    from evaluation.config_fields import evolve
    from tests.helpers import bpe_tokenizer, tiny_llama, tiny_mapper, word_tokenizer
    from watermark.api import Watermark
    from watermark.config.schemes import SCHEMES
    from watermark.config.watermark_config import WatermarkConfig

    gtok, mtok = word_tokenizer(), bpe_tokenizer()
    ns = SimpleNamespace(
        gtok=gtok,
        mtok=mtok,
        gen=tiny_llama(len(gtok), seed=0).to(TEST_DEVICE),
        mm=tiny_llama(len(gtok), seed=1).to(TEST_DEVICE),
        mmx=tiny_llama(len(mtok), seed=2).to(TEST_DEVICE),
        emb=SentenceTransformer(str(tiny_embedder_dir), device=TEST_DEVICE),
        mapper=tiny_mapper(16, 24).to(TEST_DEVICE),
        device=TEST_DEVICE,
    )

    def make(cross: bool = False, settings: dict | None = None, **overrides: object) -> Watermark:
        fields = dict(
            mapper="unused",
            generator="tiny-gen",
            measurement_model="tiny-mmx" if cross else "tiny-mm",
            key="test-key",
            opening_sentence="a secret opening sentence",
            alpha=1.0,
            opening_steps=5,
            top_k=10,
            top_p=0.9,
            rule="paper",  # the paper's rule; test cases pin their own
            filter_first=False,
            fresh_only=False,
            repeats="neutral",
            temperature=1.0,
            context_guard=0,
            outputs_once=False,
        )
        fields.update(overrides)
        rule = SCHEMES[fields["rule"]]
        fields.setdefault(rule.strength_field, {"paper": 1.5, "tournament": 1}.get(rule.rule, 2.0))
        cfg = evolve(WatermarkConfig(), **fields)  # the evaluation's names (sentence_bits, ...)
        return Watermark.load(
            cfg.with_settings(settings) if settings else cfg,
            tokenizer=ns.gtok,
            generator=ns.gen,
            measurement_model=ns.mmx if cross else ns.mm,
            mm_tokenizer=ns.mtok if cross else ns.gtok,
            embedder=ns.emb,
            mapper=ns.mapper,
        )

    ns.make = make
    return ns
