"""Tests for the calibration table (FPR / TPR by length, Wilson intervals)."""

from __future__ import annotations

import pytest

from tests.helpers import PROMPTS, sentences
from watermark.app.calibrate import calibrate, wilson
from watermark.core.text import encode_text


def test_wilson_interval() -> None:
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson(5, 10)
    assert (low, high) == pytest.approx((0.2366, 0.7634), abs=1e-4)


def test_calibration_rows_by_length(tiny) -> None:
    from watermark.generate.generation import generate

    wm = tiny.make(key="key-A", old_keys=["key-B"])
    made = tiny.make(key="key-B")
    outs = generate(tiny.gen, tiny.gtok, PROMPTS, made.logits_processor(), max_new_tokens=30)
    human = sentences(6, seed=2, length=25)
    rows = calibrate(
        wm,
        human,
        [o.text for o in outs],
        lengths=[10, 20, 1000],
        expect_key=1,
        human_by_length=True,
    )
    assert [r["tokens"] for r in rows] == ["all", 10, 20, 1000]
    assert rows[0]["human_texts"] == 6 and rows[0]["watermarked_texts"] == 3
    assert rows[-1]["human_texts"] == 0 and "fpr@p<0.01" not in rows[-1]  # none that long
    full = wm.detect(human)
    assert rows[0]["fpr@p<0.05"] == sum(r.p_value < 0.05 for r in full) / 6
    assert 0.0 <= rows[1]["tpr@p<0.001_ci95"][0] <= rows[1]["tpr@p<0.001"]
    assert (
        rows[0]["attributed_to_expected_key"]
        == sum(r.key_index == 1 for r in wm.detect([o.text for o in outs])) / 3
    )
    cut = [encode_text(tiny.gtok, h)[:10] for h in human]
    assert rows[1]["human_texts"] == sum(len(c) == 10 for c in cut)
    alone = made.detect(human)  # key B alone, i.e. key 1 of the rotation config
    assert rows[0]["fpr_key1_alone@p<0.05"] == sum(r.p_value < 0.05 for r in alone) / 6
    assert "human_texts" not in calibrate(wm, human, lengths=[10])[1]  # whole human texts only
    with pytest.raises(ValueError, match="no human texts"):
        calibrate(wm, [])
