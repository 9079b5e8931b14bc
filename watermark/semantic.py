"""SLSVE: semantic green lists from text (sentence embedder -> mapper -> sign -> token map).

``green_lists(texts)`` embeds each text with the sentence embedder (SE), maps the embedding u
with the semantic mapper to v, and returns the signs v > 0 as a
:class:`~watermark.green_lists.GreenLists` read through the L keyed token maps (one per green list
a step uses: L = 1 except for the tournament's layers).

Embeddings are computed as in mapper training (``encode(..., normalize_embeddings=False)``; the
packaged MiniLM normalises inside the model). The SE truncates inputs to its ``max_seq_length``
word pieces (256 for MiniLM), so the green list of very long prefixes only reflects their start.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch

from mapper.semantic_mapper import SemanticMapper
from watermark.green_lists import GreenLists
from watermark.timer import StageTimer
from watermark.token_map import tokens_per_dim

logger = logging.getLogger(__name__)


class SemanticScorer:
    """Green lists from text: SE + SM + keyed token map.

    Args:
        embedder: A sentence-transformers model.
        mapper: The semantic mapper; its input width must equal the embedder's output width.
        token_maps: Long tensor (L, V) mapping token ids to mapper output dimensions, per layer.
        batch_size: Embedding batch size.
        timer: Adds the embedder's and the mapper's time to stages ``embed`` and ``map``.
    """

    def __init__(
        self,
        embedder: object,
        mapper: SemanticMapper,
        token_maps: torch.Tensor,
        batch_size: int = 32,
        timer: StageTimer | None = None,
    ) -> None:
        self.embedder = embedder
        self.mapper = mapper.eval()
        self.device = next(mapper.parameters()).device
        self.token_maps = token_maps.to(self.device, torch.long).reshape(-1, token_maps.shape[-1])
        self.batch_size = batch_size
        self.timer = timer or StageTimer()
        self.num_dims = int(mapper.config.output_dim)
        self.num_layers, self.vocab_size = (int(n) for n in self.token_maps.shape)
        self.dim_counts = torch.stack(  # (L, D)
            [tokens_per_dim(m, self.num_dims) for m in self.token_maps]
        )

    @torch.inference_mode()
    def embed(self, texts: Sequence[str], progress: bool = False) -> torch.Tensor:
        """Sentence embeddings, float32 tensor of shape (N, E)."""
        with self.timer.stage("embed"):
            out = self.embedder.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_tensor=True,
                normalize_embeddings=False,
                show_progress_bar=progress,
            )
        return out.float().to(self.device)

    @torch.inference_mode()
    def signs(self, u: torch.Tensor) -> torch.Tensor:
        """Mapper signs v > 0 for embeddings u (N, E): bool tensor (N, D), on the mapper's
        device."""
        with self.timer.stage("map"):
            return self.mapper(u.to(self.device)) > 0

    def no_signs(self, n: int) -> torch.Tensor:
        """All-False signs (n, D) on the mapper's device."""
        return torch.zeros(n, self.num_dims, dtype=torch.bool, device=self.device)

    def from_signs(self, signs: torch.Tensor) -> GreenLists:
        """The green lists of mapper signs (N, D)."""
        return GreenLists(signs, self.token_maps, self.dim_counts)

    def green_lists(self, texts: Sequence[str], progress: bool = False) -> GreenLists:
        """The green lists of each text (N = len(texts))."""
        if len(texts) == 0:
            return self.from_signs(self.no_signs(0))
        return self.from_signs(self.signs(self.embed(texts, progress=progress)))
