"""Tests for Watermark.load: parts that do not fit, token maps sized by the LM head."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.helpers import PROMPTS, tiny_llama, tiny_mapper
from watermark.config import WatermarkConfig
from watermark.watermark import Watermark


def test_load_rejects_parts_that_do_not_fit(tiny: SimpleNamespace) -> None:
    cfg = dict(mapper="m", generator="g", key="k", opening_sentence="o")
    common = dict(
        tokenizer=tiny.gtok, generator=tiny.gen, measurement_model=tiny.mm, embedder=tiny.emb
    )
    with pytest.raises(ValueError, match="16-d embeddings.*input_dim=24"):
        Watermark.load(
            WatermarkConfig(**cfg, measurement_model="g"), mapper=tiny_mapper(24, 8), **common
        )
    with pytest.raises(ValueError, match="D == LM-head width V"):
        Watermark.load(
            WatermarkConfig(**cfg, measurement_model="g", token_map="identity"),
            mapper=tiny.mapper,
            **common,
        )
    with pytest.raises(ValueError, match="vocab_size=999"):
        Watermark.load(
            WatermarkConfig(**cfg, measurement_model="g", vocab_size=999),
            mapper=tiny.mapper,
            **common,
        )
    with pytest.raises(ValueError, match="null_model='mm'"):
        tiny.make(cross=True, null_model="mm")


def test_token_map_sized_by_lm_head_not_tokenizer(tiny: SimpleNamespace) -> None:
    wide = tiny_llama(len(tiny.gtok) + 7, seed=5)
    wm = Watermark.load(
        WatermarkConfig(
            mapper="m", generator="g", measurement_model="g", key="k", opening_sentence="o"
        ),
        tokenizer=tiny.gtok,
        generator=wide,
        embedder=tiny.emb,
        mapper=tiny.mapper,
    )
    assert wm.core.vocab_size == len(tiny.gtok) + 7 == wm.core.semantic.token_maps.shape[1]
    outs = wm.generate(wide, PROMPTS[:2], max_new_tokens=8, seed=0)  # logits width V works
    assert all(len(o.token_ids) <= 8 for o in outs)
    with pytest.raises(ValueError, match="LM head has width"):
        wm.generate(tiny.gen, PROMPTS[:1], max_new_tokens=2)
