"""Semantic Mapping Model (SM): the model, its training system and its export format.

``mapper.SemanticMapper`` / ``mapper.MapperConfig`` are the plain model; ``mapper.load_embedder``
returns the sentence embedder an exported mapper names in its ``config.json`` (key ``embedder``).
Training: ``python -m mapper.train fit --config configs/mapper/default.yaml``; the sentence
layer's mapper with ``configs/mapper/sentence.yaml`` (``sentence_system``, ``sentence_data``),
and its own encoder with it with ``configs/mapper/encoder.yaml`` (``encoder_system``,
``encoder_data``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["MapperConfig", "SemanticMapper", "load_embedder"]


def __getattr__(name: str) -> Any:  # lazy: `import mapper` stays light
    if name in ("MapperConfig", "SemanticMapper"):
        from watermark.models import semantic_mapper as model

        return getattr(model, name)
    if name == "load_embedder":
        from watermark.models.loaders import load_embedder

        return load_embedder
    raise AttributeError(f"module 'mapper' has no attribute {name!r}")
