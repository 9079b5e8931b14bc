"""Tests for WatermarkConfig: JSON round trip, rule strengths, defaults (watermark.core.config)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from watermark.core.config import WatermarkConfig, default_of, field_names, user_fields
from watermark.core.paths import PACKAGE_DIR
from watermark.core.semantic_mapper import SemanticMapper

ROOT = Path(__file__).resolve().parents[3]


def test_config_json_roundtrip_and_secrets_hidden(tmp_path: Path) -> None:
    cfg = WatermarkConfig.of(
        key="s3cret", opening_sentence="hidden words", alpha=1.5, scaling="paper"
    )
    path = cfg.save(tmp_path / "wm.json")
    loaded = WatermarkConfig.load(path)
    assert loaded == cfg and loaded.source == str(path.resolve())
    assert "s3cret" not in repr(loaded) and "hidden words" not in repr(loaded)
    with pytest.raises(ValueError, match="unknown watermark config keys"):
        WatermarkConfig.from_dict({**cfg.to_dict(), "alhpa": 2})
    with pytest.raises(ValueError, match="scaling"):
        WatermarkConfig.of(scaling="linear", opening_sentence="x")


def test_config_rule_strengths_and_range_checks() -> None:
    base = WatermarkConfig.of(opening_sentence="x", scaling="additive", bias=3.0, filter_first=True)
    assert base.strength == 3.0
    assert WatermarkConfig.of(opening_sentence="x", scaling="tournament", layers=4).strength == 4
    assert WatermarkConfig.of(opening_sentence="x", scaling="paper", delta=0.5).strength == 0.5
    # the biasing rules read one green list whatever ``layers`` says (the tournament's strength)
    assert replace(base, layers=8).green_lists == 1
    assert WatermarkConfig.of(opening_sentence="x", scaling="tournament", layers=4).green_lists == 4
    for bad, match in (
        ({"layers": 0}, "layers"),
        ({"bias": -1.0}, "bias"),
        ({"context_guard": -1}, "context_guard"),
    ):
        with pytest.raises(ValueError, match=match):
            WatermarkConfig.of(opening_sentence="x", **bad)


def test_default_config_points_at_the_packaged_mapper(tmp_path: Path, monkeypatch) -> None:
    cfg = WatermarkConfig.default()
    assert cfg.mapper == "checkpoints/mapper-minilm" and cfg.generator == "smollm2-135m"
    assert (cfg.alpha, cfg.delta, cfg.opening_steps, cfg.top_k, cfg.top_p) == (2, 1.5, 0, 50, 0.9)
    assert cfg.embed_window == 32
    # 0.2.0: the tournament over 6 lists, each mapper output counted once (0.1: additive, bias 2)
    assert (cfg.scaling, cfg.layers, cfg.temperature) == ("tournament", 6, 1.02)
    assert (cfg.context_guard, cfg.outputs_once) == (4, True)
    assert (cfg.filter_first, cfg.fresh_only, cfg.repeats) == (True, True, "bigram")
    # the dataclass defaults are the shipped rule (secrets and paths aside)
    plain = WatermarkConfig.of(opening_sentence="x")
    rule = (
        "scaling",
        "bias",
        "delta",
        "layers",
        "filter_first",
        "context_guard",
        "fresh_only",
        "temperature",
        "repeats",
        "outputs_once",
    )
    assert all(getattr(plain, f) == getattr(cfg, f) for f in rule)
    monkeypatch.chdir(tmp_path)  # resolution does not depend on the working directory
    expected = PACKAGE_DIR / "checkpoints" / "mapper-minilm"  # package data of `watermark`
    assert cfg.mapper_dir() == plain.mapper_dir() == expected.resolve()
    shipped = SemanticMapper.from_pretrained(cfg.mapper_dir())  # fails if the files are missing
    assert shipped.config.input_dim == 384  # MiniLM, the default embedder
    missing = WatermarkConfig.of(mapper="checkpoints/no-such-mapper", opening_sentence="x")
    with pytest.raises(FileNotFoundError, match="no-such-mapper"):
        missing.mapper_dir()
    # a relative path next to a user's config file wins
    (tmp_path / "cfgdir" / "my-mapper").mkdir(parents=True)
    user = WatermarkConfig.of(mapper="my-mapper", opening_sentence="x").save(
        tmp_path / "cfgdir" / "c.json"
    )
    assert WatermarkConfig.load(user).mapper_dir() == (tmp_path / "cfgdir" / "my-mapper").resolve()


def test_dataclass_defaults_are_the_shipped_default() -> None:
    from watermark.core.identity import expected_digest

    shipped, plain = WatermarkConfig.default(), WatermarkConfig()
    pins = {"mapper_digest": None, "embedder_digest": None}
    assert plain == replace(shipped, **pins)
    assert plain.to_dict() == {**shipped.to_dict(), **pins}
    # the unpinned defaults are held to the shipped pins (the parts they name are the shipped)
    for part in ("mapper", "embedder"):
        assert expected_digest(plain, part, by_name=True) == getattr(shipped, f"{part}_digest")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"alpha": "two"}, "alpha must be float or int, got 'two'"),
        ({"opening_steps": 2.5}, "opening_steps must be int"),
        ({"fresh_only": 1}, "fresh_only must be bool"),
        ({"top_k": True}, "top_k must be int"),
        ({"vocab_size": "49152"}, "vocab_size must be int or null"),
        ({"mapper": None}, "mapper must be str"),
        ({"allowed_scripts": "LATIN"}, "allowed_scripts must be list"),
        ({"allowed_scripts": []}, "allowed_scripts must be a non-empty list"),
        ({"embed_batch_size": 0}, "embed_batch_size must be >= 1"),
        ({"vocab_size": 0}, "vocab_size must be >= 1"),
        ({"delta": -1.0}, "delta must be > 0"),
        ({"bias": 0.0}, "bias must be > 0"),
        ({"layers": 0}, "layers must be >= 1"),
        ({"repeats": "pairs"}, "repeats must be one of"),
        ({"repeats": "bigram", "fresh_only": False}, "repeats='bigram' needs fresh_only"),
        ({"repeats": "bigram", "null_model": "mm"}, "repeats='bigram' needs fresh_only"),
    ],
)
def test_types_and_ranges_are_checked_when_read(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WatermarkConfig.of(**change)


def test_load_names_the_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        WatermarkConfig.load(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{\n "alpha": 2.0,\n "delta": oops\n}')
    with pytest.raises(ValueError, match=r"bad.json:3: not valid JSON"):
        WatermarkConfig.load(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        WatermarkConfig.load(bad)
    bad.write_text('{"alpha": "two"}')
    with pytest.raises(ValueError, match=r"bad.json: invalid watermark config: alpha"):
        WatermarkConfig.load(bad)


def test_a_rule_config_without_the_later_rule_fields_warns(tmp_path: Path, caplog) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"scaling": "additive", "bias": 2.0}))
    with caplog.at_level("WARNING", logger="watermark.core.config"):
        cfg = WatermarkConfig.load(old)
    assert (cfg.temperature, cfg.repeats) == (default_of("temperature"), default_of("repeats"))
    assert "temperature, context_guard, repeats, outputs_once" in caplog.text
    assert "repeats='neutral'" in caplog.text and "outputs_once=False" in caplog.text
    caplog.clear()
    full = WatermarkConfig.load(ROOT / "configs" / "watermark-additive.json")  # 0.1's default
    assert (full.scaling, full.bias, full.temperature) == ("additive", 2, 1.0)
    assert (full.context_guard, full.repeats, full.outputs_once) == (0, "neutral", False)
    assert caplog.text == ""


def test_a_config_is_frozen_and_replace_checks_again() -> None:
    import dataclasses

    cfg = WatermarkConfig.of(opening_sentence="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.alpha = 3.0  # type: ignore[misc]
    assert replace(cfg, alpha=3.0).alpha == 3.0 and cfg.alpha == 2.0
    with pytest.raises(ValueError, match="layers"):
        replace(cfg, layers=0)


def test_a_user_sets_21_fields_in_sections_and_the_design_only_where_it_differs(
    tmp_path: Path,
) -> None:
    shipped = WatermarkConfig.default()
    data = shipped.sections()
    assert list(data) == ["models", "keys", "scheme", "detection", "runtime"]  # no design
    assert sum(len(part) for part in data.values()) == len(user_fields()) <= 21
    assert set(field_names()) == set(shipped.to_dict())  # the flat view holds every field
    old = WatermarkConfig.load(ROOT / "configs" / "watermark-0.4.json")  # flat, as in 0.4
    assert old.sections()["design"] == {"neutral": "half", "loop_penalty": 0.0}
    again = WatermarkConfig.load(old.save(tmp_path / "nested.json"))
    assert again == old and again.to_dict() == old.to_dict()  # same digests and fingerprint
    with pytest.raises(ValueError, match="unknown keys \\['alpha'\\] in section 'models'"):
        WatermarkConfig.from_dict({"models": {"alpha": 2.0}})
    with pytest.raises(
        ValueError, match="unknown design keys \\['temperature'\\] in section 'design'"
    ):
        WatermarkConfig.from_dict({"design": {"temperature": 1.0}})


def test_evolve_routes_flat_names_to_the_design() -> None:
    cfg = WatermarkConfig.of(opening_sentence="x")
    changed = cfg.evolve(context_guard=0, alpha=3.0)
    assert (changed.context_guard, changed.design.context_guard, changed.alpha) == (0, 0, 3.0)
    assert cfg.context_guard == 4  # unchanged
    with pytest.raises(ValueError, match="unknown watermark config keys \\['alhpa'\\]"):
        cfg.evolve(alhpa=1.0)
    with pytest.raises(ValueError, match="context_guard must be >= 0"):
        cfg.evolve(context_guard=-1)
    with pytest.raises(AttributeError):
        cfg.no_such_field  # noqa: B018
