"""Adaptive text watermark (Liu & Bu, ICML 2024): watermarked generation and detection.

Typical use::

    import watermark
    model, tokenizer = watermark.load_lm("smollm2-135m")
    wm = watermark.Watermark.load(tokenizer=tokenizer, generator=model)  # shipped default
    texts = [g.text for g in wm.generate(["The storm hit the coast on Monday."])]
    result = wm.detect(texts)[0]                    # DetectionResult: score, z_score, p_value, ...
    ids = model.generate(**inputs, **wm.generation_kwargs())   # your own generate call
See ``docs/research/design.md`` for the design decisions and measurements.

Layout: each folder is a layer that imports only the layers above it in this list (checked by
``tests/test_layers.py``):

1. ``watermark/core/``: the config (``config``, its ``config_sections``, ``config_files`` and the
   rule classes of ``schemes``), the strength rules' formulas (``rules``), the scoring core
   (``scoring``, ``measurement``, ``semantic``, ``green_lists``, ``token_map``, ``stats``,
   ``units``, ``sentences``), the mapper model (``semantic_mapper``), models, devices, keys,
   identity and paths;
2. ``watermark/``: ``api`` (:class:`Watermark`) and ``loading``; ``generate/`` (the processor, the
   one token-level decode path, generation), ``sentences/`` (the sentence layer) and ``detect/``
   (the detector, assembly, results);
3. ``watermark/app/``: the command line (``cli``, ``cli_parser``; ``python -m watermark``), the
   HTTP service (``service``, ``batcher``, ``access``, ``page``), ``calibrate`` and bulk
   detection (``bulk``).

Mapper training (``mapper/``) imports the core only. The evaluation harness (``evaluation/``,
``python -m evaluation``), ``benchmarks/`` and ``research/`` are repository tools beside
``data/``, not part of the wheel; so is the step-by-step reference oracle (``tests/reference.py``).
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
