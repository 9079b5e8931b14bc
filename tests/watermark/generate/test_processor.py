"""Tests for the logits processor inside model.generate: per-step output vs reference, reuse,
and the refusal of a second sampling filter (from the call, the generation_config or the list)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers import (
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
)

from tests import reference
from tests.helpers import PROMPTS, RULE_CASES, SPECIAL_IDS


class Tap(LogitsProcessor):
    """Records the scores it sees, per step."""

    def __init__(self) -> None:
        self.seen: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        self.seen.append(scores.clone())
        return scores


TEMPERATURE_CASES = [{**RULE_CASES[7], "temperature": 1.3}, {**RULE_CASES[3], "temperature": 0.7}]
LOOP_CASES = [{**RULE_CASES[10], "context_guard": 1, "loop_penalty": 1.5}]


@pytest.mark.parametrize("rule", RULE_CASES + TEMPERATURE_CASES + LOOP_CASES)
def test_sampling_distribution_matches_reference(tiny: SimpleNamespace, rule: dict) -> None:
    """At every step of a sampled batch the processor's output equals the reference's."""
    wm = tiny.make(**rule)
    before, after = Tap(), Tap()
    processors = LogitsProcessorList([before, wm.logits_processor(), after])
    enc = tiny.gtok(PROMPTS, return_tensors="pt", padding=True, padding_side="left")
    enc = {k: v.to(tiny.device) for k, v in enc.items()}
    torch.manual_seed(0)
    out = tiny.gen.generate(
        **enc,
        logits_processor=processors,
        do_sample=True,
        top_k=0,
        top_p=1.0,
        max_new_tokens=24,
        suppress_tokens=SPECIAL_IDS,
    )
    gen = out[:, enc["input_ids"].shape[1] :]
    eos = tiny.gtok.eos_token_id
    gated = guarded = penalised = 0
    for t, (raw, got) in enumerate(zip(before.seen, after.seen), start=1):
        for row in range(len(PROMPTS)):
            prefix = gen[row, : t - 1].tolist()
            if eos in prefix:
                continue
            step = reference.step(wm, prefix)
            gated += step.gated
            guarded += reference.repeated(prefix, wm.config.scheme.context_guard)
            penalised += bool(
                reference.loop_penalty(
                    prefix, wm.config.scheme.context_guard, wm.config.scheme.loop_penalty
                )
            )
            want = reference.sampling_logits(raw[row], step, wm.config, prefix, {eos})
            got_row = got[row].cpu()  # the reference works on the CPU side
            assert torch.equal(torch.isfinite(got_row), torch.isfinite(want))
            finite = torch.isfinite(want)
            assert torch.allclose(got_row[finite], want[finite], atol=1e-4)
    assert gated > 10
    assert guarded > 0 or wm.config.scheme.context_guard == 0
    assert penalised > 0 or rule not in LOOP_CASES


def test_processor_with_model_generate_and_reuse(tiny: SimpleNamespace) -> None:
    wm = tiny.make()
    proc = wm.logits_processor(record=True)
    enc = tiny.gtok(PROMPTS, return_tensors="pt", padding=True, padding_side="left")
    enc = {k: v.to(tiny.device) for k, v in enc.items()}
    for seed, new in ((0, 12), (1, 9)):
        torch.manual_seed(seed)
        out = tiny.gen.generate(
            **enc,
            logits_processor=LogitsProcessorList([proc]),
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            max_new_tokens=new,
            suppress_tokens=SPECIAL_IDS,
        )
        assert proc.record.prompt_length == enc["input_ids"].shape[1]  # a new generation was seen
        assert [d.step for d in proc.record.decisions] == list(range(1, new + 1))
        assert out.shape[1] == enc["input_ids"].shape[1] + new
    with pytest.raises(ValueError, match="width"):
        proc(enc["input_ids"], torch.zeros(3, len(tiny.gtok) + 1))


def _encoded(tiny: SimpleNamespace) -> dict:
    enc = tiny.gtok(PROMPTS, return_tensors="pt", padding=True, padding_side="left")
    return {k: v.to(tiny.device) for k, v in enc.items()}


SECOND_FILTERS = [  # (call arguments besides the processor, generation_config fields, expected)
    ({"top_k": 10}, {}, r"top_k=10.*scheme\.top_k"),
    ({"top_k": 0, "top_p": 0.9}, {}, r"top_p=0.9.*scheme\.top_p"),
    ({"top_k": 0, "temperature": 0.7}, {}, r"temperature=0.7.*scheme\.temperature"),
    ({"top_k": 0, "min_p": 0.1}, {}, r"min_p=0.1: the watermark has no such sampling setting"),
    ({}, {}, r"top_k=50.*scheme\.top_k"),  # transformers' default top-k
    ({"top_k": 0}, {"top_p": 0.8}, r"top_p=0.8.*scheme\.top_p"),  # the model's config
    ({"top_k": 0}, {"temperature": 0.6}, r"temperature=0.6.*scheme\.temperature"),
    ({"generation_config": GenerationConfig(top_k=7)}, {}, r"top_k=7.*scheme\.top_k"),
    ({"top_k": 0, "extra": [TopKLogitsWarper(top_k=5)]}, {}, r"top_k=5.*scheme\.top_k"),
]


@pytest.mark.parametrize("call,model_config,found", SECOND_FILTERS)
def test_second_filter_is_refused(
    tiny: SimpleNamespace,
    monkeypatch: pytest.MonkeyPatch,
    call: dict,
    model_config: dict,
    found: str,
) -> None:
    """A warper that would filter the processor's output again raises before any sampling, in
    one line that names the config field to set instead."""
    wm = tiny.make()
    for name, value in model_config.items():
        monkeypatch.setattr(tiny.gen.generation_config, name, value)
    proc = wm.logits_processor(record=True)
    call = dict(call)
    processors = LogitsProcessorList([*call.pop("extra", []), proc])
    with pytest.raises(
        ValueError, match=f"second sampling filter.*{found}.*generation_kwargs"
    ) as e:
        tiny.gen.generate(
            **_encoded(tiny), logits_processor=processors, do_sample=True, max_new_tokens=4, **call
        )
    assert "\n" not in str(e.value)
    assert proc.record.decisions == []  # refused on the first step, before any work


def test_generation_kwargs_override_the_model_config(
    tiny: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``**wm.generation_kwargs()`` switches off the generation_config's warpers (same tokens as
    without them) in a generation_config of its own, so a sampling argument of the call is no
    TypeError but the processor's one-line refusal; a neutral temperature warper is no second
    filter."""
    wm = tiny.make()
    enc = _encoded(tiny)

    def tokens() -> list:
        torch.manual_seed(0)
        return tiny.gen.generate(**enc, **wm.generation_kwargs(), max_new_tokens=12).tolist()

    plain = tokens()
    warpers = {"temperature": 0.5, "top_k": 3, "top_p": 0.5, "min_p": 0.2, "typical_p": 0.5}
    for name, value in warpers.items():
        monkeypatch.setattr(tiny.gen.generation_config, name, value)
    assert tokens() == plain
    kwargs = wm.generation_kwargs()
    assert set(kwargs) == {"logits_processor", "generation_config"}
    gc = kwargs["generation_config"]
    assert (gc.do_sample, gc.temperature, gc.top_k, gc.top_p) == (True, 1.0, 0, 1.0)
    assert tiny.gen.generation_config.top_k == 3  # the model's own is left as it was
    with pytest.raises(ValueError, match=r"top_k=50: .*set scheme\.top_k in the watermark config"):
        tiny.gen.generate(**enc, **wm.generation_kwargs(), top_k=50)
    kwargs["logits_processor"].insert(0, TemperatureLogitsWarper(1.0))
    torch.manual_seed(0)
    assert tiny.gen.generate(**enc, **kwargs, max_new_tokens=12).tolist() == plain
