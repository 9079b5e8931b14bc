"""Adaptive text watermark (Liu & Bu, ICML 2024): watermarked generation and detection.

Typical use::

    import watermark
    model, tokenizer = watermark.load_lm("smollm2-135m")
    wm = watermark.Watermark.load(tokenizer=tokenizer, generator=model)  # shipped default
    texts = [g.text for g in wm.generate(["The storm hit the coast on Monday."])]
    result = wm.detect(texts)[0]                    # DetectionResult: score, z_score, p_value, ...
    ids = model.generate(**inputs, **wm.generation_kwargs())   # your own generate call

See ``docs/research/design.md`` for the design decisions and measurements.

Layout, bottom up: each layer imports only itself and the layers below it (checked by
``tests/test_layers.py``):

1. ``base``: the user's error and the vocabularies every layer shares;
2. ``config/``: the config in typed sections (the scheme classes hold their strength rules),
   its files and their upgrade, keys and paths;
3. ``models/``: loading the models, the semantic mapper model;
4. ``core/``: the one scoring core of generation and detection (the gate, the green lists, the
   rules run on a batch of logits, the statistical tests, the fingerprint);
5. ``api`` (:class:`Watermark`) and ``loading``, with ``generate/`` (the logits processor and
   generation), ``sentences/`` (the sentence layer) and ``detect/`` (the detector, the verdict,
   the results);
6. ``app/``: the command line (``python -m watermark``), the HTTP service, calibration and bulk
   detection.

Mapper training (``mapper/``), the evaluation harness (``evaluation/``), ``benchmarks/`` and
``research/`` are repository tools beside ``data/``, not part of the wheel.
"""

from __future__ import annotations

from typing import Any

from watermark.config.watermark_config import WatermarkConfig

__all__ = [
    "AdaptiveWatermarkLogitsProcessor",
    "DetectionResult",
    "Watermark",
    "WatermarkConfig",
    "load_lm",
    "resolve_lm",
]


def __getattr__(name: str) -> Any:  # lazy imports keep `import watermark` light
    if name == "Watermark":
        from watermark.api import Watermark

        return Watermark
    if name == "DetectionResult":
        from watermark.detect.result import DetectionResult

        return DetectionResult
    if name == "AdaptiveWatermarkLogitsProcessor":
        from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor

        return AdaptiveWatermarkLogitsProcessor
    if name in ("load_lm", "resolve_lm"):
        from watermark.models import loaders

        return getattr(loaders, name)
    raise AttributeError(f"module 'watermark' has no attribute {name!r}")
