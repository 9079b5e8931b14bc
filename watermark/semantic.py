"""SLSVE: semantic green lists from text (sentence embedder -> mapper -> sign -> token map).

``green_dims(texts)`` embeds each text with the sentence embedder (SE), maps the embedding u with
the semantic mapper to v, and returns v > 0 per output dimension. ``expand`` turns that (N, D)
indicator into the paper's v_hat over the vocabulary, (N, L, V), through the L keyed token maps
(one per green list a step uses: L = 1 except for the tournament's layers).

Embeddings are computed as in mapper training (``encode(..., normalize_embeddings=False)``; the
packaged MiniLM normalises inside the model). The SE truncates inputs to its ``max_seq_length``
word pieces (256 for MiniLM), so the green list of very long prefixes only reflects their start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import torch

from mapper.semantic_mapper import SemanticMapper
from watermark.token_map import tokens_per_dim

logger = logging.getLogger(__name__)


class SemanticScorer:
    """Green lists from text: SE + SM + keyed token map.

    Args:
        embedder: A sentence-transformers model.
        mapper: The semantic mapper; its input width must equal the embedder's output width.
        token_maps: Long tensor (L, V) mapping token ids to mapper output dimensions, per layer.
        batch_size: Embedding batch size.
    """

    def __init__(
        self,
        embedder: object,
        mapper: SemanticMapper,
        token_maps: torch.Tensor,
        batch_size: int = 32,
    ) -> None:
        self.embedder = embedder
        self.mapper = mapper.eval()
        self.token_maps = token_maps.to(torch.long).cpu().reshape(-1, token_maps.shape[-1])
        self.batch_size = batch_size
        self.num_dims = int(mapper.config.output_dim)
        self.num_layers, self.vocab_size = (int(n) for n in self.token_maps.shape)
        self.dim_counts = torch.stack(  # (L, D)
            [tokens_per_dim(m, self.num_dims) for m in self.token_maps]
        )
        self.timings = {"embed": 0.0, "map": 0.0}

    @torch.inference_mode()
    def embed(self, texts: Sequence[str], progress: bool = False) -> torch.Tensor:
        """Sentence embeddings, float32 tensor of shape (N, E)."""
        start = time.perf_counter()
        out = self.embedder.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_tensor=True,
            normalize_embeddings=False,
            show_progress_bar=progress,
        )
        self.timings["embed"] += time.perf_counter() - start
        return out.float().cpu()

    @torch.inference_mode()
    def dims_from_embeddings(self, u: torch.Tensor) -> torch.Tensor:
        """Mapper signs v > 0 for embeddings u (N, E): bool tensor (N, D)."""
        start = time.perf_counter()
        out = self.mapper(u.to(self.mapper.inp.weight.device)) > 0
        self.timings["map"] += time.perf_counter() - start
        return out.cpu()

    def green_dims(self, texts: Sequence[str], progress: bool = False) -> torch.Tensor:
        """Green output dimensions for each text: bool tensor of shape (N, D)."""
        if len(texts) == 0:
            return torch.zeros(0, self.num_dims, dtype=torch.bool)
        return self.dims_from_embeddings(self.embed(texts, progress=progress))

    def expand(self, green_dims: torch.Tensor) -> torch.Tensor:
        """v_hat over the vocabulary per layer: (N, D) bool -> (N, L, V) bool."""
        return green_dims[:, self.token_maps.to(green_dims.device)]

    def token_green(self, green_dims: torch.Tensor, token_ids: torch.Tensor) -> torch.Tensor:
        """Green bits of token ``token_ids[n]`` under ``green_dims[n]``: (N, D), (N,) -> (N, L)."""
        dims = self.token_maps[:, token_ids].T  # (N, L)
        return green_dims.gather(1, dims)

    def vocab_fraction(self, green_dims: torch.Tensor) -> torch.Tensor:
        """Fraction of the V tokens that are green per layer, float64 tensor (N, L)."""
        return (green_dims.to(torch.float64) @ self.dim_counts.T) / self.vocab_size
