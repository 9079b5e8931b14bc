"""The evaluation config in sections (evaluation.config, config_sections, config_files): checks,
``--set``, the committed files and the flat files of earlier versions."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from evaluation.config import EvalConfig
from evaluation.config_fields import evolve, flat_view
from evaluation.config_files import FLAT, is_flat
from evaluation.config_stages import SECTIONS

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "configs" / "evaluation").glob("*.yaml"))


def cfg(**sections: dict) -> EvalConfig:
    return EvalConfig.from_dict(sections)


def test_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("texts: {prompt: 3}\n")
    with pytest.raises(ValueError, match=r"unknown keys \['texts.prompt'\]"):
        EvalConfig.load(path)
    path.write_text("text: {prompts: 3}\n")
    with pytest.raises(ValueError, match=r"unknown keys \['text'\]"):
        EvalConfig.load(path)
    with pytest.raises(ValueError, match="table.methods: unknown"):
        cfg(table={"methods": ["kgw9"]})
    with pytest.raises(ValueError, match="unknown methods"):
        cfg(curves={"methods": ["ours-x"]})
    with pytest.raises(ValueError, match="unknown methods"):
        cfg(spoofing={"steal_methods": ["ours-x"]})
    with pytest.raises(ValueError, match="clash"):
        cfg(methods={"variants": {"kgw1": {"alpha": 0.0}}})
    with pytest.raises(ValueError, match="variant ours-x: unknown watermark config fields"):
        cfg(methods={"variants": {"ours-x": {"alpah": 0.0}}}, curves={"methods": ["ours-x"]})
    cfg(methods={"variants": {"ours-x": {"alpha": 0.0}}}, curves={"methods": ["ours-x"]})
    cfg(methods={"variants": {"k": {"base": "kgw1", "kgw_delta": 1.0}}}, curves={"methods": ["k"]})
    with pytest.raises(ValueError, match="base 'kgw9'"):
        cfg(methods={"variants": {"k": {"base": "kgw9"}}})
    with pytest.raises(ValueError, match="sets kgw_gamma / kgw_delta, not \\['alpha'\\]"):
        cfg(methods={"variants": {"k": {"base": "kgw1", "alpha": 0.0}}})
    with pytest.raises(ValueError, match="unknown watermark config fields"):
        cfg(ablations={"vary": {"mapper": ["m", {"mapper": "m", "embeder": "mpnet"}]}})
    with pytest.raises(ValueError, match="bad attack"):
        cfg(table={"attacks": [{"kind": "rewrite", "strength": 1}]})
    with pytest.raises(ValueError, match=r"also_against \['kgw1'\] are not in curves.methods"):
        cfg(curves={"methods": ["ours"], "baseline": "kgw1"})
    cfg(curves={"methods": ["ours"], "baseline": "kgw1", "rows_from": ["r.json"]})
    with pytest.raises(ValueError, match="oracle"):
        cfg(models={"oracle": "smollm2-135m"})
    with pytest.raises(ValueError, match="models.device must be cpu, cuda, cuda:N or auto"):
        cfg(models={"device": "gpu"})
    for device in ("cpu", "cuda", "cuda:1", "auto"):
        cfg(models={"device": device})
    with pytest.raises(ValueError, match="texts.prompts must be int, got '8'"):
        cfg(texts={"prompts": "8"})
    with pytest.raises(ValueError, match="curves.detect must be bool, got 1"):
        cfg(curves={"detect": 1})
    with pytest.raises(ValueError, match="methods.variants must map each name to a mapping"):
        cfg(methods={"variants": {"ours-x": 0.5}})
    with pytest.raises(ValueError, match="frontier.cells must be mappings"):
        cfg(frontier={"cells": ["additive"]})
    with pytest.raises(ValueError, match="ablations.vary must map each field to a list"):
        cfg(ablations={"vary": {"alpha": 0.5}})


def test_a_cell_of_a_rule_that_no_longer_exists_is_refused_in_one_line() -> None:
    cell = {"scaling": "floor", "delta": 1.5}
    with pytest.raises(ValueError) as err:
        cfg(frontier={"prompts": 8, "cells": [cell]})
    message = str(err.value)
    assert message.startswith("frontier cell 0: ") and "'floor'" in message
    assert "tournament" in message and "\n" not in message
    with pytest.raises(ValueError, match="variant ours-x: .*bigram.*fresh_only"):
        cfg(methods={"variants": {"ours-x": {"scaling": "additive", "fresh_only": False}}})


def test_set_overrides_fields_as_yaml_and_rejects_unknown_ones(tmp_path: Path, caplog) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(
        "texts: {prompts: 3}\ncurves: {methods: [ours]}\nquick: {texts: {prompts: 2}}\n"
    )
    assert EvalConfig.load(path, quick=True).texts.prompts == 2
    loaded = EvalConfig.load(
        path, quick=True, overrides=["texts.prompts=5", "curves.methods=[kgw1]", "name=x"]
    )
    assert loaded.texts.prompts == 5 and loaded.curves.methods == ["kgw1"]  # --set wins
    assert loaded.name == "x" and loaded.texts.new_tokens == 200  # the rest as they were
    with caplog.at_level(logging.WARNING):
        flat = EvalConfig.load(path, overrides=["curve_prompts=7"])
    assert flat.curves.prompts == 7 and "read as curves.prompts" in caplog.text
    for bad in ("num_prompt=5", "texts.prompts", "quick={}", "nosection.x=1"):
        with pytest.raises(ValueError, match="--set"):
            EvalConfig.load(path, overrides=[bad])


def test_key_values_reads_each_value_as_yaml() -> None:
    from evaluation.config_files import key_values

    got = key_values(["loop_penalty=0", "repeat_rule=keep", "sizes=[1, 2]", "x = 0.5"])
    assert got == {"loop_penalty": 0, "repeat_rule": "keep", "sizes": [1, 2], "x": 0.5}
    for bad in ("loop_penalty", "=1"):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            key_values([bad])


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_every_committed_config_is_in_sections_and_loads(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    assert not is_flat(data) and set(data) - {"quick"} <= {"name", "out_dir", "cache_seeds"} | set(
        SECTIONS
    )
    for quick in (False, True):
        loaded = EvalConfig.load(path, quick=quick)
        assert loaded.parts() and loaded.to_dict()["texts"] == loaded.texts.__dict__


def flat_of(data: dict) -> dict:
    """A config of today's sections written the flat way (the format before sections)."""
    where = {v: k for k, v in FLAT.items()}
    out = {k: v for k, v in data.items() if k not in SECTIONS}
    for section in SECTIONS:
        out |= {where[(section, k)]: v for k, v in data[section].items()}
    return out


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_a_flat_config_is_read_in_sections(path: Path) -> None:
    loaded = EvalConfig.load(path)
    data = loaded.to_dict()
    assert set(FLAT.values()) == {(s, k) for s in SECTIONS for k in data[s]}  # every field
    assert EvalConfig.from_dict(flat_of(data), source_dir=loaded.source_dir) == loaded


def test_a_flat_file_is_read_with_a_note(tmp_path: Path, caplog) -> None:
    path = tmp_path / "flat.yaml"
    path.write_text("num_prompts: 8\ncurve_prompts: 4\nfrontier: []\nquick: {curve_prompts: 2}\n")
    with caplog.at_level(logging.WARNING):
        loaded = EvalConfig.load(path, quick=True)
    assert (loaded.texts.prompts, loaded.curves.prompts, loaded.frontier.cells) == (8, 2, [])
    assert "flat evaluation config" in caplog.text and str(path) in caplog.text


def test_a_file_mixing_flat_keys_and_sections_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text("curve_prompts: 8\ncurves: {attacked: 4}\n")
    with pytest.raises(ValueError, match="'curve_prompts' is a flat key beside section 'curves'"):
        EvalConfig.load(path)


def test_results_of_flat_configs_are_read_in_sections() -> None:
    from evaluation.config_files import sections_of

    old = ROOT / "docs" / "research" / "matched" / "results.json"
    import json

    sections = sections_of(json.loads(old.read_text())["config"])
    assert sections["curves"]["matched_only"] is True and sections["texts"]["prompts"] == 32
    assert sections["models"]["oracle"] == "gemma3-270m"


def test_the_robust_variant_of_the_sentence_runs_is_the_shipped_robust_config() -> None:
    from watermark.config.watermark_config import WatermarkConfig

    robust = WatermarkConfig.load("robust")
    for name, variant in (
        ("sentence-rewrites", "ours-robust-n8k4"),
        ("confirm-sentence", "ours-robust"),
    ):
        loaded = EvalConfig.load(ROOT / f"configs/evaluation/{name}.yaml")
        base = WatermarkConfig.load(loaded.resolve(loaded.models.watermark_config))
        spec = {k: v for k, v in loaded.methods.variants[variant].items() if k != "base"}
        assert evolve(base, **spec) == robust, name
    assert (robust.sentences.bits, robust.sentences.candidates) == (32, 8)
    shipped = flat_view(WatermarkConfig.default())
    changed = {k for k, v in flat_view(robust).items() if v != shipped[k]}
    layer = {"sentence_bits", "sentence_context_bits", "sentence_keying", "sentence_candidates"}
    layer |= {"sentence_test", "resample_every"}
    assert changed - {"mapper_digest", "embedder_digest"} == layer  # the default + the layer
