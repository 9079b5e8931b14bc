"""The sentence layer on the tiny models: the kept sentences score higher, detection reading the
same sentences, the combined verdict, and nothing changed where the layer is off (its generation
in the decode loop: tests/watermark/generate/test_rounds.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests.helpers import PROMPTS
from watermark.detect.result import SENTENCE_FIELDS
from watermark.detect.verdict import fisher
from watermark.sentences.spans import sentence_spans

LAYER = {"sentence_bits": 8, "sentence_candidates": 4}


def sentence_scores(layer, texts: list[str]) -> list[float]:
    """The keyed score of every sentence that detection reads in ``texts`` (global key)."""
    found = []
    for text in texts:
        sentences = [text[a:b] for a, b, _ in sentence_spans(text)]
        if sentences:
            groups = torch.zeros(len(sentences), dtype=torch.long)
            found += layer.key.scores(layer.outputs(sentences), groups).tolist()
    return found


@pytest.mark.parametrize("test", ["hits", "margin"])
def test_detection_tests_the_sentences_and_combines_the_verdict(
    tiny: SimpleNamespace, test: str
) -> None:
    wm = tiny.make(**LAYER, sentence_test=test)
    outs = wm.generate(PROMPTS * 3, max_new_tokens=60, seed=2)
    marked = wm.detect([o.text for o in outs])
    plain = wm.generate(PROMPTS * 3, max_new_tokens=60, seed=2, watermark=False)
    human = wm.detect([o.text for o in plain])
    for r in marked + human:
        assert r.sentence_p_value is not None and 0 < r.sentence_p_value <= 1
        assert r.combined_p_value == pytest.approx(
            fisher([r.token_verdict_p_value, r.sentence_p_value])
        )
        assert r.is_watermarked == (r.combined_p_value < wm.config.detection.target_fpr)
        assert set(SENTENCE_FIELDS) <= set(r.to_dict())
    assert wm.detect([outs[0].text])[0].sentences == marked[0].sentences  # a function of the text
    if test == "margin":  # the same hits as the count's test, weighed: other p-values
        counted = tiny.make(**LAYER).detect([o.text for o in outs])
        assert [r.sentence_hits for r in counted] == [r.sentence_hits for r in marked]
        assert [r.sentence_p_value for r in counted] != [r.sentence_p_value for r in marked]


def test_the_choice_raises_the_score_of_the_sentences_detection_reads(tiny) -> None:
    """Four candidates against one, same prompts and seeds: the kept sentences score higher.
    (The tiny mapper's signs barely move between sentences: 6 of 8 bits hit whatever is
    chosen, so the hit rate cannot show it; the score's margin does.)"""
    four, one = tiny.make(**LAYER), tiny.make(**{**LAYER, "sentence_candidates": 1})
    chosen, unchosen = [], []
    for seed in (2, 3):
        for wm, into in ((four, chosen), (one, unchosen)):
            outs = wm.generate(PROMPTS * 3, max_new_tokens=80, seed=seed, min_new_tokens=80)
            into += sentence_scores(four.sentences, [o.text for o in outs])
    assert len(chosen) > 20 and len(unchosen) > 20
    assert sum(chosen) / len(chosen) > sum(unchosen) / len(unchosen) + 0.1


def test_the_layer_off_changes_nothing(tiny: SimpleNamespace) -> None:
    off, on = tiny.make(), tiny.make(**LAYER)
    assert off.sentences is None and off.fingerprint != on.fingerprint
    assert tiny.make(sentence_candidates=9).fingerprint == off.fingerprint  # generation only
    result = off.detect(["the storm hit the north road . the bridge said ."])[0]
    assert result.sentence_p_value is None and not set(SENTENCE_FIELDS) & set(result.to_dict())
    assert "sentences" not in result.to_dict(per_token=True)
    with pytest.raises(ValueError, match="candidates >= 1"):
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


def test_processors_refuse_the_layer_and_generation_without_it_skips_it(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A processor in the user's own ``model.generate`` marks tokens only: with the layer on,
    ``generation_kwargs`` and ``logits_processor`` refuse with one line. With it off,
    generation never enters the sentence path."""
    on = tiny.make(**LAYER)
    for call in (on.generation_kwargs, on.logits_processor):
        with pytest.raises(ValueError, match="use|generate with Watermark.generate") as err:
            call()
        assert "\n" not in str(err.value)
    from watermark.generate import generation

    for path in ("decode_by_sentences", "sample_by_sentences"):
        monkeypatch.setattr(generation, path, lambda *a, **k: pytest.fail("entered"))
    off = tiny.make()
    assert off.sentences is None and off.detector.sentence_tests is None
    assert off.generate(PROMPTS[:1], max_new_tokens=8, seed=0)[0].token_ids


def test_the_layer_tests_every_key_the_token_level_tests(tiny: SimpleNamespace) -> None:
    """Text made under an old key: the token level and the sentence test both find it under
    that key, and the verdict (one, over both layers) is corrected for the keys tried."""
    old = tiny.make(**LAYER, key="older-key")
    rotated = tiny.make(**LAYER, key="new-key", old_keys=["older-key"])
    assert rotated.detector.sentence_tests == rotated.sentences.tests
    assert len(rotated.sentences.keys) == 2
    outs = old.generate(PROMPTS, max_new_tokens=60, seed=1, min_new_tokens=60)
    texts = [o.text for o in outs]
    alone, both = old.detect(texts), rotated.detect(texts)
    for a, b in zip(alone, both):
        assert b.key_index == 1  # the old key matched best
        assert b.sentence_p_value == pytest.approx(min(1.0, 2 * a.sentence_p_value))
        assert b.combined_p_value == pytest.approx(min(1.0, 2 * a.combined_p_value))
        assert b.is_watermarked == (b.combined_p_value < rotated.config.detection.target_fpr)


def test_the_layer_reads_with_its_own_mapper_pinned_and_named_in_the_fingerprint(
    tiny: SimpleNamespace, tmp_path
) -> None:
    """``sentences.mapper``: the layer maps sentences with its own mapper on the same embedder;
    the token level is unchanged, the fingerprint names the new part, a wrong pin is refused."""
    from tests.helpers import tiny_mapper
    from watermark.api import Watermark
    from watermark.core.identity import tensor_digest

    own = tiny_mapper(16, 40, seed=7)
    own.save_pretrained(tmp_path / "sentence-mapper")
    shared = tiny.make(**LAYER)
    cfg = shared.config.with_settings({"sentences.mapper": str(tmp_path / "sentence-mapper")})
    parts = dict(tokenizer=tiny.gtok, generator=tiny.gen, measurement_model=tiny.mm)
    parts.update(mm_tokenizer=tiny.gtok, embedder=tiny.emb, mapper=tiny.mapper)
    wm = Watermark.load(cfg, **parts)
    assert wm.sentences.semantic.mapper is not wm.core.semantic.mapper
    assert wm.sentences.semantic.num_dims == 40 and wm.sentences.key.dims.max() < 40
    text = "the storm hit the north road . the bridge said . river city council ."
    direct = own(tiny.emb.encode(["the bridge said ."], convert_to_tensor=True)).detach()
    assert torch.allclose(wm.sentences.outputs(["the bridge said ."]), direct, atol=1e-5)
    token = ("p_value", "num_scored", "green_bits")
    a, b = wm.detect([text])[0], shared.detect([text])[0]
    assert all(getattr(a, k) == getattr(b, k) for k in token)  # the token level is the same
    assert wm.fingerprint != shared.fingerprint
    pinned = cfg.with_settings({"sentences.mapper_digest": tensor_digest(own)})
    assert Watermark.load(pinned, **parts).fingerprint == wm.fingerprint
    wrong = cfg.with_settings({"sentences.mapper_digest": "sha256:" + "0" * 64})
    with pytest.raises(ValueError, match="sentences.mapper .* is not the one"):
        Watermark.load(wrong, **parts)
    assert Watermark.load(cfg.evolve(bits=0), **parts).sentence_parts is None
