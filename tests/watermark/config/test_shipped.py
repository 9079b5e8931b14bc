"""The configs shipped by name (watermark.config.shipped): loaded by name wherever a path is
taken, a file of that name wins, an unknown name lists the names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from watermark.config.paths import PACKAGE_DIR
from watermark.config.shipped import SHIPPED, find_config, shipped_path
from watermark.config.watermark_config import WatermarkConfig, as_config


def test_every_shipped_name_loads_from_the_package_without_a_warning(caplog) -> None:
    assert SHIPPED == ("default", "robust", "paper", "additive")
    with caplog.at_level("WARNING", logger="watermark.config"):
        found = {name: WatermarkConfig.load(name) for name in SHIPPED}
    assert caplog.text == ""  # no "names a rule but not ..." for a shipped file
    for name, cfg in found.items():
        assert cfg.source == str(PACKAGE_DIR / f"{name}_config.json")
        assert cfg == WatermarkConfig.load(shipped_path(name))  # the same as by path
    assert found["default"] == WatermarkConfig.default() == as_config("default")
    assert found["robust"].sentences.bits > 0 and found["default"].sentences.bits == 0
    assert (found["paper"].scheme.rule, found["additive"].scheme.rule) == ("paper", "additive")


def test_a_file_of_that_name_wins_and_says_so(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.chdir(tmp_path)
    Path("robust").write_text(json.dumps({"scheme": {"alpha": 3.0}}))
    with caplog.at_level("WARNING", logger="watermark.config"):
        cfg = WatermarkConfig.load("robust")
    assert cfg.scheme.alpha == 3.0 and cfg.sentences.bits == 0  # the file, not the shipped one
    assert "not the shipped config 'robust'" in caplog.text
    Path("paper.json").write_text(json.dumps({"scheme": {"alpha": 2.5}}))
    assert WatermarkConfig.load("paper").scheme.rule == "paper"  # paper.json is another name
    assert find_config("paper.json") == Path("paper.json")


def test_an_unknown_name_lists_the_shipped_ones(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="default, robust, paper, additive") as err:
        WatermarkConfig.load("robst")
    assert str(err.value).count("\n") == 0
    with pytest.raises(FileNotFoundError, match="ships it by name: 'robust'"):
        WatermarkConfig.load("configs/watermark-robust.json")  # where 0.10 kept it


def test_the_command_line_takes_a_name(capsys) -> None:
    from watermark.app.cli import main

    assert main(["detect", "--config", "robst", "--text", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: watermark config robst not found") and "robust" in err


def test_an_unknown_section_lists_the_sections(tmp_path: Path) -> None:
    path = tmp_path / "typo.json"
    path.write_text(json.dumps({"sentence": {"bits": 32}}))
    with pytest.raises(ValueError, match="unknown section 'sentence'; known: models, keys, "):
        WatermarkConfig.load(path)
