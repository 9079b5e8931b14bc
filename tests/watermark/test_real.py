"""Watermark tests with the real default models (SmolLM2-135M generator and MM, MiniLM)."""

# Uses the committed default mapper at ``checkpoints/mapper-minilm``. Short texts and a smaller M
# keep the reference runs to seconds.

from __future__ import annotations

from dataclasses import replace

import pytest

from watermark import reference
from watermark.config import WatermarkConfig

pytestmark = pytest.mark.slow

PROMPTS = [
    "The city council voted on Tuesday to approve a new budget. The decision followed months "
    "of debate.",
    "Heavy rain flooded several roads in the north of the state. Emergency crews worked overnight.",
]


@pytest.fixture(scope="module")
def real():
    from watermark.api import Watermark
    from watermark.models import load_lm

    model, tokenizer = load_lm("smollm2-135m")
    cfg = replace(WatermarkConfig.default(), opening_steps=10)  # more gated steps in short texts
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model)
    return wm, model


def test_real_detection_matches_reference(real) -> None:
    wm, model = real
    text = (
        " The mayor said the new plan would cut waiting times at the hospital and add two bus "
        "routes to the east of the city, but opposition members called it a gamble with money "
        "the city does not have."
    )
    fast = wm.detect([text])[0]
    ref = reference.detect(wm, text)
    assert fast.token_ids == ref.ids and len(ref.ids) > 30
    assert fast.scored == ref.scored
    assert 10 < fast.num_scored < len(ref.ids)  # the gate closes somewhere
    assert fast.green == ref.green
    assert fast.score == ref.score
    assert fast.p_value == pytest.approx(ref.p_value, rel=1e-9)


def test_real_greedy_generation_matches_reference(real) -> None:
    wm, model = real
    outs = wm.generate(model, PROMPTS, max_new_tokens=30, do_sample=False)
    for prompt, out in zip(PROMPTS, outs):
        ids, steps = reference.generate(wm, model, prompt, 30, greedy=True)
        assert out.token_ids == ids
        gated = [t for t, s in enumerate(steps, 1) if s.gated and t <= len(ids)]
        assert out.watermarked_steps == gated


def test_real_round_trip_positions(real) -> None:
    wm, model = real
    outs = wm.generate(model, PROMPTS, max_new_tokens=60, seed=0)
    results = wm.detect([o.text for o in outs])
    matched = 0
    for out, res in zip(outs, results):
        if res.token_ids != out.token_ids:  # re-tokenization differs: measured in the benchmark
            continue
        matched += 1
        assert res.scored_steps() == out.watermarked_steps
        assert res.green_fraction > 0.7 and res.p_value < 0.05
    assert matched >= 1


def test_real_unwatermarked_text_not_flagged(real) -> None:
    wm, model = real
    outs = wm.generate(model, PROMPTS, max_new_tokens=60, seed=0, watermark=False)
    for res in wm.detect([o.text for o in outs]):
        assert not res.is_watermarked and 0 <= res.p_value <= 1


def test_default_mapper_is_committed_and_trained() -> None:
    from mapper.semantic_mapper import SemanticMapper

    mapper = SemanticMapper.from_pretrained(WatermarkConfig.default().mapper_dir())
    assert mapper.config.input_dim == 384 and mapper.config.embedder == "minilm"
    metrics = mapper.config.extra["metrics"]
    # The committed mapper is the trained one: it beats SimHash on LLM paraphrases.
    assert metrics["val/agree_paraphrase"] > metrics["simhash/agree_paraphrase"]
