"""The evaluation's names for the watermark config's fields: one flat name per field, by kind.

The evaluation's variants (YAML) and its cache keys (:mod:`evaluation.cache_keys`) name every
field of every section with one flat name: the field's own name, except the sentence layer's,
which keep the names they had when the cached results were written (:data:`FLAT_NAMES`:
``sentences.bits`` is ``sentence_bits``, ``sentences.mapper`` is ``sentence_mapper``). The rule
is ``scaling``. A field's kind (:func:`~watermark.config.sections.setting`) says whether
generation, detection or both read it.
"""

from __future__ import annotations

from typing import Any

from watermark.config.sections import KINDS, SAMPLING
from watermark.config.watermark_config import WatermarkConfig, all_fields

RULE_NAME = "scaling"  # the evaluation's name of the rule (the config's ``scheme.rule``)

# the evaluation's names of the fields whose own name is not theirs, (section, field) -> name
FLAT_NAMES = {
    ("sentences", "bits"): "sentence_bits",
    ("sentences", "candidates"): "sentence_candidates",
    ("sentences", "context_bits"): "sentence_context_bits",
    ("sentences", "keying"): "sentence_keying",
    ("sentences", "test"): "sentence_test",
    ("sentences", "choice"): "sentence_choice",
    ("sentences", "weight_power"): "sentence_weight_power",
    ("sentences", "mapper"): "sentence_mapper",
    ("sentences", "mapper_digest"): "sentence_mapper_digest",
    ("sentences", "embedder"): "sentence_embedder",
    ("sentences", "embedder_digest"): "sentence_embedder_digest",
}


def named_fields() -> list[tuple[str, tuple[str, str], Any]]:
    """``(flat name, (section, field), field)`` of every field, in file order."""
    return [(FLAT_NAMES.get(where, where[1]), where, f) for where, f in all_fields()]


def flat_view(cfg: WatermarkConfig) -> dict[str, Any]:
    """Every field of ``cfg`` by its flat name, and the rule as ``scaling`` (the secrets too;
    keep it private): the view the cache keys are computed from."""
    out: dict[str, Any] = {RULE_NAME: cfg.scheme.rule}
    for name, (section, field), _ in named_fields():
        part = getattr(cfg, section)
        if hasattr(part, field):  # a rule's fields: only the chosen rule's
            out.setdefault(name, getattr(part, field))
    return out


def evolve(cfg: WatermarkConfig, **changes: Any) -> WatermarkConfig:
    """``cfg`` with ``changes`` by flat name (a variant of the YAML), checked again."""
    where = {FLAT_NAMES[k]: k for k in FLAT_NAMES}
    plain = {"rule" if k == RULE_NAME else k: v for k, v in changes.items() if k not in where}
    named = {".".join(where[k]): v for k, v in changes.items() if k in where}
    cfg = cfg.evolve(**plain) if plain else cfg
    return cfg.with_settings(named) if named else cfg


def field_names() -> tuple[str, ...]:
    """The flat names of every field and of the rule (what a variant may change)."""
    return (RULE_NAME, *(name for name, _, _ in named_fields()))


def fields_of(kind: str) -> tuple[str, ...]:
    """Flat names of the fields of one kind, in file order (the rule's name is generation's:
    detection reads a text the same way under every rule of the same green lists)."""
    if kind not in KINDS:
        raise ValueError(f"unknown field kind {kind!r}; known: {KINDS}")
    names = tuple(name for name, _, f in named_fields() if f.metadata["kind"] == kind)
    return (RULE_NAME, *names) if kind == SAMPLING else names
