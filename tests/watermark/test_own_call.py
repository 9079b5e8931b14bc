"""transformers habits with the watermark: a user's own ``model.generate`` and ``pipeline`` with
``**wm.generation_kwargs()``, a sampling argument of their own, and the detector in the shape of
transformers' ``WatermarkDetector`` (watermark.generate.own_call, watermark.detect.hf_style).

The real-model check of the same calls (SmolLM2-135M-Instruct, the shipped default) is in the
report of issue 95: ``temperature=0.7`` in the call is refused in one line, and set as
``scheme.temperature`` the text it makes is detected.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import watermark
from tests.helpers import PROMPTS

PROMPT = PROMPTS[1]


def _inputs(tiny: SimpleNamespace) -> dict:
    return dict(tiny.gtok([PROMPT], return_tensors="pt").to(tiny.device))


def test_a_temperature_in_the_call_is_one_line_naming_the_config_field(
    tiny: SimpleNamespace,
) -> None:
    wm, inputs = tiny.make(), _inputs(tiny)
    with pytest.raises(ValueError, match=r"temperature=0\.7: .*set scheme\.temperature") as err:
        tiny.gen.generate(**inputs, **wm.generation_kwargs(), temperature=0.7, max_new_tokens=4)
    assert "\n" not in str(err.value) and "--set scheme.temperature=0.7" in str(err.value)
    with pytest.raises(ValueError, match=r"temperature=0\.7: .*scheme\.temperature"):
        wm.generation_kwargs(temperature=0.7)  # refused at once where it is given to us
    with pytest.raises(ValueError, match="do_sample must stay True"):
        wm.generation_kwargs(do_sample=False)
    with pytest.raises(ValueError, match="attention_mask: not a generation setting"):
        wm.generation_kwargs(attention_mask=inputs["attention_mask"])


def test_the_config_temperature_takes_effect_and_the_ids_detect_as_the_text(
    tiny: SimpleNamespace,
) -> None:
    """Set where the message says, the temperature changes what the user's own call samples,
    which is exactly what ``wm.generate`` samples; the detector object reads the ids as
    ``detect`` reads the text."""
    inputs, start = _inputs(tiny), _inputs(tiny)["input_ids"].shape[1]
    tokens = {}
    for temperature in (1.0, 4.0):
        wm = tiny.make(temperature=temperature)
        torch.manual_seed(0)
        ids = tiny.gen.generate(**inputs, **wm.generation_kwargs(max_new_tokens=16))
        own = ids[:, start:]
        made = wm.generate([PROMPT], seed=0, max_new_tokens=16)[0]
        assert own[0].tolist()[: len(made.token_ids)] == made.token_ids
        tokens[temperature] = made.token_ids
        detector = watermark.WatermarkDetector(wm)
        out = detector(own, return_dict=True)
        (by_text,) = wm.detect([made.text])
        assert out.results[0].p_value == pytest.approx(by_text.p_value, rel=1e-9)
        assert out.num_tokens_scored[0] == by_text.num_scored > 0
        assert out.p_value[0] == by_text.verdict_p_value and out.confidence[0] == 1 - out.p_value[0]
        assert out.prediction.dtype == np.bool_ and detector(own).tolist() == [
            by_text.is_watermarked
        ]
        assert detector([made.text], z_threshold=-100.0).tolist() == [True]  # transformers' rule
        assert out.results[0].key_id == wm.identity.key_ids[0]
    assert tokens[1.0] != tokens[4.0]


def test_a_pipeline_takes_the_generation_kwargs(tiny: SimpleNamespace) -> None:
    from transformers import pipeline

    wm = tiny.make()
    pipe = pipeline("text-generation", model=tiny.gen, tokenizer=tiny.gtok)
    torch.manual_seed(0)
    (out,) = pipe(PROMPT, **wm.generation_kwargs(max_new_tokens=8), return_full_text=False)
    assert out["generated_text"].strip()
    with pytest.raises(ValueError, match=r"top_p=0\.5: .*scheme\.top_p"):
        pipe(PROMPT, **wm.generation_kwargs(max_new_tokens=8), top_p=0.5)


def test_a_result_prints_short_and_the_package_has_a_version(tiny: SimpleNamespace) -> None:
    wm = tiny.make()
    made = wm.generate([PROMPT], seed=0, max_new_tokens=16)[0]
    (result,) = wm.detect([made.text])
    shown = repr(result)
    assert shown.startswith("DetectionResult(is_watermarked=") and len(shown) < 300
    assert "token_ids" not in shown and "p_value=" in shown and wm.identity.key_ids[0] in shown
    assert set(result.to_dict()) >= {"p_value", "is_watermarked", "fingerprint", "key_id"}
    assert watermark.__version__.count(".") >= 2
