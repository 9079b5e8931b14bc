"""Generated texts and their rewrites as the sentence layer's key reads them, for simulating
other keyings on them (:mod:`research.position_key`).

* **Sentences** (:class:`SentenceTable`): each sentence embedded alone by the layer's SE and
  mapped by its mapper (as :meth:`~watermark.api.Watermark.sentence_outputs` reads it), computed
  once and kept in a file under ``runs/``.
* **A text** (:class:`Text`): its complete sentences (:func:`~watermark.sentences.spans
  .sentence_spans`) as signed weights x (n, b) on the key's tested outputs, x_d = w_d sign(v_d)
  (w: the key's margin weights, :meth:`~watermark.sentences.key.SentenceKey.weights`), with their
  context groups (:meth:`~watermark.sentences.key.SentenceKey.text_groups`) and the sign of the
  key's first context output.
* **A pair** (:class:`Pair`): a generated text and its rewrite, each rewrite sentence's
  nearest original sentence in the SE (:func:`mapper.sentence_metrics.nearest`) and the
  reference mapping (that nearest where the cosine is at least ``REFERENCE``, else none).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mapper.sentence_metrics import nearest
from watermark.sentences.key import SentenceKey
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.spans import sentence_spans

logger = logging.getLogger(__name__)
REFERENCE = 0.5  # below this cosine a rewrite sentence has no original (the table)


def complete(text: str) -> list[str]:
    """The complete sentences of ``text`` as detection cuts them."""
    return [text[a:b] for a, b, done in sentence_spans(text) if done]


class SentenceTable:
    """Embeddings u (E,) and outputs v (D,) of sentences under a layer, computed once and
    kept in ``path`` (``None``: not kept)."""

    def __init__(self, layer: SentenceLayer, path: Path | None = None) -> None:
        self.layer, self.path = layer, path
        self.rows: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        if path is not None and Path(path).exists():
            self.rows = torch.load(path)

    def add(self, sentences: Sequence[str]) -> None:
        """Embed and map the sentences not yet in the table (and keep the table)."""
        new = sorted(set(sentences) - set(self.rows))
        if not new:
            return
        logger.info("embedding %d sentences", len(new))
        u = self.layer.semantic.embed(new).float().cpu()
        v = self.layer.semantic.outputs(u).float().cpu()
        self.rows.update({s: (u[i], v[i]) for i, s in enumerate(new)})
        if self.path is not None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            torch.save(self.rows, self.path)

    def embeddings(self, sentences: Sequence[str]) -> torch.Tensor:
        self.add(sentences)
        return torch.stack([self.rows[s][0] for s in sentences])

    def sentence_outputs(self, sentences: Sequence[str]) -> torch.Tensor:
        """Outputs (n, D), as :meth:`~watermark.api.Watermark.sentence_outputs` gives them."""
        self.add(sentences)
        return torch.stack([self.rows[s][1] for s in sentences])


@dataclass
class Text:
    """A text's complete sentences under a key: signed weights ``x`` (n, b), context
    ``groups`` (n,) and ``bits`` (n,), the sign of the key's first context output."""

    x: np.ndarray
    groups: np.ndarray
    bits: np.ndarray

    def __len__(self) -> int:
        return len(self.x)


def read_text(key: SentenceKey, v: torch.Tensor) -> Text:
    """The :class:`Text` of sentences with outputs v (n, D) in order under ``key``."""
    w = key.weights(v)
    w = torch.ones(len(v), key.bits) if w is None else w.float()
    sign = (v[:, key.dims] > 0).float() * 2 - 1
    first = key.context_dims[:1] if key.context_dims.numel() else key.dims[:1]
    return Text(
        x=(w * sign).double().numpy(),
        groups=key.text_groups(v).numpy(),
        bits=(v[:, first[0]] > 0).long().numpy(),
    )


@dataclass
class Pair:
    """A generated text, its rewrite, each rewrite sentence's nearest original ``source``
    (m,) and the ``reference`` mapping (m,) (the source, or -1 below :data:`REFERENCE`)."""

    original: Text
    rewrite: Text
    source: np.ndarray
    reference: np.ndarray


def read_pairs(
    table: SentenceTable, key: SentenceKey, texts: Sequence[tuple[str, str]]
) -> list[Pair]:
    """The pairs of (generated text, rewrite) with at least one complete sentence each."""
    cut = [(complete(a), complete(b)) for a, b in texts]
    cut = [(a, b) for a, b in cut if a and b]
    table.add([s for a, b in cut for s in a + b])
    found = []
    for a, b in cut:
        ua, ub = table.embeddings(a), table.embeddings(b)
        source = nearest(ub, ua)
        cos = torch.nn.functional.cosine_similarity(ub, ua[source], dim=1)
        reference = torch.where(cos >= REFERENCE, source, -1)
        found.append(
            Pair(
                read_text(key, table.sentence_outputs(a)),
                read_text(key, table.sentence_outputs(b)),
                source.numpy(),
                reference.numpy(),
            )
        )
    return found
