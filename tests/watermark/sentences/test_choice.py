"""The layer's choice over outputs already computed (``SentenceLayer.choose``) is the one
``SentenceLayer.rank`` makes, and the layer's keys are its config section's
(``SentenceKey.of_section``)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from watermark.sentences.key import SentenceKey
from watermark.sentences.spans import sentence_spans

CANDIDATES = [
    [
        "The storm hit the north road. Then the river rose",
        "The storm hit the north road. The bank closed early.",
        "The storm hit the north road. A new school opened.",
        "The storm hit the north road. People said the water was high.",
    ],
    ["Rain.", "The council met. The budget was cut", "A film about the war.", "Music played."],
]


@pytest.mark.parametrize(
    "context_bits, keying, choice",
    [(0, "previous", "score"), (2, "previous", "score"), (2, "own", "survival")],
)
def test_choose_over_outputs_is_what_rank_keeps(
    tiny: SimpleNamespace, context_bits: int, keying: str, choice: str
) -> None:
    layer = tiny.make(
        sentence_bits=8,
        sentence_context_bits=context_bits,
        sentence_keying=keying,
        sentence_test="margin",
        settings={"sentences.choice": choice},
    ).sentences
    ranked = layer.rank(CANDIDATES)
    for candidates, order in zip(CANDIDATES, ranked):
        spans = [sentence_spans(t) for t in candidates]
        v = layer.outputs([t[s[-1][0] : s[-1][1]] for t, s in zip(candidates, spans)])
        before = [
            layer.outputs([t[s[-2][0] : s[-2][1]]])[0] if len(s) > 1 else None
            for t, s in zip(candidates, spans)
        ]
        assert layer.choose(v, before) == order
        if all(b is not None for b in before):  # one sentence before them all
            assert layer.choose(v, before[0]) == order == layer.choose(v, torch.stack(before))
        assert order[0] == int(
            torch.argmax(layer.key.rate(v, layer.key.candidate_groups(v, before), choice))
        )


def test_ties_keep_the_given_order_and_no_previous_is_group_zero() -> None:
    key = SentenceKey.of("k", 16, 4, 2)
    v = torch.ones(3, 16)
    assert key.order(v) == [0, 1, 2]
    assert key.candidate_groups(v).tolist() == [0, 0, 0]
    assert key.candidate_groups(v, [None, v[0], None]).tolist() == [0, 3, 0]


def test_the_layer_holds_the_keys_of_its_section(tiny: SimpleNamespace) -> None:
    wm = tiny.make(
        sentence_bits=6, sentence_context_bits=1, sentence_keying="own", old_keys=["older"]
    )
    section, dims = wm.config.sentences, wm.sentences.semantic.num_dims
    keys = SentenceKey.of_section(section, ["test-key", "older"], dims)
    for mine, theirs in zip(keys, wm.sentences.keys, strict=True):
        assert torch.equal(mine.dims, theirs.dims) and torch.equal(mine.targets, theirs.targets)
        assert (mine.own, mine.margin, mine.power) == (theirs.own, theirs.margin, theirs.power)
    other = SentenceKey.of_section(replace(section, test="margin", weight_power=3), ["k"], dims)[0]
    assert other.margin and other.power == 3 and other.own
    assert torch.equal(other.dims, SentenceKey.of("k", dims, 6, 1, "own", "margin", 3).dims)
