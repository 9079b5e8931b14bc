"""Adaptive text watermark (Liu & Bu, ICML 2024): watermarked generation and detection.

Typical use::

    import watermark
    model, tokenizer = watermark.load_lm("smollm2-135m")
    wm = watermark.Watermark.load(tokenizer=tokenizer, generator=model)  # shipped default
    texts = [g.text for g in wm.generate(["The storm hit the coast on Monday."])]
    result = wm.detect(texts)[0]                    # DetectionResult: score, z_score, p_value, ...
    ids = model.generate(**inputs, **wm.generation_kwargs())   # your own generate call
See ``docs/watermark.md`` for the design decisions and measurements.

Layout, each layer importing only the ones before it (checked by ``tests/test_layers.py``):

1. runtime core: the config (``config``, ``config_checks``), the strength rules (``rules``), the
   scoring core (``core``, ``measurement``, ``semantic``, ``green_lists``, ``token_map``,
   ``stats``), models, devices, keys and paths;
2. generation / detection: ``api`` (:class:`Watermark`), ``loading``, ``processor``,
   ``generation``, ``fused``, ``detector``, ``reference``, ``calibrate``, ``page``;
3. command line: ``cli``, ``cli_parser``, ``corpus`` (``python -m watermark``);
4. evaluation: ``watermark.evaluate`` (``python -m watermark.evaluate``).
"""

from __future__ import annotations

from typing import Any

from watermark.config import WatermarkConfig

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
        from watermark.detection_result import DetectionResult

        return DetectionResult
    if name == "AdaptiveWatermarkLogitsProcessor":
        from watermark.processor import AdaptiveWatermarkLogitsProcessor

        return AdaptiveWatermarkLogitsProcessor
    if name in ("load_lm", "resolve_lm"):
        from watermark import models

        return getattr(models, name)
    raise AttributeError(f"module 'watermark' has no attribute {name!r}")
