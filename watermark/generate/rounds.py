"""The sentence layer plugged into the decode loop: N candidate sentences per round, the best one
kept.

For each prompt, sentence after sentence, N candidates of the next sentence are sampled in one
group of N rows, each with the token-level watermark on; a row stops at the token that ends a
sentence (:class:`~watermark.sentences.spans.SentenceEnds`), at an EOS, or after the round's
budget (:data:`~watermark.generate.keep.MAX_SENTENCE_TOKENS` unless given); the layer's choice
(its ``rank``, through :func:`~watermark.generate.keep.kept_rows`) keeps one, and the next round
continues from it, until ``max_new_tokens`` or an EOS.

:class:`SentenceRounds` is the plug (:class:`~watermark.generate.loop.Rounds`): where a row
ends, the resampling of partial sentences every ``resample_every`` tokens (:meth:`SentenceRounds
.resample`) and the kept row of a round (:meth:`SentenceRounds.keep`).
:func:`decode_by_sentences` runs every prompt's rounds in the one decode loop
(:func:`watermark.generate.loop.decode`) with it; its reference, through ``model.generate``, is
:func:`watermark.generate.per_prompt.sample_by_sentences`, which draws, for a single prompt,
the same tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.base import UserError
from watermark.core.text import decode_ids
from watermark.generate.keep import kept_rows
from watermark.generate.loop import Group, Limits, cut_at_eos, decode
from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor
from watermark.generate.streams import Rows
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.spans import SentenceEnds


class SentenceRounds:
    """The sentence layer plugged into the decode loop (module docstring): a
    :class:`~watermark.generate.loop.Rounds`."""

    def __init__(self, layer: SentenceLayer, tokenizer: object, stop: Sequence[int]) -> None:
        self.layer, self.tokenizer, self.stop = layer, tokenizer, list(stop)
        self.sentence_ends = SentenceEnds(tokenizer, stop)

    def ends(self, token: int) -> bool:
        """Whether a row ends at ``token`` (a sentence's end or an EOS)."""
        return self.sentence_ends.ends(token)

    def resample(self, live: list[Group]) -> dict[int, list[int]]:
        """Every ``layer.resample_every`` tokens of a round, in each group with two or more rows
        still writing: those rows ranked by the score of their partial sentence, the i-th worst
        takes a copy of the i-th best, for the lower half (ties keep the sampled order; rows
        that have ended stay as they are). Returns, per moved group, each row's source row."""
        every, due = self.layer.resample_every, []
        if not every:
            return {}
        for k, g in enumerate(live):
            writing = [j for j, ended in enumerate(g.ended) if not ended]
            if len(writing) > 1 and len(g.new[0]) % every == 0:
                due.append((k, writing))
        if not due:
            return {}
        texts = [
            [decode_ids(self.tokenizer, live[k].chosen + live[k].new[j]) for j in w] for k, w in due
        ]
        moved = {}
        for (k, writing), ranked in zip(due, self.layer.rank(texts)):
            order = [writing[i] for i in ranked]
            source = list(range(len(live[k].new)))
            for i in range(len(order) // 2):
                source[order[-1 - i]] = order[i]
            moved[k] = source
            live[k].follow(source)
        return moved

    def keep(self, g: Group, limits: Limits) -> int:
        """Keeps the candidate of ``g``'s ended round that :func:`kept_rows` picks (appended to
        its kept text, with its watermarked steps); returns its row."""
        candidates = [self.sentence_ends.cut(row) for row in g.new]
        (best,) = kept_rows(self.layer, self.tokenizer, [g.chosen], [candidates], self.stop)
        before, kept = len(g.chosen), candidates[best]
        if g.processor.keep_record:
            g.marked += g.processor.record.steps_within(best, before + len(kept))
        g.chosen += kept
        g.done = not kept or kept[-1] in self.stop or len(g.chosen) >= limits.max_new_tokens
        return best

    def outputs(self, g: Group) -> list[tuple[str, list[int], list[int]]]:
        """The kept text of ``g`` up to its first EOS, with its watermarked steps."""
        ids = cut_at_eos(g.chosen, self.stop)
        return [(g.prompts[0], ids, [s for s in g.marked if s <= len(ids)])]


def fresh_processor(
    processor: AdaptiveWatermarkLogitsProcessor,
) -> AdaptiveWatermarkLogitsProcessor:
    """A processor like ``processor`` (same core, EOS ids and recording) with its own state."""
    return AdaptiveWatermarkLogitsProcessor(
        processor.core, processor.eos_token_ids, record=processor.keep_record
    )


def decode_by_sentences(
    model: torch.nn.Module,
    tokenizer: object,
    prompts: Sequence[str],
    enc: dict[str, torch.Tensor],
    processor: AdaptiveWatermarkLogitsProcessor,
    layer: SentenceLayer,
    limits: Limits,
    stop: Sequence[int],
) -> list[tuple[str, list[int], list[int]]]:
    """``(prompt, ids, watermarked steps)`` per prompt, chosen sentence by sentence among
    ``layer.candidates`` samples in the decode loop (module docstring); ``enc``: the prompts
    left-padded (``input_ids``, ``attention_mask``, both (B, P)). The caller seeds torch's
    RNG."""
    n, ids, mask = layer.candidates, enc["input_ids"], enc["attention_mask"]
    mm = processor.core.measurement
    own_stream = mm.same_tokenizer and limits.max_new_tokens < mm.window
    if layer.resample_every and not own_stream:
        raise UserError(
            "sentences.resample_every needs a measurement model with the generator's tokenizer "
            f"and max_new_tokens below its window ({mm.window})"
        )
    groups = [
        Group([p], [row[keep.bool()].tolist()] * n, fresh_processor(processor))
        for p, row, keep in zip(prompts, ids, mask)
    ]
    rows = Rows(
        model, ids.repeat_interleave(n, 0), mask.repeat_interleave(n, 0), mm if own_stream else None
    )
    rounds = SentenceRounds(layer, tokenizer, stop)
    decode(rows, groups, limits, stop, rounds.sentence_ends.pad_id, rounds)
    return [found for g in groups for found in rounds.outputs(g)]
