"""The evaluation's field names (evaluation.config_fields): every field has one flat name and
one kind."""

from __future__ import annotations

from evaluation.config_fields import evolve, field_names, fields_of, flat_view
from watermark.config.watermark_config import WatermarkConfig


def test_every_field_declares_its_kind_once() -> None:
    kinds = [fields_of(k) for k in ("shared", "sampling", "detection", "runtime")]
    names = [n for names in kinds for n in names]
    every = {*flat_view(WatermarkConfig()), "bias", "delta"}  # and the other rules' strengths
    assert sorted(names) == sorted(every) and len(names) == len(set(names))
    assert "sentence_test" in fields_of("detection") and "embed_batch_size" in fields_of("runtime")
    assert set(field_names()) == every


def test_a_variant_names_the_sentence_layer_as_the_cached_results_do() -> None:
    cfg = evolve(WatermarkConfig(), sentence_bits=8, sentence_mapper="own", alpha=3.0)
    assert (cfg.sentences.bits, cfg.sentences.mapper, cfg.models.mapper) == (
        8,
        "own",
        WatermarkConfig().models.mapper,
    )
    view = flat_view(cfg)
    assert (view["sentence_bits"], view["sentence_mapper"], view["alpha"]) == (8, "own", 3.0)
    assert view["scaling"] == "tournament" and "bits" not in view
    assert evolve(cfg, scaling="additive").scheme.rule == "additive"  # the config's ``rule``
