"""Pinned cache keys of the evaluation: earlier runs' cached results must keep their keys.

The digests below were written down from the code that made the caches (``runs/eval/*/cache``);
a change to a cache view, to ``LATER_FIELDS_OFF`` / ``SPEED_ONLY`` / ``GENERATION_ONLY`` or a new
config field left out of them changes a digest and fails here.
"""

from __future__ import annotations

import pytest

from evaluation.cache_keys import (
    SPEED_ONLY,
    detection_key,
    detection_view,
    digest,
    generation_key,
    generation_view,
)
from evaluation.config_fields import fields_of
from watermark.config.sections import RUNTIME
from watermark.config.watermark_config import WatermarkConfig

# the shipped default config's fields when the caches were written
SHIPPED = {
    "mapper": "checkpoints/mapper-minilm",
    "generator": "smollm2-135m",
    "vocab_size": None,
    "measurement_model": "smollm2-135m",
    "mm_start_token": None,
    "embedder": "minilm",
    "key": "adaptive-watermark-demo-key-not-secret",
    "old_keys": [],
    "opening_sentence": "The lighthouse keeper counted the ships that passed before dawn.",
    "alpha": 2.0,
    "delta": 1.5,
    "bias": 2.0,
    "layers": 1,
    "opening_steps": 0,
    "temperature": 1.0,
    "top_k": 50,
    "top_p": 0.9,
    "scaling": "additive",
    "filter_first": True,
    "context_guard": 0,
    "fresh_only": True,
    "repeats": "neutral",
    "token_map": "keyed",
    "null_model": "vocab",
    "unique_tokens": True,
    "outputs_once": False,
    "target_fpr": 0.01,
    "embed_batch_size": 256,
    "mm_window": 2048,
    "embed_prefix_tokens": 512,
    "embed_window": 32,
    "compute_dtype": "float32",
    "window_sizes": [],
    "allowed_scripts": ["LATIN"],
    "neutral": "half",
    "loop_penalty": 0.0,
}
# variant -> (generation digest, detection digest)
PINNED = {
    "default": ({}, "95af85a2e18d5661", "e654e8116642f1ce"),
    "tournament": (
        {"scaling": "tournament", "layers": 10, "temperature": 1.05},
        "3e4453fb93d6c03a",
        "aa169fa54625ecd3",
    ),
    "additive": ({"scaling": "additive", "bias": 2.5}, "d170283e88a48a3e", "e654e8116642f1ce"),
    "paper": (
        {"scaling": "paper", "delta": 2.0, "fresh_only": False, "embed_window": 0},
        "b5527d1a0dbde3b5",
        "634de425ab421e68",
    ),
    "bf16": (
        {"compute_dtype": "bfloat16", "old_keys": ["abc"], "mm_window": 1024},
        "fc25f8faf5410251",
        "f4dab18cd5530e86",
    ),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_cache_digests_are_pinned(name: str) -> None:
    changes, generation, detection = PINNED[name]
    cfg = WatermarkConfig.from_dict({**SHIPPED, **changes})  # a complete save of its time
    assert digest(generation_view(cfg)) == generation
    assert digest(detection_view(cfg)) == detection
    assert generation_key(cfg) == f"ours-{generation}"
    assert detection_key(cfg) == f"ours-det-{detection}"


def test_views_leave_out_what_a_result_does_not_depend_on() -> None:
    base = WatermarkConfig.of(
        opening_sentence="x",
        rule="additive",
        bias=3.0,
        filter_first=True,
        context_guard=0,
        outputs_once=False,
    )
    # a config holds its own rule's strength only; detection ignores the rule altogether
    with pytest.raises(ValueError, match="scheme.delta is not a setting of rule 'additive'"):
        base.evolve(delta=9.0)
    other_bias = base.evolve(bias=1.0)
    assert generation_view(other_bias) != generation_view(base)
    paper = base.evolve(rule="paper", filter_first=False)
    assert detection_view(paper) == detection_view(base)
    # the embedding batch changes speed only: it never splits a cache
    batched = base.evolve(embed_batch_size=7)
    assert generation_view(batched) == generation_view(base)
    # the windowed test is read at detection only: one generation cache for every window setting
    windowed = base.evolve(window_sizes=[64])
    assert generation_view(windowed) == generation_view(base)
    assert detection_view(windowed) != detection_view(base)
    once = base.evolve(outputs_once=True)
    assert generation_view(once) == generation_view(base)
    assert detection_view(once) != detection_view(base)
    guarded = base.evolve(context_guard=4)
    assert detection_view(guarded) != detection_view(base)


def test_every_runtime_field_is_held_at_one_value_in_the_views() -> None:
    assert set(SPEED_ONLY) == set(fields_of(RUNTIME))
    fast = WatermarkConfig.from_dict({**SHIPPED, **dict.fromkeys(SPEED_ONLY, 7)})
    assert generation_key(fast) == generation_key(WatermarkConfig.from_dict(SHIPPED))
    assert detection_key(fast) == detection_key(WatermarkConfig.from_dict(SHIPPED))
