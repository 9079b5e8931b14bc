"""Tests for the keyed on-disk embedding cache (mapper.embedding_cache)."""

from __future__ import annotations

import pytest
import torch

from mapper.embedding_cache import cache_path, embed_corpus


def test_embedding_cache_rebuilt_on_change_and_checked(tmp_path, tiny_embedder_dir):
    emb_name = str(tiny_embedder_dir)
    texts = ["one small sentence.", "another sentence here."]
    a = embed_corpus(texts, emb_name, tmp_path)
    path = cache_path(emb_name, texts, tmp_path)
    assert path.is_file()
    changed = texts + ["a third one."]
    assert cache_path(emb_name, changed, tmp_path) != path
    assert embed_corpus(changed, emb_name, tmp_path).shape == (3, 16)
    assert torch.equal(embed_corpus(texts, emb_name, tmp_path), a)
    with pytest.raises(ValueError, match="width 16 but the mapper expects 384"):
        embed_corpus(texts, emb_name, tmp_path, expected_dim=384)
    # A file that does not match its key (e.g. written by another embedder) stops the run.
    from safetensors.torch import save_file

    save_file({"embeddings": torch.zeros(2, 8)}, str(path), metadata={"key": "x", "dim": "8"})
    with pytest.raises(ValueError, match="delete the file"):
        embed_corpus(texts, emb_name, tmp_path)


@pytest.mark.parametrize(
    "device",
    [
        "cpu",
        pytest.param(
            "cuda",
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
        ),
    ],
)
def test_embeddings_come_back_on_the_cpu(tmp_path, tiny_embedder_dir, device):
    """Fresh and cached embeddings are CPU tensors wherever they were computed."""
    texts = ["one small sentence.", "another sentence here."]
    fresh = embed_corpus(texts, str(tiny_embedder_dir), tmp_path, device=device)
    cached = embed_corpus(texts, str(tiny_embedder_dir), tmp_path)
    assert fresh.device.type == cached.device.type == "cpu"
    assert torch.equal(fresh, cached)
