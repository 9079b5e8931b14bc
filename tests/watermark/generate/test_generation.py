"""Tests for batched watermarked generation vs the reference, generate/detect round trips, and
unwatermarked sampling at the config's temperature."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests import reference
from tests.helpers import PROMPTS, RULE_CASES, SPECIAL_IDS, fused_watermark, scored_steps
from watermark.generate.generation import eos_ids

WINDOW = {"mm_window": 8, "embed_prefix_tokens": 9}


@pytest.mark.parametrize(
    "cross,rule",
    [
        (False, RULE_CASES[1]),
        (True, RULE_CASES[1]),
        (False, RULE_CASES[4]),
        (True, RULE_CASES[6]),
        (False, {**RULE_CASES[1], **WINDOW}),
        (True, {**RULE_CASES[8], **WINDOW}),
        (False, {**RULE_CASES[8], "embed_window": 3, "opening_steps": 0}),
        (False, {**RULE_CASES[10], "context_guard": 1, "loop_penalty": 1.5}),
    ],
)
def test_greedy_batch_generation_matches_reference(
    tiny: SimpleNamespace, cross: bool, rule: dict
) -> None:
    wm = tiny.make(cross=cross, **rule)
    proc = wm.logits_processor(record=True)
    from watermark.generate.generation import generate

    outs = generate(tiny.gen, tiny.gtok, PROMPTS, proc, max_new_tokens=24, do_sample=False)
    closed = 0
    for row, (prompt, out) in enumerate(zip(PROMPTS, outs)):
        ids, steps = reference.generate(wm, tiny.gen, prompt, 24, greedy=True)
        assert out.token_ids == ids
        # steps past the text (the one that drew EOS) are not part of it
        assert out.watermarked_steps == [
            t for t, s in enumerate(steps, 1) if s.gated and t <= len(ids)
        ]
        closed += len(ids) - len(out.watermarked_steps)
        for decision, ref_step in zip(proc.record.decisions, steps):
            if ref_step.gated:  # same green list, row by row
                got = decision.green.select([row]).mask()[0].cpu()  # the reference is on the CPU
                assert torch.equal(got, ref_step.green)
    assert closed > 0  # the entropy gate closed at some steps


@pytest.mark.parametrize(
    "cross,rule",
    [(False, RULE_CASES[1]), (True, RULE_CASES[1])] + [(False, rule) for rule in RULE_CASES[2:]],
)
def test_round_trip_positions(tiny: SimpleNamespace, cross: bool, rule: dict) -> None:
    wm = tiny.make(cross=cross, **rule)
    prompts = PROMPTS + ["the price of water", "police said"]
    outs = wm.generate(tiny.gen, prompts, max_new_tokens=40, seed=3, suppress_tokens=SPECIAL_IDS)
    results = wm.detect([o.text for o in outs])
    for out, res in zip(outs, results):
        assert res.token_ids == out.token_ids  # word-level tokens re-tokenize exactly
        assert scored_steps(res) == out.watermarked_steps
    assert sum(len(o.watermarked_steps) for o in outs) > 25
    # the watermark is visible: green fraction above the null expectation on average
    wm_green = sum(r.num_green_tested for r in results) - sum(r.expected_green for r in results)
    assert wm_green > 0


@pytest.mark.parametrize("rule", [RULE_CASES[1], RULE_CASES[8]])
def test_fused_generation_matches_reference_and_model_generate(
    tiny: SimpleNamespace, rule: dict, monkeypatch
) -> None:
    from watermark.generate import generation
    from watermark.generate.generation import generate, loops

    calls = []
    decode = generation.decode_by_tokens
    monkeypatch.setattr(
        generation, "decode_by_tokens", lambda *a, **k: calls.append(1) or decode(*a, **k)
    )
    wm = fused_watermark(tiny, **rule)
    proc = wm.logits_processor(record=True)
    assert loops(tiny.gen, proc, None, 24, {}) and not loops(tiny.mm, proc, None, 24, {})
    assert not loops(tiny.gen, proc, None, 24, {"num_beams": 2})
    assert not loops(tiny.gen, proc, None, wm.config.models.mm_window, {})
    outs = generate(tiny.gen, tiny.gtok, PROMPTS, proc, max_new_tokens=24, do_sample=False)
    assert len(calls) == 1  # the decode loop ran
    for prompt, out in zip(PROMPTS, outs):
        ids, steps = reference.generate(wm, tiny.gen, prompt, 24, greedy=True)
        assert out.token_ids == ids
        assert out.watermarked_steps == [
            t for t, s in enumerate(steps, 1) if s.gated and t <= len(ids)
        ]
    for kwargs in ({"seed": 3}, {"seed": 4, "min_new_tokens": 20}):
        fused = generate(
            tiny.gen, tiny.gtok, PROMPTS, wm.logits_processor(), max_new_tokens=24, **kwargs
        )
        with monkeypatch.context() as patched:  # transformers' own loop, the reference
            patched.setattr(generation, "loops", lambda *a: False)
            plain = generate(
                tiny.gen, tiny.gtok, PROMPTS, wm.logits_processor(), max_new_tokens=24, **kwargs
            )
        assert [o.token_ids for o in fused] == [o.token_ids for o in plain]
        if "min_new_tokens" in kwargs:
            assert all(len(o.token_ids) >= 20 for o in fused)
    assert len(calls) == 3


def test_unwatermarked_generation_samples_at_the_config_temperature(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``watermark=False`` samples like transformers with the config's temperature, top-k and
    top-p (temperature first); at temperature 1 no temperature warper is added."""
    enc = tiny.gtok(PROMPTS, return_tensors="pt", padding=True, padding_side="left")
    enc = {k: v.to(tiny.device) for k, v in enc.items()}
    stop = set(eos_ids(tiny.gen, tiny.gtok))

    def plain(**sampling: object) -> list[list[int]]:
        torch.manual_seed(4)
        out = tiny.gen.generate(**enc, do_sample=True, max_new_tokens=12, **sampling)
        rows = out[:, enc["input_ids"].shape[1] :].tolist()
        return [row[: next((i for i, t in enumerate(row) if t in stop), len(row))] for row in rows]

    hot = tiny.make(temperature=1.8, top_k=10, top_p=0.9)
    outs = hot.generate(PROMPTS, max_new_tokens=12, seed=4, watermark=False)
    assert [o.token_ids for o in outs] == plain(temperature=1.8, top_k=10, top_p=0.9)
    assert [o.token_ids for o in outs] != plain(temperature=1.0, top_k=10, top_p=0.9)
    seen = []
    generate = tiny.gen.generate
    monkeypatch.setattr(tiny.gen, "generate", lambda **kw: seen.append(kw) or generate(**kw))
    tiny.make(top_k=10, top_p=0.9).generate(PROMPTS, max_new_tokens=2, watermark=False)
    assert [type(p).__name__ for p in seen[0]["logits_processor"]] == [
        "TopKLogitsWarper",
        "TopPLogitsWarper",
    ]


def test_prompts_are_left_padded_without_changing_the_tokenizer(tiny: SimpleNamespace) -> None:
    import copy

    from watermark.generate.generation import encode_prompts

    tok = copy.deepcopy(tiny.gtok)
    tok.pad_token = None
    enc, pad = encode_prompts(tok, PROMPTS, torch.device("cpu"))
    assert tok.pad_token is None and pad == tok.eos_token_id  # EOS pads; the tokenizer is as it was
    want = tiny.gtok(list(PROMPTS), return_tensors="pt", padding=True, padding_side="left")
    assert torch.equal(enc["attention_mask"], want["attention_mask"])
    kept = want["attention_mask"].bool()
    assert torch.equal(enc["input_ids"][kept], want["input_ids"][kept])
    assert (enc["input_ids"][~kept] == pad).all() and (~kept).any()


def test_a_sentence_budget_without_the_sentence_layer_is_refused(tiny: SimpleNamespace) -> None:
    from watermark.base import UserError

    wm = tiny.make(**RULE_CASES[1])
    with pytest.raises(UserError, match="max_sentence_tokens applies to the sentence layer"):
        wm.generate(PROMPTS[:1], max_new_tokens=4, max_sentence_tokens=12)
