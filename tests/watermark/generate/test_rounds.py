"""The sentence layer in the decode loop (watermark.generate.rounds) on the tiny models: the
loop against the reference path through ``model.generate``, the kept candidate the best by the
layer's choice, and every group's windows embedded in one call a step in fixed shapes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests.helpers import PROMPTS
from watermark.generate import generation
from watermark.generate.generation import eos_ids, generate
from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor
from watermark.sentences.spans import sentence_spans

LAYER = {"sentence_bits": 8, "sentence_candidates": 4}


def test_one_candidate_per_sentence_is_plain_generation(tiny: SimpleNamespace) -> None:
    """With N = 1 the sentence loop draws what one ``generate`` call draws: the processor's
    steps count from the prompt across the rounds."""
    wm = tiny.make(sentence_bits=8, sentence_candidates=1)
    plain = tiny.make()
    sentences = []
    for prompt in PROMPTS:  # one at a time: a batch draws its rows together
        seed = len(sentences)
        (ours,) = wm.generate([prompt], max_new_tokens=60, seed=seed)
        processor = plain.logits_processor(record=True)
        (ref,) = generate(tiny.gen, tiny.gtok, [prompt], processor, 60, seed=seed)  # not fused
        assert ours.token_ids == ref.token_ids
        assert ours.watermarked_steps == ref.watermarked_steps
        sentences.append(len(sentence_spans(ours.text)))
    assert max(sentences) > 1  # several rounds


def processor_of(tiny: SimpleNamespace, wm) -> AdaptiveWatermarkLogitsProcessor:
    """A recording processor on ``wm``'s core (``wm.logits_processor`` refuses the layer)."""
    return AdaptiveWatermarkLogitsProcessor(wm.core, eos_ids(tiny.gen, tiny.gtok), record=True)


def by_sentences(tiny: SimpleNamespace, wm, prompts: list[str], loop: bool, **limits) -> list:
    """Generation by sentences with seed 5, in the decode loop or (``loop`` false) on the
    reference path through ``model.generate``, as :func:`generation.generate` chooses them."""
    processor, layer = processor_of(tiny, wm), wm.sentences
    with pytest.MonkeyPatch.context() as patched:
        if not loop:
            patched.setattr(generation, "loops", lambda *a: False)
        return generate(tiny.gen, tiny.gtok, prompts, processor, seed=5, layer=layer, **limits)


@pytest.mark.parametrize("candidates", [1, 4])
def test_the_decode_loop_draws_what_the_reference_draws_for_one_prompt(
    tiny: SimpleNamespace, candidates: int
) -> None:
    """One prompt: the loop (one cache, rows masked after their end, the kept row's cache
    copied to the next round) samples the reference path's tokens and watermarks the same
    steps, with the token budget of a round, ``min_new_tokens`` and EOS handled alike."""
    wm = tiny.make(sentence_bits=8, sentence_candidates=candidates)
    for prompt in PROMPTS:
        for limits in ({"max_new_tokens": 60}, {"max_new_tokens": 50, "min_new_tokens": 50}):
            fast = by_sentences(tiny, wm, [prompt], True, max_sentence_tokens=12, **limits)
            ref = by_sentences(tiny, wm, [prompt], False, max_sentence_tokens=12, **limits)
            assert fast[0].token_ids == ref[0].token_ids
            assert fast[0].watermarked_steps == ref[0].watermarked_steps
            assert fast[0].text == ref[0].text


def test_the_decode_loop_runs_prompts_of_different_lengths_together(tiny: SimpleNamespace) -> None:
    """Several prompts in one loop: each kept text's watermarked steps are those that the
    processor finds when the text is replayed through it token by token, and every text gets
    its length."""
    wm = tiny.make(**LAYER)
    prompts = [PROMPTS[0], PROMPTS[1] + " and then the rest of a much longer prompt", PROMPTS[2]]
    outs = by_sentences(tiny, wm, prompts, True, max_new_tokens=60, min_new_tokens=60)
    assert [o.prompt for o in outs] == prompts
    assert all(len(o.token_ids) == 60 for o in outs)  # no EOS before 60, none after
    for out in outs:  # replay: the same processor, fed the kept ids one step at a time
        processor = processor_of(tiny, wm)
        prompt_ids = tiny.gtok(out.prompt).input_ids
        ids = prompt_ids + out.token_ids
        vocab = tiny.gen.config.vocab_size
        for t in range(len(out.token_ids)):
            processor(torch.tensor([ids[: len(prompt_ids) + t]]), torch.zeros(1, vocab))
        assert processor.record.watermarked_steps(0) == out.watermarked_steps
        assert out.watermarked_steps  # the watermark is on


def reference_scores(layer, candidates: list[str]) -> torch.Tensor:
    """Each candidate's score, its sentence and the one before cut and embedded one by one."""
    lasts, groups = [], []
    for text in candidates:
        spans = sentence_spans(text)
        lasts.append(text[slice(*spans[-1][:2])] if spans else "")
        previous = layer.outputs([text[slice(*spans[-2][:2])]]) if len(spans) > 1 else None
        groups.append(0 if previous is None else int(layer.key.groups(previous, previous)[0]))
    v = torch.cat([layer.outputs([s]) for s in lasts])
    if layer.key.own:  # each candidate's group from its own outputs
        groups = [int(layer.key.groups(row[None], None)[0]) for row in v]
    rate = layer.key.survival if layer.choice == "survival" else layer.key.scores
    return rate(v, torch.tensor(groups))


@pytest.mark.parametrize(
    "context_bits, keying, choice",
    [
        (0, "previous", "score"),
        (2, "previous", "score"),
        (2, "own", "score"),
        (0, "own", "survival"),
        (2, "own", "survival"),
    ],
)
def test_the_kept_candidate_scores_best(
    tiny: SimpleNamespace,
    monkeypatch: pytest.MonkeyPatch,
    context_bits: int,
    keying: str,
    choice: str,
) -> None:
    """The kept candidate is the best by the layer's choice: its tanh score, or its z expected
    after a rewrite (margin test, weights cubed), computed sentence by sentence here."""
    wm = tiny.make(
        **LAYER,
        sentence_context_bits=context_bits,
        sentence_keying=keying,
        sentence_test="margin",
        settings={"sentences.choice": choice, "sentences.weight_power": 3},
    )
    layer = wm.sentences
    seen = []
    real = layer.rank

    def spy(continuations):
        ranked = real(continuations)
        seen.append((continuations, [order[0] for order in ranked]))
        return ranked

    monkeypatch.setattr(layer, "rank", spy)
    outs = wm.generate(PROMPTS, max_new_tokens=60, seed=1)
    assert seen and all(len(c) == 4 for round_, _ in seen for c in round_)
    for continuations, best in seen:
        for candidates, b in zip(continuations, best):
            scores = reference_scores(layer, candidates)
            assert scores[b] == scores.max() and b == int(torch.argmax(scores))
    assert all(o.text.strip() for o in outs)
    assert max(len(sentence_spans(o.text)) for o in outs) > 1  # a sentence with a predecessor


def test_in_fixed_shapes_every_group_reads_one_embedder_call_a_step(tiny, monkeypatch) -> None:
    """On an accelerator (forced here on the CPU) the windows of all prompts' rows are embedded
    in one call a step (watermark.generate.loop.prefetch) and each group's processor reads
    them: the same tokens as one call per group, in the same fixed shapes."""
    from tests.helpers import PROMPTS
    from watermark.generate import loop

    wm = tiny.make(sentence_bits=8, sentence_candidates=3)
    wm.core.force_fixed_shapes = True
    events, embed, real = [], wm.core.semantic.embed, loop.prefetch

    def counting(texts, progress=False, fixed=False):
        events.append("embed" if fixed else "layer")
        return embed(texts, progress=progress, fixed=fixed)

    def prefetch(live):
        events.append(len(live))
        real(live)

    monkeypatch.setattr(wm.core.semantic, "embed", counting)
    monkeypatch.setattr(loop, "prefetch", prefetch)
    shared = wm.generate(PROMPTS, max_new_tokens=24, seed=7)
    shared_steps = [i for i, e in enumerate(events) if isinstance(e, int) and e > 1]
    assert len(shared_steps) > 10
    for i in shared_steps:  # the prefetch's own call, then nothing until the next step
        after = events[
            i + 1 : next(
                (j for j in range(i + 1, len(events)) if isinstance(events[j], int)), len(events)
            )
        ]
        assert after.count("embed") <= 1
    monkeypatch.setattr(loop, "prefetch", lambda live: events.append(len(live)))
    events.clear()
    alone = wm.generate(PROMPTS, max_new_tokens=24, seed=7)
    assert events.count("embed") > len(shared_steps)  # one call per group and step
    assert [o.token_ids for o in shared] == [o.token_ids for o in alone]
