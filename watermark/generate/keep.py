"""Which candidate a sentence round keeps, through the layer's one choice
(:meth:`~watermark.sentences.layer.SentenceLayer.rank`): the decode loop's rounds
(:mod:`watermark.generate.rounds`) and the reference path (:mod:`watermark.generate.per_prompt`)
both keep the row :func:`kept_rows` gives.
"""

from __future__ import annotations

from collections.abc import Sequence

from watermark.core.text import decode_ids
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.spans import CLOSERS

MAX_SENTENCE_TOKENS = 64  # a candidate that has not ended by then is cut (and scored as it is)


def kept_rows(
    layer: SentenceLayer,
    tokenizer: object,
    chosen: Sequence[list[int]],
    rounds: Sequence[list[list[int]]],
    stop: Sequence[int],
) -> list[int]:
    """Per prompt, the row its round keeps, given its kept text and its candidates' ids.

    A *bare* candidate ends the text at an EOS and adds no sentence (only whitespace or
    closers): the layer would score the sentence before it, a previous round's winner, so it
    would win about half the rounds it is drawn in, not 1 in N, and texts would end early. A
    bare candidate is never ranked: the text ends when row 0 is bare (rows are exchangeable
    samples, and one that ends at its first token is never resampled, so this is as often as
    unwatermarked text ends there), else the best-ranked of the other rows is kept."""
    rows, texts = [], []
    for head, candidates in zip(chosen, rounds):
        bare = [
            bool(c) and c[-1] in stop and not decode_ids(tokenizer, c).strip(CLOSERS)
            for c in candidates
        ]
        rows.append([] if bare[0] else [j for j, b in enumerate(bare) if not b])
        texts.append([decode_ids(tokenizer, head + candidates[j]) for j in rows[-1]])
    ranked = iter(layer.rank([t for t in texts if t]))
    return [r[next(ranked)[0]] if r else 0 for r in rows]
