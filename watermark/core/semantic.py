"""SLSVE: semantic green lists from text (sentence embedder -> mapper -> sign -> token map).

``green_lists(texts)`` embeds each text with the sentence embedder (SE), maps the embedding u
with the semantic mapper to v, and returns the signs v > 0 as a
:class:`~watermark.core.green_lists.GreenLists` read through the L keyed token maps (one per green
list a step uses: L = 1 except for the tournament's layers).

A step's signs are a function of its text alone, bit for bit, whatever else is computed with it
(other steps, other texts, the batch): the mapper runs on blocks of
exactly :data:`MAP_ROWS` rows (the last one padded with zeros), so every matrix product has one
shape and a row's result never depends on the rows beside it. With a free number of rows the
BLAS picks other kernels for other shapes (and, on the CPU, splits a small product across
threads differently), which moves outputs near zero to the other sign. The number of threads
must match too: on an AVX-512 CPU, one and two threads gave one of 40 x 1024 outputs another
sign (tests/watermark/test_determinism.py). The embedder embeds the
spans of one text together (:class:`~watermark.detect.detector.Detector` mixes texts only in
fixed shapes, :mod:`watermark.core.fixed_shapes`).

Embeddings are computed as in mapper training (``encode(..., normalize_embeddings=False)``; the
packaged MiniLM normalises inside the model). The SE truncates inputs to its ``max_seq_length``
word pieces (256 for MiniLM), so the green list of very long prefixes only reflects their start.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch

from watermark.core.fixed_shapes import FixedShapeEmbedder
from watermark.core.green_lists import GreenLists
from watermark.core.identity import tensor_digest
from watermark.core.threads import one_thread
from watermark.core.token_map import tokens_per_dim
from watermark.models.semantic_mapper import SemanticMapper

logger = logging.getLogger(__name__)

MAP_ROWS = 32  # rows of every mapper forward (one shape: results independent of batch-mates)


class MappedEmbedder:
    """A sentence embedder and a mapper: embeddings of texts and their mapper outputs (what the
    sentence layer reads, with the token level's mapper or its own).

    Args:
        embedder: A sentence-transformers model.
        mapper: A semantic mapper; its input width must equal the embedder's output width.
        batch_size: Embedding batch size.
        digests: ``{"mapper": ..., "embedder": ...}`` as loaded (:mod:`watermark.core.identity`);
            computed from the parts as given when left out.
    """

    def __init__(
        self,
        embedder: object,
        mapper: SemanticMapper,
        batch_size: int = 32,
        digests: dict[str, str] | None = None,
    ) -> None:
        self.embedder = embedder
        self.mapper = mapper.eval()
        self.device = next(mapper.parameters()).device
        self.batch_size = batch_size
        self.num_dims = int(mapper.config.output_dim)
        self._digests = dict(digests or {})
        self._fixed: FixedShapeEmbedder | None = None

    @property
    def digests(self) -> dict[str, str]:
        """``{"mapper": ..., "embedder": ...}``: the parts' digests (key material)."""
        for part, module in (("mapper", self.mapper), ("embedder", self.embedder)):
            if part not in self._digests:
                self._digests[part] = tensor_digest(module)
        return self._digests

    @torch.inference_mode()
    def embed(
        self, texts: Sequence[str], progress: bool = False, fixed: bool = False
    ) -> torch.Tensor:
        """Sentence embeddings, float32 tensor of shape (N, E); with ``fixed``, in fixed shapes
        (:class:`~watermark.core.fixed_shapes.FixedShapeEmbedder`: a text's embedding does not
        depend on the texts embedded with it; no progress bar)."""
        with one_thread(self.device.type == "cpu"):
            if fixed:
                if self._fixed is None:
                    self._fixed = FixedShapeEmbedder(self.embedder)
                return self._fixed.embed(texts).float().to(self.device)
            out = self.embedder.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_tensor=True,
                normalize_embeddings=False,
                show_progress_bar=progress,
            )
        return out.float().to(self.device)

    @torch.inference_mode()
    def outputs(self, u: torch.Tensor) -> torch.Tensor:
        """Mapper outputs v for embeddings u (N, E): float tensor (N, D), on the mapper's
        device; in blocks of :data:`MAP_ROWS` rows, so a row's outputs depend on that row only."""
        with one_thread(self.device.type == "cpu"):
            u = u.to(self.device)
            n = int(u.shape[0])
            padded = torch.cat([u, u.new_zeros((-n) % MAP_ROWS, u.shape[1])])
            out = [self.mapper(block) for block in padded.split(MAP_ROWS)]
            return torch.cat(out)[:n] if out else u.new_zeros(0, self.num_dims)


class SemanticScorer(MappedEmbedder):
    """Green lists from text: SE + SM + keyed token map.

    Args:
        embedder: A sentence-transformers model.
        mapper: The semantic mapper; its input width must equal the embedder's output width.
        token_maps: Long tensor (L, V) mapping token ids to mapper output dimensions, per layer.
        batch_size: Embedding batch size.
        old_token_maps: The token maps (L, V) of earlier keys, which detection also tries (key
            rotation); key k >= 1 of :meth:`from_signs` is ``old_token_maps[k - 1]``.
        repeat_shifts: With ``repeats="bigram"``, one (L, V) shift table per key (the current
            key's first); empty otherwise.
        digests: ``{"mapper": ..., "embedder": ...}`` as loaded (:mod:`watermark.core.identity`);
            computed from the parts as given when left out.
    """

    def __init__(
        self,
        embedder: object,
        mapper: SemanticMapper,
        token_maps: torch.Tensor,
        batch_size: int = 32,
        old_token_maps: Sequence[torch.Tensor] = (),
        repeat_shifts: Sequence[torch.Tensor] = (),
        digests: dict[str, str] | None = None,
    ) -> None:
        super().__init__(embedder, mapper, batch_size, digests)
        self.token_maps = token_maps.to(self.device, torch.long).reshape(-1, token_maps.shape[-1])
        self.num_layers, self.vocab_size = (int(n) for n in self.token_maps.shape)
        self.dim_counts = self._counts(self.token_maps)  # (L, D)
        self.key_maps = [(self.token_maps, self.dim_counts)]  # per key: (maps, counts)
        for maps in old_token_maps:
            maps = maps.to(self.device, torch.long).reshape(self.token_maps.shape)
            self.key_maps.append((maps, self._counts(maps)))
        if repeat_shifts and len(repeat_shifts) != len(self.key_maps):
            raise ValueError(f"need one repeat shift table per key, got {len(repeat_shifts)}")
        self.repeat_shifts = [s.to(self.device, torch.long) for s in repeat_shifts]
        self.kept: dict[str, torch.Tensor] = {}  # signs held by keep()

    def _counts(self, token_maps: torch.Tensor) -> torch.Tensor:
        return torch.stack([tokens_per_dim(m, self.num_dims) for m in token_maps])

    @property
    def num_keys(self) -> int:
        """Keys detection tries: the current one and the earlier ones."""
        return len(self.key_maps)

    def signs(self, u: torch.Tensor) -> torch.Tensor:
        """Mapper signs v > 0 for embeddings u (N, E): bool tensor (N, D) (:meth:`outputs`)."""
        return self.outputs(u) > 0 if len(u) else self.no_signs(0)

    def no_signs(self, n: int) -> torch.Tensor:
        """All-False signs (n, D) on the mapper's device."""
        return torch.zeros(n, self.num_dims, dtype=torch.bool, device=self.device)

    def from_signs(self, signs: torch.Tensor, key: int = 0) -> GreenLists:
        """The green lists of mapper signs (N, D) under key ``key`` (0: the current key)."""
        maps, counts = self.key_maps[key]
        shifts = self.repeat_shifts[key] if self.repeat_shifts else None
        return GreenLists(signs, maps, counts, shifts)

    def green_lists(
        self, texts: Sequence[str], progress: bool = False, fixed: bool = False
    ) -> GreenLists:
        """The green lists of each text (N = len(texts)); ``fixed``: see :meth:`embed` (the
        signs :meth:`keep` holds are read, not computed again)."""
        if len(texts) == 0:
            return self.from_signs(self.no_signs(0))
        if not (fixed and self.kept):
            return self.from_signs(self.signs(self.embed(texts, progress=progress, fixed=fixed)))
        missing = [t for t in dict.fromkeys(texts) if t not in self.kept]
        found = dict(zip(missing, self.signs(self.embed(missing, fixed=True)))) if missing else {}
        return self.from_signs(torch.stack([self.kept.get(t, found.get(t)) for t in texts]))

    def keep(self, texts: Sequence[str]) -> None:
        """Embeds ``texts`` in fixed shapes and holds their signs for :meth:`green_lists` until
        the next call (a row's signs in fixed shapes do not depend on the rows beside it, so
        reading them later gives the same bits)."""
        self.kept = dict(zip(texts, self.signs(self.embed(texts, fixed=True)))) if texts else {}
