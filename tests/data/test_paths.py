"""Tests for the one path rule (data.paths): config folder, then cwd, then repository root."""

from __future__ import annotations

from pathlib import Path

from data.paths import REPO_ROOT, resolve_path


def test_rule_order_and_pass_through(tmp_path: Path, monkeypatch) -> None:
    config_dir, cwd = tmp_path / "cfg", tmp_path / "cwd"
    for folder in (config_dir / "m", cwd / "m", cwd / "only-cwd"):
        folder.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    assert resolve_path("m", config_dir) == str((config_dir / "m").resolve())  # config first
    assert resolve_path("m") == str((cwd / "m").resolve())  # then the current directory
    assert resolve_path("only-cwd", config_dir) == str((cwd / "only-cwd").resolve())
    repo = resolve_path("checkpoints/mapper-minilm", config_dir)  # then the repository root
    assert repo == str((REPO_ROOT / "checkpoints/mapper-minilm").resolve())
    assert resolve_path("smollm2-135m", config_dir) == "smollm2-135m"  # short names unchanged
    assert resolve_path("org/model") == "org/model"  # hub ids unchanged
    assert resolve_path(str(tmp_path / "new")) == str(tmp_path / "new")  # absolute kept
    assert resolve_path("~/x").startswith(str(Path.home()))


def test_mapper_datamodule_finds_the_corpus_outside_the_repository(tmp_path, monkeypatch):
    from mapper.datamodule import MapperDataModule

    monkeypatch.chdir(tmp_path)
    dm = MapperDataModule(corpus="data/corpus/sentences.jsonl.gz", max_train_sentences=10)
    records = dm._records()
    assert records and dm.corpus == "data/corpus/sentences.jsonl.gz"  # hparams keep the name
