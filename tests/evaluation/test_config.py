"""Tests for EvalConfig validation errors (evaluation.config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.config import EvalConfig
from evaluation.config_fields import evolve, flat_view


def test_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("num_prompt: 3\n")
    with pytest.raises(ValueError, match="unknown keys"):
        EvalConfig.load(path)
    with pytest.raises(ValueError, match="unknown methods"):
        EvalConfig(methods=["kgw9"])
    with pytest.raises(ValueError, match="unknown methods"):
        EvalConfig(curve_methods=["ours-x"])
    with pytest.raises(ValueError, match="clash"):
        EvalConfig(variants={"kgw1": {"alpha": 0.0}})
    with pytest.raises(ValueError, match="unknown watermark config fields"):
        EvalConfig(variants={"ours-x": {"alpah": 0.0}}, curve_methods=["ours-x"])
    EvalConfig(variants={"ours-x": {"alpha": 0.0}}, curve_methods=["ours-x"])  # accepted
    EvalConfig(variants={"k": {"base": "kgw1", "kgw_delta": 1.0}}, curve_methods=["k"])
    with pytest.raises(ValueError, match="base 'kgw9'"):
        EvalConfig(variants={"k": {"base": "kgw9"}})
    with pytest.raises(ValueError, match="sets kgw_gamma / kgw_delta, not \\['alpha'\\]"):
        EvalConfig(variants={"k": {"base": "kgw1", "alpha": 0.0}})
    with pytest.raises(ValueError, match="unknown watermark config fields"):
        EvalConfig(ablations={"mapper": ["m", {"mapper": "m", "embeder": "mpnet"}]})
    with pytest.raises(ValueError, match="bad attack"):
        EvalConfig(attacks=[{"kind": "rewrite", "strength": 1}])
    with pytest.raises(ValueError, match=r"curve_also_against \['kgw1'\] are not in curve_m"):
        EvalConfig(curve_methods=["ours"], curve_baseline="kgw1")
    with pytest.raises(ValueError, match=r"curve_also_against \['synthid'\] are not"):
        EvalConfig(curve_methods=["ours"], curve_also_against=["synthid"])
    EvalConfig(curve_methods=["ours"], curve_baseline="kgw1", curve_rows_from=["r.json"])
    with pytest.raises(ValueError, match="oracle"):
        EvalConfig(oracle="smollm2-135m")
    with pytest.raises(ValueError, match="device must be cpu, cuda, cuda:N or auto"):
        EvalConfig(device="gpu")
    for device in ("cpu", "cuda", "cuda:1", "auto"):
        EvalConfig(device=device)


def test_set_overrides_keys_as_yaml_and_rejects_unknown_ones(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("num_prompts: 3\ncurve_methods: [ours]\nquick: {num_prompts: 2}\n")
    cfg = EvalConfig.load(path, quick=True, overrides=["num_prompts=5", "curve_methods=[kgw1]"])
    assert cfg.num_prompts == 5 and cfg.curve_methods == ["kgw1"]  # --set wins over quick
    for bad in ("num_prompt=5", "num_prompts", "quick={}"):
        with pytest.raises(ValueError, match="--set"):
            EvalConfig.load(path, overrides=[bad])


def test_key_values_reads_each_value_as_yaml() -> None:
    from evaluation.config import key_values

    got = key_values(["loop_penalty=0", "repeat_rule=keep", "sizes=[1, 2]", "x = 0.5"])
    assert got == {"loop_penalty": 0, "repeat_rule": "keep", "sizes": [1, 2], "x": 0.5}
    for bad in ("loop_penalty", "=1"):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            key_values([bad])


def test_the_robust_variant_of_the_sentence_runs_is_the_shipped_robust_config() -> None:
    from watermark.config.watermark_config import WatermarkConfig

    root = Path(__file__).resolve().parents[2]
    robust = WatermarkConfig.load("robust")
    for name, variant in (
        ("sentence-rewrites", "ours-robust-n8k4"),
        ("confirm-sentence", "ours-robust"),
    ):
        cfg = EvalConfig.load(root / f"configs/evaluation/{name}.yaml")
        base = WatermarkConfig.load(cfg.resolve(cfg.watermark_config))
        spec = {k: v for k, v in cfg.variants[variant].items() if k != "base"}
        assert evolve(base, **spec) == robust, name
    assert (robust.sentences.bits, robust.sentences.candidates) == (32, 8)
    shipped = flat_view(WatermarkConfig.default())
    changed = {k for k, v in flat_view(robust).items() if v != shipped[k]}
    layer = {"sentence_bits", "sentence_context_bits", "sentence_keying", "sentence_candidates"}
    layer |= {"sentence_test", "resample_every"}
    assert changed - {"mapper_digest", "embedder_digest"} == layer  # the default + the layer
