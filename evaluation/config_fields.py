"""The evaluation's names for the watermark config's fields: flat names by kind, what its
variants may change and what its cache keys read (:mod:`evaluation.cache_keys`).

A field's flat name (``sentence_bits`` for ``sentences.bits``) is what
:meth:`~watermark.config.watermark_config.WatermarkConfig.evolve` takes and what the flat files of
0.1-0.4 hold; its kind (:func:`~watermark.config.sections.setting`) says whether generation,
detection or both read it.
"""

from __future__ import annotations

from watermark.config.sections import KINDS, SAMPLING
from watermark.config.watermark_config import RULE_NAME, all_fields


def field_names() -> tuple[str, ...]:
    """The flat names of every field and of the rule (the keys
    :meth:`~watermark.config.watermark_config.WatermarkConfig.evolve` takes)."""
    return (RULE_NAME, *(name for name, _ in all_fields()))


def fields_of(kind: str) -> tuple[str, ...]:
    """Flat names of the fields of one kind, in file order (the rule's name is generation's:
    detection reads a text the same way under every rule of the same green lists)."""
    if kind not in KINDS:
        raise ValueError(f"unknown field kind {kind!r}; known: {KINDS}")
    names = tuple(name for name, f in all_fields() if f.metadata["kind"] == kind)
    return (RULE_NAME, *names) if kind == SAMPLING else names
