"""Cache keys of our method in the evaluation: which watermark config fields a result depends on.

The views follow the kinds the config's fields declare
(:func:`evaluation.config_fields.fields_of`): a generation depends on every field but the
detection policy and the strengths of the rules it does not use; a detection on every field but
the sampling ones (the rule, its strength, the filters).
Runtime fields are held at one value, so no result depends on them.
Both views hold fields added after results were cached only when they differ from the value
that leaves those results unchanged (:data:`LATER_FIELDS_OFF`), so earlier caches keep their keys:
the digests of a few configs are pinned by ``tests/evaluation/test_cache_keys.py``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from evaluation.config_fields import fields_of, flat_view
from watermark.config.files import RETIRED  # every cached result was made with these
from watermark.config.schemes import SCHEMES
from watermark.config.sections import DETECTION, RUNTIME, SAMPLING
from watermark.config.watermark_config import WatermarkConfig

# fields added after results were cached, at the values that leave those results unchanged
# (fresh_only off; the long-text limits never reached by texts of <= 512 tokens; neutral tokens
# at v_hat = 1/2 as before 0.5.0): left out of
# the cache views at these values, so that earlier cached results keep their keys
LATER_FIELDS_OFF = {
    "fresh_only": False,
    "mm_window": 2048,
    "embed_prefix_tokens": 512,
    "embed_window": 0,
    "compute_dtype": "float32",
    "window_sizes": [],
    "old_keys": [],
    "temperature": 1.0,
    "repeats": "neutral",
    "outputs_once": False,
    "neutral": "half",
    "sentence_bits": 0,
    "sentence_candidates": 4,
    "sentence_context_bits": 0,
    "sentence_keying": "previous",
    "sentence_test": "hits",
    "sentence_choice": "score",
    "sentence_weight_power": 1,
    "sentence_mapper": None,
    "sentence_embedder": None,
    "resample_every": 0,
    "stop_at": 0.0,
    "loop_penalty": 0.0,
}
# runtime fields: the cache views hold them at these values whatever the config says, so a
# cached result does not depend on them (32: the embedding batch when the caches were written)
SPEED_ONLY = {"embed_batch_size": 32}
# the parts named by "mapper", "embedder", "sentence_mapper" and "sentence_embedder"
PINS = ("mapper_digest", "embedder_digest", "sentence_mapper_digest", "sentence_embedder_digest")
# detection-policy fields that generation keys held before the fields declared their kinds:
# kept in the generation view so that cached generations keep their keys
POLICY_IN_GENERATION_KEYS = (
    "old_keys",
    "null_model",
    "unique_tokens",
    "target_fpr",
    "allowed_scripts",
)
DETECTION_ONLY = tuple(n for n in fields_of(DETECTION) if n not in POLICY_IN_GENERATION_KEYS)
GENERATION_ONLY = fields_of(SAMPLING) + fields_of(RUNTIME)


def digest(obj: Any) -> str:
    """Short stable hash of a JSON-able object (cache keys)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def generation_view(cfg: WatermarkConfig) -> dict[str, Any]:
    """The fields generation depends on (all but the other rules' strengths and the windows)."""
    strengths = {cls.strength_field for cls in SCHEMES.values()}
    unused = strengths - {cfg.scheme.strength_field} | set(DETECTION_ONLY)
    return {k: v for k, v in _cache_view(cfg).items() if k not in unused}


def detection_view(cfg: WatermarkConfig) -> dict[str, Any]:
    """The fields detection depends on (all but the rule, its strength and the filters)."""
    return {k: v for k, v in _cache_view(cfg).items() if k not in GENERATION_ONLY}


def _cache_view(cfg: WatermarkConfig) -> dict[str, Any]:
    data = {**RETIRED, **flat_view(cfg), **SPEED_ONLY, "layers": cfg.green_lists}
    for pin in PINS:  # loading checks that "mapper" / "embedder" hold the pinned parts
        data.pop(pin)
    return {k: v for k, v in data.items() if LATER_FIELDS_OFF.get(k, object()) != v}


def generation_key(cfg: WatermarkConfig) -> str:
    """The generation cache key of our method under ``cfg``."""
    return "ours-" + digest(generation_view(cfg))


def detection_key(cfg: WatermarkConfig) -> str:
    """The detection cache key of our method under ``cfg`` (shared by configs that differ only
    in generation settings)."""
    return "ours-det-" + digest(detection_view(cfg))


def text_hash(text: str) -> str:
    """The part of a cache key that names a text."""
    return hashlib.sha256(text.encode()).hexdigest()[:20]
