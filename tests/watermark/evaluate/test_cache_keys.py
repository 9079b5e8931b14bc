"""Pinned cache keys of the evaluation: earlier runs' cached results must keep their keys.

The digests below were written down from the code that made the caches (``runs/eval/*/cache``);
a change to a cache view, to ``LATER_FIELDS_OFF`` / ``SPEED_ONLY`` / ``GENERATION_ONLY`` or a new
config field left out of them changes a digest and fails here.
"""

from __future__ import annotations

import pytest

from watermark.config import WatermarkConfig
from watermark.evaluate.config import digest

# the shipped default config's fields when the caches were written
SHIPPED = {
    "mapper": "checkpoints/mapper-minilm", "generator": "smollm2-135m", "vocab_size": None,
    "measurement_model": "smollm2-135m", "mm_start_token": None, "embedder": "minilm",
    "key": "adaptive-watermark-demo-key-not-secret", "old_keys": [],
    "opening_sentence": "The lighthouse keeper counted the ships that passed before dawn.",
    "alpha": 2.0, "delta": 1.5, "bias": 2.0, "layers": 1, "opening_steps": 0,
    "temperature": 1.0, "top_k": 50, "top_p": 0.9, "scaling": "additive", "filter_first": True,
    "context_guard": 0, "fresh_only": True, "token_map": "keyed", "null_model": "vocab",
    "unique_tokens": True, "target_fpr": 0.01, "embed_batch_size": 256, "mm_window": 2048,
    "embed_prefix_tokens": 512, "embed_window": 32, "compute_dtype": "float32",
    "window_sizes": [], "allowed_scripts": ["LATIN"],
}  # fmt: skip
# variant -> (generation digest, detection digest)
PINNED = {
    "default": ({}, "95af85a2e18d5661", "e654e8116642f1ce"),
    "tournament": ({"scaling": "tournament", "layers": 10, "temperature": 1.05},
                   "3e4453fb93d6c03a", "aa169fa54625ecd3"),
    "additive": ({"scaling": "additive", "bias": 2.5}, "d170283e88a48a3e", "e654e8116642f1ce"),
    "paper": ({"scaling": "paper", "delta": 2.0, "fresh_only": False, "embed_window": 0},
              "b5527d1a0dbde3b5", "634de425ab421e68"),
    "floor": ({"scaling": "floor", "context_guard": 4, "embed_batch_size": 8,
               "window_sizes": [128, 256]}, "a0d9cc2c8cfa6d32", "1f9c49ce05249405"),
    "bf16": ({"compute_dtype": "bfloat16", "old_keys": ["abc"], "mm_window": 1024},
             "fc25f8faf5410251", "f4dab18cd5530e86"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PINNED))
def test_cache_digests_are_pinned(name: str) -> None:
    changes, generation, detection = PINNED[name]
    cfg = WatermarkConfig(**{**SHIPPED, **changes})
    assert digest(cfg.generation_dict()) == generation
    assert digest(cfg.detection_dict()) == detection
