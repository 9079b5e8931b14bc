"""The evaluation's field names (evaluation.config_fields): every field has one flat name and
one kind."""

from __future__ import annotations

from evaluation.config_fields import field_names, fields_of
from watermark.config.watermark_config import DEFAULT_FLAT


def test_every_field_declares_its_kind_once() -> None:
    kinds = [fields_of(k) for k in ("shared", "sampling", "detection", "runtime")]
    names = [n for names in kinds for n in names]
    assert sorted(names) == sorted([*DEFAULT_FLAT, "scaling"]) and len(names) == len(set(names))
    assert "sentence_test" in fields_of("detection") and "embed_batch_size" in fields_of("runtime")
    assert set(field_names()) == {*DEFAULT_FLAT, "scaling"}
