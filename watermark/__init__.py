"""Adaptive text watermark (Liu & Bu, ICML 2024): watermarked generation and detection.

Typical use::

    import watermark
    model, tokenizer = watermark.load_lm("smollm2-135m")   # SmolLM2-135M-Instruct, packaged
    wm = watermark.Watermark.load(tokenizer=tokenizer, generator=model)  # or a name: "robust"
    texts = [g.text for g in wm.generate(["The storm hit the coast on Monday."])]
    result = wm.detect(texts)[0]                    # DetectionResult: p_value, is_watermarked, ...
    ids = model.generate(**inputs, **wm.generation_kwargs(max_new_tokens=200))  # your own call
    watermark.WatermarkDetector(wm)(ids[:, inputs["input_ids"].shape[1]:])  # transformers' shape

See ``docs/research/design.md`` for the design decisions and measurements.

Layout, bottom up: each layer imports only itself and the layers below it (checked by
``tests/test_layers.py``):

1. ``base``: the user's error and the vocabularies every layer shares;
2. ``config/``: the config in typed sections (the scheme classes hold their strength rules),
   its files and their upgrade, keys and paths;
3. ``models/``: loading the models, the semantic mapper model;
4. ``core/``: the one scoring core of generation and detection (the gate, the green lists, the
   rules run on a batch of logits, the fingerprint);
5. ``sentences/``: the sentence layer's rules (spans, keys, the test);
6. ``api`` (:class:`Watermark`) and ``loading``, with ``generate/`` (the logits processor, the
   decode loop and its plugs, generation) and ``detect/`` (the detector, the statistics of the
   tests, the verdict, the results);
7. ``app/``: the command line (``python -m watermark``), the HTTP service, calibration and bulk
   detection.

Mapper training (``mapper/``), the evaluation harness (``evaluation/``), ``benchmarks/`` and
``research/`` are repository tools beside ``data/``, not part of the wheel.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from watermark.config.watermark_config import WatermarkConfig

try:
    __version__ = version("adaptive-watermark")
except PackageNotFoundError:  # the sources on the path, not installed
    __version__ = "0+unknown"

__all__ = [
    "AdaptiveWatermarkLogitsProcessor",
    "DetectionResult",
    "Watermark",
    "WatermarkConfig",
    "WatermarkDetector",
    "__version__",
    "load_lm",
    "resolve_lm",
]


def __getattr__(name: str) -> Any:  # lazy imports keep `import watermark` light
    if name == "Watermark":
        from watermark.api import Watermark

        return Watermark
    if name == "WatermarkDetector":
        from watermark.detect.hf_style import WatermarkDetector

        return WatermarkDetector
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
