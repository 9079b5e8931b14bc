"""Tests for Watermark.load (parts that do not fit, token maps sized by the LM head) and the
generator it holds (wm.generate without a model; a different model is refused)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.helpers import PROMPTS, tiny_llama, tiny_mapper
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig


def test_load_rejects_parts_that_do_not_fit(tiny: SimpleNamespace) -> None:
    cfg = dict(mapper="m", generator="g", key="k", opening_sentence="o")
    common = dict(
        tokenizer=tiny.gtok, generator=tiny.gen, measurement_model=tiny.mm, embedder=tiny.emb
    )
    with pytest.raises(ValueError, match="16-d embeddings.*input_dim=24"):
        Watermark.load(
            WatermarkConfig.of(**cfg, measurement_model="g"), mapper=tiny_mapper(24, 8), **common
        )
    with pytest.raises(ValueError, match="exceeds the LM-head width"):
        Watermark.load(
            WatermarkConfig.of(**cfg, measurement_model="g", vocab_size=len(tiny.gtok)),
            mapper=tiny_mapper(16, 4096),
            **common,
        )
    with pytest.raises(ValueError, match="vocab_size=999"):
        Watermark.load(
            WatermarkConfig.of(**cfg, measurement_model="g", vocab_size=999),
            mapper=tiny.mapper,
            **common,
        )
    with pytest.raises(ValueError, match="unknown watermark config key 'null_model'"):
        tiny.make(cross=True, null_model="mm")  # fields by today's names: files are upgraded


def test_token_map_sized_by_lm_head_not_tokenizer(tiny: SimpleNamespace) -> None:
    wide = tiny_llama(len(tiny.gtok) + 7, seed=5)
    wm = Watermark.load(
        WatermarkConfig.of(
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
    with pytest.raises(ValueError, match="holds the generator it was loaded and checked with"):
        wm.generate(tiny.gen, PROMPTS[:1], max_new_tokens=2)


def test_generate_uses_the_held_generator(tiny: SimpleNamespace) -> None:
    wm = tiny.make()
    assert wm.generator is tiny.gen
    held = wm.generate(PROMPTS, max_new_tokens=6, seed=1)
    given = wm.generate(tiny.gen, PROMPTS, 6, seed=1)  # the older form, same model
    assert [o.token_ids for o in held] == [o.token_ids for o in given]
    with pytest.raises(ValueError, match="holds the generator"):
        wm.generate(tiny.mm, PROMPTS, max_new_tokens=2)  # same width, another model
    with pytest.raises(ValueError, match="prompts first and the rest by name"):
        wm.generate(PROMPTS, 6)
    with pytest.raises(ValueError, match="top_k, top_p come from the watermark config"):
        wm.generate(PROMPTS, max_new_tokens=2, top_p=0.5, top_k=3)


def test_watermark_without_a_generator(tiny: SimpleNamespace) -> None:
    """The MM is held when the config names the same model; otherwise the model is passed."""
    fields = dict(mapper="m", generator="g", key="k", opening_sentence="o")
    fields["vocab_size"] = len(tiny.gtok)
    parts = dict(tokenizer=tiny.gtok, embedder=tiny.emb, mapper=tiny.mapper)
    same = Watermark.load(
        WatermarkConfig.of(**fields, measurement_model="g"), measurement_model=tiny.mm, **parts
    )
    assert same.generator is tiny.mm
    cross = Watermark.load(
        WatermarkConfig.of(**fields, measurement_model="x"),
        measurement_model=tiny.mmx,
        mm_tokenizer=tiny.mtok,
        **parts,
    )
    assert cross.generator is None
    with pytest.raises(ValueError, match="holds no generator"):
        cross.generate(PROMPTS, max_new_tokens=2)
    with pytest.raises(ValueError, match="LM head has width"):
        cross.generate(tiny_llama(len(tiny.gtok) + 7, seed=5), PROMPTS, max_new_tokens=2)
    assert len(cross.generate(tiny.gen, PROMPTS, max_new_tokens=3, seed=0)) == len(PROMPTS)
