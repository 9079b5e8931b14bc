"""Sentence embeddings of a corpus, computed once and cached on disk.

The cache file is keyed by the embedder and by a hash of the exact texts, so a changed corpus or a
different embedder gets a new file (rebuilt, never silently reused). A cache file whose contents do
not match its key (wrong row count or dimension) stops the run with a message naming the file.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from watermark.models.loaders import cache_root, embedder_dim, load_embedder

log = logging.getLogger(__name__)


def texts_hash(embedder: str, texts: list[str]) -> str:
    """Hex digest identifying (embedder, texts), used as the cache key."""
    h = hashlib.sha256(embedder.encode())
    for text in texts:
        h.update(b"\0" + text.encode())
    return h.hexdigest()[:20]


def cache_path(embedder: str, texts: list[str], cache_dir: str | Path | None = None) -> Path:
    """Where the embeddings of `texts` under `embedder` are cached."""
    folder = Path(cache_dir) if cache_dir else cache_root() / "embeddings"
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", embedder.strip("/"))[-60:]
    return folder / f"{slug}-{texts_hash(embedder, texts)}.safetensors"


def _read_cache(path: Path, n: int, key: str) -> torch.Tensor:
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
        emb = f.get_tensor("embeddings")
    dim = int(meta.get("dim", -1))
    if meta.get("key") != key or emb.shape[0] != n or emb.ndim != 2 or emb.shape[1] != dim:
        raise ValueError(
            f"embedding cache {path} does not match its corpus/embedder (holds {tuple(emb.shape)}, "
            f"expected {n} rows of width {dim}); delete the file and it will be rebuilt"
        )
    if not torch.isfinite(emb).all():
        raise ValueError(f"embedding cache {path} holds NaN/inf values; delete it to rebuild")
    return emb


def embed_corpus(
    texts: list[str],
    embedder: str = "minilm",
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    expected_dim: int | None = None,
    device: str | None = None,
) -> torch.Tensor:
    """Returns the (N, E) float32 embeddings of `texts` on the CPU, from the cache or computed
    and cached.

    Args:
        texts: the N texts, in a fixed order.
        embedder: embedder name for `load_embedder`.
        cache_dir: cache folder (default: `<cache_root>/embeddings`).
        batch_size: encoding batch size.
        expected_dim: if given, a cache of another width is an error.
        device: where to embed (default: CUDA when available, else the CPU).

    Raises:
        ValueError: On a cache that does not match its key, or of the wrong dimension.
    """
    path = cache_path(embedder, texts, cache_dir)
    key = path.stem.rsplit("-", 1)[-1]
    if path.is_file():
        emb = _read_cache(path, len(texts), key)
        log.info("loaded %d cached embeddings from %s", len(texts), path)
    else:
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model = load_embedder(embedder, device=device)
        log.info("embedding %d texts with '%s' (cached to %s)", len(texts), embedder, path)
        emb = (
            model.encode(
                texts,
                batch_size=batch_size,
                convert_to_tensor=True,
                show_progress_bar=True,
                normalize_embeddings=False,
            )
            .float()
            .cpu()
        )
        if emb.shape[1] != embedder_dim(model):
            raise ValueError(f"embedder '{embedder}' returned width {emb.shape[1]}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        save_file(
            {"embeddings": emb.contiguous()},
            str(tmp),
            metadata={"key": key, "embedder": embedder, "dim": str(emb.shape[1])},
        )
        tmp.replace(path)
    if expected_dim is not None and emb.shape[1] != expected_dim:
        raise ValueError(
            f"embedding cache {path} has width {emb.shape[1]} but the mapper expects "
            f"{expected_dim}: delete the cache or train the mapper for this embedder"
        )
    return emb
