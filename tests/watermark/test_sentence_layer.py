"""The sentence layer on the tiny models: candidates chosen by their sentence's score, detection
reading the same sentences, the combined verdict, and nothing changed where the layer is off."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests.helpers import PROMPTS
from watermark.core.sentences import fisher, sentence_spans
from watermark.detection_result import SENTENCE_FIELDS
from watermark.generation import generate

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
        (ref,) = generate(tiny.gen, tiny.gtok, [prompt], processor, 60, seed=seed, fuse=False)
        assert ours.token_ids == ref.token_ids
        assert ours.watermarked_steps == ref.watermarked_steps
        sentences.append(len(sentence_spans(ours.text)))
    assert max(sentences) > 1  # several rounds


def reference_scores(layer, candidates: list[str]) -> torch.Tensor:
    """Each candidate's score, its sentence and the one before cut and embedded one by one."""
    lasts, groups = [], []
    for text in candidates:
        spans = sentence_spans(text)
        lasts.append(text[slice(*spans[-1][:2])] if spans else "")
        previous = layer.outputs([text[slice(*spans[-2][:2])]]) if len(spans) > 1 else None
        groups.append(0 if previous is None else int(layer.key.groups(previous, previous)[0]))
    v = torch.cat([layer.outputs([s]) for s in lasts])
    return layer.key.scores(v, torch.tensor(groups))


@pytest.mark.parametrize("context_bits", [0, 2])
def test_the_kept_candidate_scores_best(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, context_bits: int
) -> None:
    wm = tiny.make(**LAYER, sentence_context_bits=context_bits)
    layer = wm.detector.sentences
    seen = []
    real = layer.choose

    def spy(continuations):
        best = real(continuations)
        seen.append((continuations, best))
        return best

    monkeypatch.setattr(layer, "choose", spy)
    outs = wm.generate(PROMPTS, max_new_tokens=60, seed=1)
    assert seen and all(len(c) == 4 for round_, _ in seen for c in round_)
    for continuations, best in seen:
        for candidates, b in zip(continuations, best):
            scores = reference_scores(layer, candidates)
            assert scores[b] == scores.max() and b == int(torch.argmax(scores))
    assert all(o.text.strip() for o in outs)
    assert max(len(sentence_spans(o.text)) for o in outs) > 1  # a sentence with a predecessor


def test_detection_tests_the_sentences_and_combines_the_verdict(tiny: SimpleNamespace) -> None:
    wm = tiny.make(**LAYER)
    outs = wm.generate(PROMPTS * 3, max_new_tokens=60, seed=2)
    marked = wm.detect([o.text for o in outs])
    plain = wm.generate(PROMPTS * 3, max_new_tokens=60, seed=2, watermark=False)
    human = wm.detect([o.text for o in plain])
    for r in marked + human:
        assert r.sentence_p_value is not None and 0 < r.sentence_p_value <= 1
        assert r.combined_p_value == pytest.approx(
            fisher([r.token_verdict_p_value, r.sentence_p_value])
        )
        assert r.is_watermarked == (r.combined_p_value < wm.config.target_fpr)
        assert set(SENTENCE_FIELDS) <= set(r.to_dict())
    rate = sum(r.sentence_hits for r in marked) / sum(r.num_sentences * 8 for r in marked)
    base = sum(r.sentence_hits for r in human) / max(1, sum(r.num_sentences * 8 for r in human))
    assert rate > base + 0.1 and rate > 0.6  # the choice moves the sentences onto the targets
    assert wm.detect([outs[0].text])[0].sentences == marked[0].sentences  # a function of the text


def test_the_layer_off_changes_nothing(tiny: SimpleNamespace) -> None:
    off, on = tiny.make(), tiny.make(**LAYER)
    assert off.detector.sentences is None and off.fingerprint != on.fingerprint
    assert tiny.make(sentence_candidates=9).fingerprint == off.fingerprint  # generation only
    result = off.detect(["the storm hit the north road . the bridge said ."])[0]
    assert result.sentence_p_value is None and not set(SENTENCE_FIELDS) & set(result.to_dict())
    assert "sentences" not in result.to_dict(per_token=True)
    with pytest.raises(ValueError, match="sentence_candidates"):
        tiny.make(sentence_candidates=0)


def test_a_text_without_sentences_has_a_neutral_sentence_test(tiny: SimpleNamespace) -> None:
    wm = tiny.make(**LAYER)
    r = wm.detect(["the storm hit the north road and the bridge"])[0]
    assert r.sentence_p_value == 1.0 and r.num_sentences == 0
    assert torch.isfinite(torch.tensor(r.combined_p_value))


def test_the_page_marks_the_tested_sentences(tiny: SimpleNamespace) -> None:
    import re

    from watermark.app.page import render

    wm = tiny.make(**LAYER)
    (result,) = wm.detect(["the storm and the north road . the bridge said . river city"])
    text = "".join(result.tokens)  # the decoded text, which the spans index
    assert [text[a:b] for a, b, _ in result.sentences] == [
        "the storm and the north road .",
        "the bridge said .",
    ]
    page = render([result])
    marks = re.findall(r'class="t[^"]* sent[^"]*"[^>]*data-hits="(\d+)"', page)
    assert [int(m) for m in marks] == [h for *_, h in result.sentences]
    assert "combined p-value" in page and "sentence p-value" in page
    off = render(tiny.make().detect([text]))
    assert 'data-hits="' not in off and "sentence p-value" not in off
