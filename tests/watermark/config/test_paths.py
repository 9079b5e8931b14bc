"""Tests for the one path rule (watermark.config.paths): config folder, cwd, package, repository
root."""

from __future__ import annotations

from pathlib import Path

import watermark.config.paths as paths
from watermark.config.paths import DEFAULT_MAPPER, PACKAGE_DIR, REPO_ROOT, resolve_path


def test_rule_order_and_pass_through(tmp_path: Path, monkeypatch) -> None:
    config_dir, cwd = tmp_path / "cfg", tmp_path / "cwd"
    for folder in (config_dir / "m", cwd / "m", cwd / "only-cwd", cwd / "checkpoints" / "x"):
        folder.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    assert resolve_path("m", config_dir) == str((config_dir / "m").resolve())  # config first
    assert resolve_path("m") == str((cwd / "m").resolve())  # then the current directory
    assert resolve_path("only-cwd", config_dir) == str((cwd / "only-cwd").resolve())
    packaged = resolve_path(DEFAULT_MAPPER, config_dir)  # then the installed package
    assert packaged == str((PACKAGE_DIR / DEFAULT_MAPPER).resolve())
    repo = resolve_path("data/corpus", config_dir)  # then the root of a clone
    assert repo == str((REPO_ROOT / "data/corpus").resolve())
    assert resolve_path("smollm2-135m", config_dir) == "smollm2-135m"  # short names unchanged
    assert resolve_path("org/model") == "org/model"  # hub ids unchanged
    assert resolve_path(str(tmp_path / "new")) == str(tmp_path / "new")  # absolute kept
    assert resolve_path("~/x").startswith(str(Path.home()))


def test_package_dir_comes_from_importlib_resources_and_holds_the_mapper() -> None:
    from importlib.resources import files

    shipped = files("watermark").joinpath(DEFAULT_MAPPER)
    assert Path(str(shipped)) == PACKAGE_DIR / DEFAULT_MAPPER
    assert shipped.joinpath("config.json").is_file()
    assert shipped.joinpath("model.safetensors").is_file()


def test_repository_root_is_searched_only_from_a_clone(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert paths.in_clone() and paths.search_dirs()[-1] == REPO_ROOT
    fake_site = tmp_path / "site-packages"  # an installed wheel: no pyproject.toml beside it
    monkeypatch.setattr(paths, "REPO_ROOT", fake_site)
    assert not paths.in_clone()
    assert paths.search_dirs() == [tmp_path, PACKAGE_DIR]
    assert resolve_path("data/corpus") == "data/corpus"


def test_mapper_datamodule_finds_the_corpus_outside_the_repository(tmp_path, monkeypatch):
    from mapper.datamodule import MapperDataModule

    monkeypatch.chdir(tmp_path)
    dm = MapperDataModule(corpus="data/corpus/sentences.jsonl.gz", max_train_sentences=10)
    records = dm._records()
    assert records and dm.corpus == "data/corpus/sentences.jsonl.gz"  # hparams keep the name
