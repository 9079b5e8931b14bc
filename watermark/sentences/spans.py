"""Where a sentence ends, one rule for text and for tokens.

**In text** (:func:`sentence_spans`), as detection cuts it: a sentence ends after ``.``, ``!``
or ``?`` (and any closing quotes or brackets) where whitespace follows, or at the end of the
text. **In tokens** (:func:`ends_sentence`, :class:`SentenceEnds`), as generation stops a
candidate: at the token that ends with such a mark, or at an EOS. So the sentences generation
chose are the ones detection cuts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch
from transformers import StoppingCriteria

from watermark.core.text import decode_ids

_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)")
CLOSERS = "\"'\u201d\u2019)] \n\t\r"  # what may follow an end mark


def sentence_spans(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, complete)`` character spans of ``text``'s sentences, stripped of
    surrounding whitespace; ``complete`` is false for a last piece with no end mark."""
    spans, start = [], 0
    for match in _END.finditer(text):
        spans.append((start, match.end(), True))
        start = match.end()
    spans.append((start, len(text), False))
    out = []
    for a, b, complete in spans:
        piece = text[a:b]
        lead = len(piece) - len(piece.lstrip())
        if piece.strip():
            out.append((a + lead, a + len(piece.rstrip()), complete))
    return out


def ends_sentence(piece: str) -> bool:
    """Whether generated text ending with ``piece`` has just ended a sentence: it ends with an
    end mark (closing quotes or brackets after it allowed)."""
    return piece.rstrip(CLOSERS)[-1:] in (".", "!", "?") if piece.strip() else False


class SentenceEnds(StoppingCriteria):
    """Stops a row at the token that ends a sentence or at an EOS."""

    def __init__(self, tokenizer: object, stop: Sequence[int]) -> None:
        self.tokenizer, self.stop = tokenizer, set(stop)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad) if pad is not None else int(stop[0])  # rows padded after their end
        self._ends: dict[int, bool] = {}

    def ends(self, token: int) -> bool:
        """Whether ``token`` ends a candidate (cached per id)."""
        if token not in self._ends:
            piece = decode_ids(self.tokenizer, [token])
            self._ends[token] = token in self.stop or ends_sentence(piece)
        return self._ends[token]

    def __call__(
        self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs
    ) -> torch.BoolTensor:
        last = input_ids[:, -1].tolist()
        return torch.tensor([self.ends(t) for t in last], dtype=torch.bool, device=input_ids.device)

    def cut(self, ids: Sequence[int]) -> list[int]:
        """A candidate's ids up to and including its first end (the pads after it dropped)."""
        end = next((i for i, t in enumerate(ids) if self.ends(t)), len(ids) - 1)
        return list(ids[: end + 1])
