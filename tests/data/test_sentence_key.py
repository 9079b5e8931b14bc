"""Tests for the sentence mapper's data: passages and their selection, prefixes, the candidate
pools (sampled with a tiny model, cut at the first sentence, cached) and the meaning checks
(data.sentence_rewrites, data.candidate_pools, data.sentence_key)."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
import torch
from transformers import StoppingCriteriaList

from data import candidate_pools
from data.candidate_pools import build_pools, first_sentence, prefixes
from data.sentence_rewrites import add_meaning_checks, corpus_passages, select
from tests.helpers import make_records, word_tokenizer
from watermark.generate.generation import eos_ids
from watermark.generate.keep import MAX_SENTENCE_TOKENS
from watermark.sentences.spans import SentenceEnds


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    with gzip.open(tmp_path / "sentences.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in make_records())
    return tmp_path


def test_passages_are_three_sentences_of_one_document_and_selection_is_seeded(corpus_dir):
    found = corpus_passages(corpus_dir / "sentences.jsonl.gz", "train")
    assert len(found) == 9 * 2  # 9 train documents of 8 sentences: two windows of three each
    assert all(p["text"].count(".") == 3 and p["id"].startswith(p["doc"]) for p in found)
    first, again = select(found, 5, 0, "train:forced"), select(found, 5, 0, "train:forced")
    assert first == again and len({p["id"] for p in first}) == 5
    assert select(found, 5, 1, "train:forced") != first  # another seed, another draw
    assert select(found, 3, 0, "train:forced") == first[:3]  # fewer: the same first ones
    assert {p["id"] for p in select(found, 99, 0, "x")} == {p["id"] for p in found}


def test_prefixes_take_the_opening_sentences_and_the_next_one(corpus_dir):
    found = prefixes(corpus_dir, "val", 50)
    assert found and len({p["id"] for p in found}) == len(found)
    for p in found:
        k = int(p["id"].split(":")[1])
        assert 2 <= k <= 6 and p["prefix"].count(".") == k and p["next"].count(".") == 1


def test_first_sentence_and_the_stop_rule():
    assert first_sentence(" The storm hit. Then rain") == "The storm hit."
    assert first_sentence(" no end mark here") is None
    tok = word_tokenizer()
    stop = SentenceEnds(tok, [tok.eos_token_id])
    ids = tok(["river .", "river city"], add_special_tokens=False).input_ids
    assert stop(torch.tensor([ids[0], ids[1]]), None).tolist() == [True, False]


def test_pools_are_drawn_by_watermark_generate_cut_at_a_sentence_and_cached(
    tiny, tmp_path, monkeypatch
):
    """A pool is the first sentences of one unwatermarked ``Watermark.generate`` call over the
    prefix's copies, with the config's sampling settings and the layer's sentence ends: the
    same call made directly, with the same seed, gives the same candidates."""
    wm = tiny.make()
    monkeypatch.setattr(candidate_pools, "load_watermark", lambda config: wm)
    wanted = [{"id": f"d{i}:2", "prefix": p} for i, p in enumerate(["river city .", "bank"])]
    pools = build_pools(wanted, tmp_path / "pools.jsonl", candidates=6, batch_size=1, seed=4)
    assert [len(p["candidates"]) for p in pools] == [6, 6]
    cut = [c for p in pools for c in p["candidates"] if c is not None]
    assert cut and all(c.endswith(".") and c.count(".") == 1 for c in cut)
    digest = hashlib.sha256(wanted[0]["id"].encode()).hexdigest()
    ends = SentenceEnds(tiny.gtok, eos_ids(tiny.gen, tiny.gtok))
    direct = wm.generate(
        [wanted[0]["prefix"]] * 6,
        max_new_tokens=MAX_SENTENCE_TOKENS,
        seed=int(digest[:8], 16) + 4,
        watermark=False,
        stopping_criteria=StoppingCriteriaList([ends]),
    )
    assert pools[0]["candidates"] == [first_sentence(o.text) for o in direct]
    assert len(set(pools[0]["candidates"])) > 1  # sampled, not one sentence six times
    monkeypatch.setattr(candidate_pools, "load_watermark", lambda config: pytest.fail("sampled"))
    again = build_pools(wanted, tmp_path / "pools.jsonl", candidates=6, batch_size=1, seed=4)
    assert again == pools  # read from the cache, nothing sampled


def test_meaning_checks_fill_similarity_and_facts(tiny_embedder_dir):
    records = [
        {"text": "Anna met Bob in Paris in 2001.", "rewrite": "In 2001 Bob saw Anna in Paris."},
        {"text": "Anna met Bob in Paris in 2001.", "rewrite": "Someone met someone."},
        {"text": "A passage.", "rewrite": None},
    ]
    add_meaning_checks(records, str(tiny_embedder_dir))
    assert records[0]["facts_kept"] == 1.0 and records[1]["facts_kept"] == 0.0
    assert -1 <= records[0]["similarity"] <= 1 and records[2]["similarity"] is None
