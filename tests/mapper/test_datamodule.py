"""Tests for MapperDataModule: batches, train subset, validation pairs, bad input."""

from __future__ import annotations

import gzip
import json

import pytest
import torch

from mapper.datamodule import MapperDataModule
from tests.helpers import make_records


def build(tmp_path, corpus, embedder, **kw) -> MapperDataModule:
    dm = MapperDataModule(str(corpus), str(embedder), cache_dir=str(tmp_path / "c"), **kw)
    dm.prepare_data()
    dm.setup("fit")
    return dm


def test_batches_pair_sources_with_their_augmentations(tmp_path, tiny_corpus, tiny_embedder_dir):
    dm = build(tmp_path, tiny_corpus, tiny_embedder_dir, batch_size=8)
    records = {r["text"]: r for r in make_records()}
    texts = dm._texts(dm._records())
    row_of = {t: i for i, t in enumerate(texts)}
    batch = next(iter(dm.val_dataloader()))
    assert batch["u"].shape == (8, 16)
    # every augmented row is an augmentation (of the kind given) of its owner's sentence
    for k in range(len(batch["owner"])):
        owner_vec = batch["u"][batch["owner"][k]]
        src = next(t for t in texts if torch.equal(dm.emb[row_of[t]], owner_vec))
        kind = dm.aug_kinds[batch["kind"][k]]
        aug_text = records[src][kind][0]
        assert torch.equal(batch["u_aug"][k], dm.emb[row_of[aug_text]])


def test_val_eval_pairs_by_kind_and_document(tmp_path, tiny_corpus, tiny_embedder_dir):
    dm = build(tmp_path, tiny_corpus, tiny_embedder_dir, val_pairs=30)
    ev = dm.val_eval
    val = [r for r in make_records() if r["split"] == "val"]
    assert len(ev.originals) == len(val)
    # synonym is scored even though it is not a training kind
    assert set(ev.pairs) == {
        "paraphrase",
        "shortened",
        "expanded",
        "synonym",
        "same_doc",
        "unrelated",
    }
    assert len(ev.pairs["synonym"][0]) == sum(1 for r in val if r["synonym"])
    docs = [r["doc"] for r in val]
    for i, j in zip(*ev.pairs["unrelated"]):
        assert docs[i] != docs[j]
    for i, j in zip(*ev.pairs["same_doc"]):
        assert docs[i] == docs[j] and i != j
    assert torch.allclose(dm.center, dm.emb[[it.row for it in dm.items["train"]]].mean(0))


def test_train_subset_prefers_paraphrased(tmp_path, tiny_embedder_dir):
    records = make_records()
    for r in records[::3]:
        r["paraphrase"] = []
    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)
    n_para = sum(1 for r in records if r["split"] == "train" and r["paraphrase"])
    dm = build(tmp_path, path, tiny_embedder_dir, max_train_sentences=n_para)
    assert len(dm.items["train"]) == n_para
    assert all(it.aug["paraphrase"] for it in dm.items["train"])


def test_missing_corpus_names_the_fix(tmp_path, tiny_embedder_dir):
    dm = MapperDataModule(str(tmp_path / "nope.jsonl.gz"), str(tiny_embedder_dir))
    with pytest.raises(FileNotFoundError, match="python -m data.build"):
        dm.prepare_data()


def test_unknown_embedder_lists_known_names(tiny_corpus):
    dm = MapperDataModule(str(tiny_corpus), "no-such-embedder")
    with pytest.raises(ValueError, match="minilm"):
        _ = dm.embedding_dim
