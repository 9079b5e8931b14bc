"""Resampling partial sentences in the sentence layer's decode loop (``resample_every``): which
rows are copied, that every row still reads its own cache and record after a copy, and where it
is refused."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests.helpers import PROMPTS
from watermark.base import UserError
from watermark.generate.generation import eos_ids, generate
from watermark.generate.loop import Group
from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor
from watermark.generate.rounds import SentenceRounds

LAYER = {"sentence_bits": 8, "sentence_candidates": 4, "resample_every": 3}


class Reorders:
    """A processor stand-in that keeps the sources it was reordered by."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def reorder(self, index: torch.Tensor) -> None:
        self.calls.append(index.tolist())


def group(new: list[list[int]], ended: list[bool]) -> Group:
    g = Group(["p"], [[1, 2]] * len(new), Reorders())
    g.new, g.ended = [list(r) for r in new], list(ended)
    return g


def test_the_lower_half_of_the_rows_still_writing_copy_the_upper_half(tiny) -> None:
    """Rows ranked by their partial sentence's score: the worst copies the best, the ended row
    stays, and a group whose round is not at a multiple of k is not scored."""
    scored = []

    def rank(texts):  # the scores 0.1, 0.9, 0.5 and 0.3, 0.2, 0.4, 0.1, best first
        scored.append([len(t) for t in texts])
        return [[1, 2, 0], [2, 0, 1, 3]]

    layer = SimpleNamespace(resample_every=2, rank=rank)
    due = group([[5, 6], [7, 0], [8, 9], [10, 11]], [False, True, False, False])
    four = group([[5, 6], [7, 8], [9, 10], [11, 12]], [False] * 4)
    early = group([[5], [6], [7], [8]], [False] * 4)
    moved = SentenceRounds(layer, tiny.gtok, [3]).resample([due, early, four])
    assert scored == [[3, 4]]  # one call: the writing rows of the groups that are due
    assert moved == {0: [2, 1, 2, 3], 2: [0, 0, 2, 2]}  # the worst copies the best, and so on
    assert due.new == [[8, 9], [7, 0], [8, 9], [10, 11]]
    assert due.ended == [False, True, False, False]
    assert four.new == [[5, 6], [5, 6], [9, 10], [9, 10]]
    assert due.processor.calls == [[2, 1, 2, 3]] and early.processor.calls == []


def by_sentences(tiny, wm, prompts: list[str], **kwargs) -> list:
    processor = AdaptiveWatermarkLogitsProcessor(wm.core, eos_ids(tiny.gen, tiny.gtok), record=True)
    return generate(tiny.gen, tiny.gtok, prompts, processor, layer=wm.sentences, **kwargs)


def test_after_a_copy_every_row_reads_its_own_text(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At every step, each row still writing gets the logits of a fresh forward over its own
    ids (prompt, kept text, this round's tokens), so a copied row continues from its source's
    cache; each kept text's watermarked steps are those a replay through the processor finds."""
    wm = tiny.make(**LAYER)
    checked, moves, real_scores, real_resample = [], [], Group.scores, SentenceRounds.resample

    def scores(self, logits, entropies, eos, limits):
        for j, ended in enumerate(self.ended):
            if not ended:
                ids = self.prompt_rows[j] + self.chosen + self.new[j]
                fresh = tiny.gen(torch.tensor([ids], device=tiny.device)).logits[0, -1].float()
                checked.append(torch.allclose(fresh, logits[j], atol=1e-4))
        return real_scores(self, logits, entropies, eos, limits)

    def spy(self, live):
        moved = real_resample(self, live)
        moves.extend(s for s in moved.values() if s != list(range(len(s))))
        return moved

    monkeypatch.setattr(Group, "scores", scores)
    monkeypatch.setattr(SentenceRounds, "resample", spy)
    outs = by_sentences(tiny, wm, PROMPTS, seed=3, max_new_tokens=40, min_new_tokens=40)
    assert moves and checked and all(checked)
    assert_replayed(tiny, wm, outs)


def assert_replayed(tiny: SimpleNamespace, wm, outs: list) -> None:
    """Each kept text's watermarked steps are those a replay through the processor finds."""
    for out in outs:
        processor = AdaptiveWatermarkLogitsProcessor(wm.core, eos_ids(tiny.gen, tiny.gtok), True)
        prompt_ids = tiny.gtok(out.prompt).input_ids
        ids, vocab = prompt_ids + out.token_ids, tiny.gen.config.vocab_size
        for t in range(len(out.token_ids)):
            processor(torch.tensor([ids[: len(prompt_ids) + t]]), torch.zeros(1, vocab))
        assert processor.record.watermarked_steps(0) == out.watermarked_steps


def test_resampling_that_is_never_due_draws_what_best_of_n_draws(tiny: SimpleNamespace) -> None:
    """Token for token the draws of best-of-N, same fingerprint."""
    plain = tiny.make(sentence_bits=8, sentence_candidates=4)
    steered = tiny.make(sentence_bits=8, sentence_candidates=4, resample_every=99)
    assert steered.fingerprint == plain.fingerprint  # a generation setting: detection unchanged
    kwargs = {"max_new_tokens": 40, "seed": 2, "max_sentence_tokens": 12}
    a, b = plain.generate(PROMPTS, **kwargs), steered.generate(PROMPTS, **kwargs)
    assert [o.token_ids for o in a] == [o.token_ids for o in b]


def test_resampling_is_refused_where_the_loop_cannot_run_it(tiny: SimpleNamespace) -> None:
    with pytest.raises(UserError, match="decode loop only"):
        by_sentences(tiny, tiny.make(**LAYER), PROMPTS[:1], max_new_tokens=10, num_beams=1)
    with pytest.raises(UserError, match="generator's tokenizer"):
        tiny.make(cross=True, **LAYER).generate(PROMPTS[:1], max_new_tokens=10)
    with pytest.raises(ValueError, match="resample_every"):
        tiny.make(sentence_bits=8, resample_every=-1)
