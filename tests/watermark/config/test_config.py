"""Tests for WatermarkConfig: sections, rule classes, checks, the upgrade of earlier formats and
the files that are refused (watermark.config: watermark_config, sections, files, schemes)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers import flat_fields
from watermark.base import UserError
from watermark.config.files import SECTIONS
from watermark.config.paths import PACKAGE_DIR
from watermark.config.schemes import Additive, Paper, Tournament
from watermark.config.sections import Sentences
from watermark.config.shipped import shipped_path
from watermark.config.watermark_config import WatermarkConfig, defaults, secret_fields
from watermark.models.semantic_mapper import SemanticMapper

ROOT = Path(__file__).resolve().parents[3]


def test_config_json_roundtrip_and_secrets_hidden(tmp_path: Path) -> None:
    cfg = WatermarkConfig.of(key="s3cret", opening_sentence="hidden words", alpha=1.5, rule="paper")
    path = cfg.save(tmp_path / "wm.json")
    loaded = WatermarkConfig.load(path)
    assert loaded == cfg and loaded.source == str(path.resolve())
    assert "s3cret" not in repr(loaded) and "hidden words" not in repr(loaded)
    assert set(secret_fields()) == {"key", "old_keys", "opening_sentence"}
    with pytest.raises(ValueError, match="unknown watermark config key 'alhpa'"):
        WatermarkConfig.from_dict({**flat_fields(cfg), "alhpa": 2})
    with pytest.raises(ValueError, match="rule must be one of"):
        WatermarkConfig.of(rule="linear")


def test_one_class_per_rule_with_its_own_strength_and_checks() -> None:
    additive = WatermarkConfig.of(rule="additive", bias=3.0, filter_first=True)
    assert isinstance(additive.scheme, Additive) and additive.scheme.strength == 3.0
    assert additive.green_lists == 1  # a biasing rule reads one green list
    tournament = WatermarkConfig.of(rule="tournament", layers=4)
    assert isinstance(tournament.scheme, Tournament) and tournament.green_lists == 4
    paper = WatermarkConfig.of(rule="paper", delta=0.5)
    assert isinstance(paper.scheme, Paper) and paper.scheme.strength == 0.5
    assert not hasattr(paper.scheme, "layers") and not hasattr(additive.scheme, "delta")
    # only the rule's own strength is checked: a tournament holds no bias to be wrong
    assert Tournament().validate() == [] and Additive(bias=-1.0).validate() != []
    for bad, match in (
        ({"layers": 0}, "layers must be >= 1"),
        ({"rule": "additive", "bias": -1.0}, "bias must be > 0"),
        ({"rule": "paper", "delta": 0.0}, "delta must be > 0"),
        ({"context_guard": -1}, "context_guard must be >= 0"),
    ):
        with pytest.raises(ValueError, match=match):
            WatermarkConfig.of(**bad)


def test_default_config_is_the_dataclass_defaults_and_points_at_the_packaged_mapper(
    tmp_path: Path, monkeypatch
) -> None:
    from watermark.core.identity import expected_digest

    cfg, plain = WatermarkConfig.default(), WatermarkConfig()
    assert (cfg.models.mapper, cfg.models.generator) == (
        "checkpoints/mapper-minilm",
        "smollm2-135m",
    )
    scheme = cfg.scheme
    assert (scheme.rule, scheme.layers, scheme.temperature, scheme.alpha) == (
        "tournament",
        6,
        1.02,
        2,
    )
    assert (scheme.context_guard, scheme.fresh_only, scheme.repeats) == (4, True, "bigram")
    assert (cfg.models.embed_window, cfg.detection.outputs_once, cfg.sentences.on) == (
        32,
        True,
        False,
    )
    pins = {"mapper_digest": None, "embedder_digest": None}
    assert plain == replace(cfg, models=replace(cfg.models, **pins))
    assert (
        flat_fields(plain)
        == {**flat_fields(cfg), **pins}
        == {
            **{k: v for k, v in defaults().items() if k not in ("bias", "delta")},  # not its rule's
            "scaling": "tournament",
        }
    )
    for part in ("mapper", "embedder"):  # the unpinned defaults are held to the shipped pins
        assert expected_digest(plain, part, by_name=True) == getattr(cfg.models, f"{part}_digest")
    monkeypatch.chdir(tmp_path)  # resolution does not depend on the working directory
    expected = PACKAGE_DIR / "checkpoints" / "mapper-minilm"
    assert cfg.mapper_dir() == plain.mapper_dir() == expected.resolve()
    assert SemanticMapper.from_pretrained(cfg.mapper_dir()).config.input_dim == 384
    with pytest.raises(FileNotFoundError, match="no-such-mapper"):
        WatermarkConfig.of(mapper="checkpoints/no-such-mapper").mapper_dir()
    (tmp_path / "cfgdir" / "my-mapper").mkdir(parents=True)  # next to a user's config wins
    user = WatermarkConfig.of(mapper="my-mapper").save(tmp_path / "cfgdir" / "c.json")
    assert WatermarkConfig.load(user).mapper_dir() == (tmp_path / "cfgdir" / "my-mapper").resolve()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"alpha": "two"}, "scheme.alpha must be float or int, got 'two'"),
        ({"opening_steps": 2.5}, "opening_steps must be int"),
        ({"fresh_only": 1}, "fresh_only must be bool"),
        ({"top_k": True}, "top_k must be int"),
        ({"vocab_size": "49152"}, "models.vocab_size must be int or null"),
        ({"mapper": None}, "mapper must be str"),
        ({"allowed_scripts": "LATIN"}, "allowed_scripts must be list"),
        ({"allowed_scripts": []}, "allowed_scripts must be a non-empty list"),
        ({"embed_batch_size": 0}, "embed_batch_size must be >= 1"),
        ({"vocab_size": 0}, "vocab_size must be >= 1"),
        ({"repeats": "pairs"}, "repeats must be one of"),
        ({"repeats": "bigram", "fresh_only": False}, "repeats='bigram' needs scheme.fresh_only"),
        ({"unique_tokens": False}, "fresh_only needs detection.unique_tokens"),
        ({"keying": "next"}, "sentences.keying must be one of"),
        ({"context_bits": 9}, "context_bits must be in 0..8"),
        ({"key": ""}, "keys.key must be a non-empty string"),
        ({"key": 7}, "keys.key must be str, got int"),  # a secret's value is never shown
    ],
)
def test_types_and_ranges_are_checked_when_read(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        WatermarkConfig.of(**change)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"sentences.choice": "best"}, "sentences.choice must be one of"),
        ({"sentences.weight_power": 5}, r"sentences.weight_power must be one of \(1, 2, 3, 4\)"),
        ({"sentences.weight_power": 1.5}, "weight_power must be int"),
    ],
)
def test_the_sentence_choice_and_weight_power_are_checked(setting: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WatermarkConfig.default().with_settings(setting)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a flat key beside sections (it used to be dropped in favour of the section's)
        ('{"alpha": 3.0, "scheme": {"alpha": 2.0}}', "key 'alpha' stands beside the sections"),
        ('{"scheme": {"alpha": 2.0, "alpha": 3.0}}', "key 'alpha' is named twice"),
        ('{"alpha": 2.0, "alpha": 3.0}', "key 'alpha' is named twice"),
        ('{"shceme": {"alpha": 2.0}, "models": {}}', "unknown section 'shceme'"),
        ('{"shceme": {"alpha": 2.0}}', "unknown section 'shceme'"),
        ('{"models": {"alpha": 2.0}}', "unknown key 'alpha' in section 'models'"),
        ('{"scheme": {"rule": "tournament", "bias": 3.0}}', "not a setting of rule 'tournament'"),
        ('{"scheme": {"rule": "floor"}}', "rule must be one of"),
        ('{"scaling": "floor"}', "removed in 0.8"),
        ('{"rule": "additive"}', "unknown watermark config key 'rule'"),  # flat files: scaling
        ('{"null_model": "mm"}', "null_model='mm' is no longer supported"),
        ('{"token_map": "identity"}', "token_map='identity' is no longer supported"),
        (
            '{"scheme": {"scaling": "additive"}, "models": {"alpha": 1.0}}',
            "'alpha' does not belong",
        ),
        ('{"scheme": 3}', "section 'scheme' must be a JSON object"),
        ('{"sentences": {"bits": -1}}', "sentences.bits >= 0"),
    ],
)
def test_a_file_that_would_lie_is_refused_with_one_line(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message) as err:
        WatermarkConfig.load(write(tmp_path, text))
    assert "\n" not in str(err.value) and str(tmp_path) in str(err.value)


def test_load_names_the_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        WatermarkConfig.load(tmp_path / "none.json")
    with pytest.raises(ValueError, match=r"c.json:3: not valid JSON"):
        WatermarkConfig.load(write(tmp_path, '{\n "alpha": 2.0,\n "delta": oops\n}'))
    with pytest.raises(ValueError, match="JSON object"):
        WatermarkConfig.load(write(tmp_path, "[1, 2]"))
    with pytest.raises(ValueError, match=r"c.json: invalid watermark config: scheme.alpha"):
        WatermarkConfig.load(write(tmp_path, '{"alpha": "two"}'))


def test_earlier_formats_upgrade_to_the_same_config(tmp_path: Path) -> None:
    """A flat file (0.1-0.4, keygen before 0.8), a sectioned file of 0.5-0.7 with its design
    section and every rule's strength, and today's sections give one config."""
    flat = {"scaling": "additive", "bias": 3.0, "delta": 1.5, "layers": 1, "alpha": 1.5,
            "neutral": "half", "token_map": "keyed", "null_model": "vocab", "window_sizes": [],
            "sentence_bits": 16, "sentence_candidates": 8, "temperature": 1.0,
            "context_guard": 0, "repeats": "neutral", "outputs_once": False}  # fmt: skip
    old = {
        "scheme": {"scaling": "additive", "bias": 3.0, "delta": 1.5, "layers": 1, "alpha": 1.5,
                   "sentence_bits": 16, "temperature": 1.0},
        "detection": {"window_sizes": []},
        "design": {"neutral": "half", "sentence_candidates": 8, "context_guard": 0,
                   "repeats": "neutral", "outputs_once": False},
    }  # fmt: skip
    new = {
        "scheme": {"rule": "additive", "bias": 3.0, "alpha": 1.5, "neutral": "half",
                   "temperature": 1.0, "context_guard": 0, "repeats": "neutral"},
        "sentences": {"bits": 16, "candidates": 8},
        "detection": {"window_sizes": [], "outputs_once": False},
    }  # fmt: skip
    configs = [WatermarkConfig.load(write(tmp_path, json.dumps(d))) for d in (flat, old, new)]
    assert configs[0] == configs[1] == configs[2]
    cfg = configs[0]
    assert (cfg.scheme.bias, cfg.sentences.bits, cfg.sentences.candidates) == (3.0, 16, 8)
    again = WatermarkConfig.load(cfg.save(tmp_path / "saved.json"))
    assert again == cfg and list(json.loads((tmp_path / "saved.json").read_text())) == list(
        SECTIONS
    )
    WatermarkConfig.load(ROOT / "configs" / "watermark-0.4.json")  # the flat files keep loading
    for name in ("paper", "additive"):
        WatermarkConfig.load(name)


def test_the_robust_setting_is_user_sections_only() -> None:
    data = json.loads(shipped_path("robust").read_text())
    assert set(data) == {"sentences"} and "design" not in data
    cfg = WatermarkConfig.load("robust")
    assert cfg.sentences == Sentences(
        bits=32, candidates=8, context_bits=2, keying="own", resample_every=4, test="margin"
    )


def test_a_rule_config_without_the_later_rule_fields_warns(tmp_path: Path, caplog) -> None:
    with caplog.at_level("WARNING", logger="watermark.config"):
        cfg = WatermarkConfig.load(
            write(tmp_path, json.dumps({"scaling": "additive", "bias": 2.0}))
        )
    assert (cfg.scheme.temperature, cfg.scheme.repeats) == (1.02, "bigram")
    assert "temperature, context_guard, repeats, outputs_once" in caplog.text
    assert "repeats='neutral'" in caplog.text and "outputs_once=False" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="watermark.config"):
        full = WatermarkConfig.load("additive")  # 0.1's default
    assert (full.scheme.rule, full.scheme.bias, full.scheme.temperature) == ("additive", 2, 1.0)
    assert (full.scheme.context_guard, full.detection.outputs_once) == (0, False)
    assert caplog.text == ""


def test_a_config_is_frozen_and_evolve_routes_flat_names_and_checks_again() -> None:
    cfg = WatermarkConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.scheme.alpha = 3.0  # type: ignore[misc]
    changed = cfg.evolve(context_guard=0, alpha=3.0, bits=8, target_fpr=0.05)
    assert (changed.scheme.context_guard, changed.scheme.alpha) == (0, 3.0)
    assert (changed.sentences.bits, changed.detection.target_fpr) == (8, 0.05)
    assert cfg.scheme.context_guard == 4  # unchanged
    assert isinstance(cfg.evolve(rule="additive").scheme, Additive)  # a rule's default strength
    with pytest.raises(ValueError, match="unknown watermark config key 'alhpa'"):
        cfg.evolve(alhpa=1.0)
    with pytest.raises(ValueError, match="unknown watermark config key 'scaling'"):
        cfg.evolve(scaling="additive")  # the rule is ``rule``; ``scaling`` only in old files
    with pytest.raises(ValueError, match="context_guard must be >= 0"):
        cfg.evolve(context_guard=-1)
    with pytest.raises(ValueError, match="layers"):
        replace(cfg, scheme=Tournament(layers=0))
    with pytest.raises(AttributeError):
        cfg.alpha  # noqa: B018  (no flat names on the config itself)


def test_no_api_drops_a_setting_the_rule_does_not_have(tmp_path: Path) -> None:
    """evolve, of and with_settings refuse another rule's strength with one line; switching
    the rule takes the new rule's default strength; only a complete save of 0.1-0.7 (the rule
    and every rule's strength) may carry the strengths it never used."""
    base = WatermarkConfig()
    for make, name in (
        (lambda: base.evolve(delta=9.0), "delta"),
        (lambda: WatermarkConfig.of(bias=5.0), "bias"),
        (lambda: base.with_settings({"scheme.delta": 2}), "delta"),
        (lambda: base.evolve(rule="additive", delta=1.0), "delta"),
        (lambda: base.with_settings({"scheme.rule": "paper", "scheme.layers": 2}), "layers"),
    ):
        with pytest.raises(UserError, match=f"scheme.{name} is not a setting of rule") as err:
            make()
        assert "\n" not in str(err.value)
    assert base.evolve(rule="paper").scheme == Paper()
    assert base.with_settings({"scheme.rule": "paper"}).scheme == Paper()
    assert base.with_settings({"scheme.alpha": 3.0}) == base.evolve(alpha=3.0)
    complete = {"scaling": "additive", "bias": 3.0, "delta": 9.0, "layers": 4}
    assert WatermarkConfig.load(write(tmp_path, json.dumps(complete))).scheme == Additive(bias=3.0)
    partial = {"scaling": "additive", "bias": 3.0, "delta": 9.0}
    with pytest.raises(UserError, match="scheme.delta is not a setting of rule 'additive'"):
        WatermarkConfig.load(write(tmp_path, json.dumps(partial)))


FORMATS = ROOT / "tests" / "watermark" / "config" / "formats"  # files the versions shipped
MODELS = {
    "generator": "smollm2-135m",
    "measurement_model": "smollm2-135m",
    "embedder": "minilm",
    "mapper": "checkpoints/mapper-minilm",
}
STEPS = {  # each file: the steps its upgrade runs, and today's sections it means
    "config-0.2.json": (
        ["from_0_4", "from_0_8"],
        {"scheme": {"rule": "tournament", "layers": 6, "context_guard": 4},
         "models": {**MODELS, "mm_window": 2048, "embed_window": 32},
         "detection": {"window_sizes": [128, 256], "outputs_once": True}},
    ),
    "config-0.7.json": (
        ["from_0_7", "from_0_4", "from_0_8"],
        {"scheme": {"rule": "tournament", "layers": 6, "temperature": 1.02},
         "models": MODELS, "sentences": {"bits": 0},
         "detection": {"window_sizes": [128, 256]}},
    ),
    "config-0.8.json": (
        ["from_0_8"],
        {"scheme": {"rule": "tournament", "layers": 6, "loop_penalty": 0.5},
         "models": MODELS, "sentences": {"bits": 0, "candidates": 4, "resample_every": 0},
         "detection": {"window_sizes": [128, 256], "outputs_once": True}},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_earlier_format_loads_through_its_own_steps(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file each version shipped (its default config) loads through the upgrade steps from
    its format on, in order, to the config its fields say in today's sections."""
    from watermark.config import files

    steps, today = STEPS[name]
    ran = []
    for step in ("from_0_4", "from_0_7", "from_0_8"):
        real = getattr(files, step)
        monkeypatch.setattr(files, step, lambda d, s=step, f=real: ran.append(s) or f(d))
    cfg = WatermarkConfig.load(FORMATS / name)
    assert ran == steps
    expected = WatermarkConfig.from_dict(today)
    for section, part in today.items():
        for field, value in part.items():
            assert getattr(getattr(cfg, section), field) == value
    assert cfg.scheme == replace(
        expected.scheme,
        **{
            f: getattr(cfg.scheme, f)
            for f in (
                "neutral",
                "loop_penalty",
                "filter_first",
                "fresh_only",
                "repeats",
                "opening_steps",
            )
        },
    )
    assert WatermarkConfig.from_dict(cfg.sections()) == cfg  # saved today, read as today's
    with pytest.raises(ValueError, match="0.9 removed the setting 'stop_at'"):
        files.from_0_8({"sentences": {"stop_at": 1.5}})
