"""Ending a round early in the sentence layer's decode loop (``stop_at``): which rounds stop,
that a cut row is never kept, that the kept texts replay, and where it is refused (a threshold
never reached is checked beside resampling never due, in test_sentence_resampling.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests.helpers import PROMPTS
from tests.watermark.test_sentence_resampling import assert_replayed, by_sentences
from watermark.core.errors import UserError
from watermark.sentences import decoding
from watermark.sentences.decoding import Group, Limits, finish_round, stop_early

LAYER = {"sentence_bits": 8, "sentence_candidates": 4, "stop_at": 0.01}
WHOLE = SimpleNamespace(cut=lambda ids: list(ids))  # sentence ends that keep a row as it is


def group(new: list[list[int]], ended: list[bool], fresh: list[int]) -> Group:
    g = Group("p", [1, 2], SimpleNamespace(keep_record=False))
    g.new, g.ended, g.fresh = [list(r) for r in new], list(ended), list(fresh)
    return g


def test_a_round_stops_when_a_row_that_just_ended_reaches_the_threshold(tiny) -> None:
    seen = []

    def evidence(texts):
        seen.append(len(texts))
        return torch.tensor([2.0, 0.5, 1.4])

    layer = SimpleNamespace(stop_at=1.5, evidence=evidence)
    good = group([[5], [6], [7], [8]], [False, True, False, False], fresh=[1])
    weak = group([[5], [6], [7], [8]], [True, False, True, False], fresh=[0, 2])
    over = group([[5], [6], [7], [8]], [True] * 4, fresh=[3])  # its round ends anyway
    stop_early([good, weak, over], layer, WHOLE, tiny.gtok)
    assert seen == [3]  # one call: the rows that just ended, in groups still writing
    assert good.cut == [0, 2, 3] and all(good.ended)
    assert weak.cut == [] and weak.ended == [True, False, True, False]
    stop_early([good], SimpleNamespace(stop_at=0.0, evidence=evidence), WHOLE, tiny.gtok)
    assert seen == [3]  # off: nothing is scored


def test_a_cut_row_is_never_kept(tiny) -> None:
    g = group([[5], [6], [7], [8]], [True] * 4, fresh=[])
    g.cut = [0, 2]
    offered = []

    def choose(continuations):
        offered.append(len(continuations[0]))
        return [0]  # the first candidate offered

    layer = SimpleNamespace(choose=choose)
    best = finish_round(g, layer, WHOLE, tiny.gtok, stop=[], limits=Limits(40, 12))
    assert offered == [2] and best == 1 and g.chosen == [6]


def test_stopping_early_keeps_finished_sentences_that_replay(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    wm = tiny.make(**LAYER)
    stops, kept, real_finish = [], [], decoding.finish_round

    def spy(g, *args):
        stopped = list(g.cut)
        best = real_finish(g, *args)
        stops.append(bool(stopped))
        kept.append(best not in stopped)
        return best

    monkeypatch.setattr(decoding, "finish_round", spy)
    outs = by_sentences(tiny, wm, PROMPTS, seed=3, max_new_tokens=40, min_new_tokens=40)
    assert any(stops) and all(kept)
    assert_replayed(tiny, wm, outs)


def test_stopping_early_is_refused_where_the_loop_cannot_run_it(tiny: SimpleNamespace) -> None:
    with pytest.raises(UserError, match="decode loop only"):
        by_sentences(tiny, tiny.make(**LAYER), PROMPTS[:1], max_new_tokens=10, fast=False)
    with pytest.raises(ValueError, match="stop_at"):
        tiny.make(sentence_bits=8, stop_at=-1.0)
