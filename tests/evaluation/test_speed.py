"""The speed stage on tiny models: every run generates the same tokens; ratios are of tokens/s."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evaluation.speed import speed
from tests.helpers import PROMPTS, fused_watermark


def test_speed_runs_generate_equal_token_counts(tiny: SimpleNamespace) -> None:
    wm = fused_watermark(tiny)
    res = speed(wm, tiny.gen, PROMPTS, new_tokens=12)
    runs = [
        res[k]
        for k in (
            "generate_without_watermark",
            "generate_with_watermark",
            "generate_with_watermark_unfused",
        )
    ]
    assert [r["tokens"] for r in runs] == [12 * len(PROMPTS)] * 3  # EOS blocked in every run
    plain, fused, unfused = (r["tokens_per_s"] for r in runs)
    assert res["generate_ratio"] == pytest.approx(fused / plain)
    assert res["generate_ratio_unfused"] == pytest.approx(unfused / plain)
    assert res["generate_batch"] == len(PROMPTS) and res["detect_fast_s_per_text"] > 0


def test_speed_times_a_variant_side_by_side(tiny: SimpleNamespace) -> None:
    wm = fused_watermark(tiny)
    variant = fused_watermark(tiny, loop_penalty=0.0)
    res = speed(wm, tiny.gen, PROMPTS, new_tokens=8, variant=variant)
    timed = res["generate_with_variant"]
    assert timed["tokens"] == 8 * len(PROMPTS)
    plain = res["generate_without_watermark"]["tokens_per_s"]
    assert res["variant_ratio"] == pytest.approx(timed["tokens_per_s"] / plain)
    marked = res["generate_with_watermark"]["tokens_per_s"]
    assert res["watermark_over_variant"] == pytest.approx(marked / timed["tokens_per_s"])
