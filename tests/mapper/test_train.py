"""End-to-end mapper training on a tiny corpus and embedder: CLI, export (never into the
package), shipping, resume, NaN, DDP."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import mapper as mapper_pkg
from mapper.datamodule import MapperDataModule
from mapper.export import export_checkpoint
from mapper.system import MapperSystem
from mapper.train import main
from watermark.config.paths import PACKAGE_DIR
from watermark.models.semantic_mapper import SemanticMapper

ROOT = Path(__file__).resolve().parents[2]


def cli_args(tmp_path: Path, corpus: Path, embedder: Path, epochs: int = 2) -> list[str]:
    """The default config, redirected to tmp_path and shrunk to tiny sizes."""
    override = tmp_path / "override.yaml"
    override.write_text(
        "trainer:\n"
        "  logger:\n"
        "    class_path: lightning.pytorch.loggers.TensorBoardLogger\n"
        f"    init_args: {{save_dir: '{tmp_path / 'runs'}', name: tiny}}\n"
        "  callbacks:\n"
        "    - class_path: lightning.pytorch.callbacks.ModelCheckpoint\n"
        f"      init_args: {{dirpath: '{tmp_path / 'ckpt'}', save_last: true}}\n"
    )
    return [
        "fit",
        "--config",
        str(ROOT / "configs" / "mapper" / "default.yaml"),
        "--config",
        str(override),
        f"--data.corpus={corpus}",
        f"--data.embedder={embedder}",
        f"--data.cache_dir={tmp_path / 'cache'}",
        "--data.batch_size=16",
        "--data.val_pairs=50",
        "--model.hidden_dim=32",
        "--model.output_dim=24",
        "--model.warmup_steps=2",
        f"--trainer.max_epochs={epochs}",
        "--trainer.enable_progress_bar=false",
        f"--export_dir={tmp_path / 'export'}",
    ]


def test_fit_exports_loadable_mapper(tmp_path, tiny_corpus, tiny_embedder_dir, capsys):
    main(cli_args(tmp_path, tiny_corpus, tiny_embedder_dir))
    out = tmp_path / "export"
    mapper = SemanticMapper.from_pretrained(out)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["embedder"] == str(tiny_embedder_dir)
    assert cfg["input_dim"] == 16 and cfg["extra"]["embedder_dim"] == 16
    metrics = cfg["extra"]["metrics"]
    for key in ("val/agree_paraphrase", "simhash/agree_paraphrase", "val/spearman"):
        assert key in metrics
    assert "torch" in cfg["extra"]["versions"]
    assert cfg["extra"]["data"]["corpus"] == str(tiny_corpus)
    # The embedder named in config.json loads and has the mapper's input width.
    embedder = mapper_pkg.load_embedder(cfg["embedder"])
    assert embedder.encode(["a sentence."], convert_to_tensor=True).shape == (1, cfg["input_dim"])
    # The exported mapper reproduces the checkpointed system's outputs.
    ckpt = tmp_path / "ckpt" / "last.ckpt"
    again = SemanticMapper.from_pretrained(export_checkpoint(ckpt, tmp_path / "export2"))
    x = torch.randn(4, 16)
    assert torch.equal(mapper(x), again(x))
    # The center buffer holds the training-embedding mean.
    dm = MapperDataModule(
        str(tiny_corpus), str(tiny_embedder_dir), cache_dir=str(tmp_path / "cache")
    )
    dm.setup("fit")
    assert torch.allclose(mapper.center, dm.center, atol=1e-6)
    summary = capsys.readouterr().out
    assert '"exported"' in summary


def digests(folder: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


def test_training_never_touches_the_shipped_mapper(
    tmp_path, tiny_corpus, tiny_embedder_dir, monkeypatch
):
    shipped = PACKAGE_DIR / "checkpoints"
    before = digests(shipped)
    monkeypatch.chdir(tmp_path)  # the default config exports to runs/mapper-minilm here
    args = [
        a
        for a in cli_args(tmp_path, tiny_corpus, tiny_embedder_dir, epochs=1)
        if not a.startswith("--export_dir")
    ]
    main(args)
    assert (tmp_path / "runs" / "mapper-minilm" / "model.safetensors").is_file()
    assert digests(shipped) == before
    with pytest.raises(ValueError, match="inside the watermark package"):
        main(args + [f"--export_dir={shipped / 'mapper-minilm'}"])
    assert digests(shipped) == before


def test_ship_compares_keeps_the_old_mapper_and_pins_the_new_one(
    tmp_path, tiny_corpus, tiny_embedder_dir
):
    from mapper.ship import ship
    from watermark.core.identity import tensor_digest

    for seed in (1, 2):
        (tmp_path / str(seed)).mkdir()
        main(
            cli_args(tmp_path / str(seed), tiny_corpus, tiny_embedder_dir, epochs=1)
            + [f"--seed_everything={seed}"]
        )
    package = tmp_path / "package"
    shutil.copytree(tmp_path / "1" / "export", package / "checkpoints" / "mapper-minilm")
    (package / "default_config.json").write_text(json.dumps({"mapper_digest": "old"}))
    new_dir = tmp_path / "2" / "export"
    dry = ship(new_dir, yes=False, retired_root=tmp_path / "runs", package_dir=package)
    assert dry["replaced"] is False and 0.0 < dry["sign_agreement"] < 1.0
    assert dry["new"]["digest"] != dry["shipped"]["digest"]
    done = ship(new_dir, yes=True, retired_root=tmp_path / "runs", package_dir=package)
    assert done["replaced"] is True
    shipped = SemanticMapper.from_pretrained(package / "checkpoints" / "mapper-minilm")
    assert tensor_digest(shipped) == done["new"]["digest"]
    retired = SemanticMapper.from_pretrained(done["retired_to"])
    assert tensor_digest(retired) == done["shipped"]["digest"]
    pinned = json.loads((package / "default_config.json").read_text())
    assert pinned["mapper_digest"] == done["new"]["digest"]


def test_resume_continues_from_last_epoch(tmp_path, tiny_corpus, tiny_embedder_dir):
    main(cli_args(tmp_path, tiny_corpus, tiny_embedder_dir, epochs=1))
    first = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True)
    assert first["epoch"] == 0
    main(cli_args(tmp_path, tiny_corpus, tiny_embedder_dir, epochs=2) + ["--ckpt_path=last"])
    second = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=True)
    assert second["epoch"] == 1
    assert second["global_step"] == 2 * first["global_step"]


def test_input_dim_mismatch_is_reported(tmp_path, tiny_corpus, tiny_embedder_dir):
    args = cli_args(tmp_path, tiny_corpus, tiny_embedder_dir)
    # Resuming a 16-d run with a 384-d embedder must fail with a clear message, not a shape error.
    main(args[:1] + args[1:])
    bad = [a for a in args if not a.startswith("--data.embedder")] + ["--data.embedder=minilm"]
    bad += ["--ckpt_path=last"]
    with pytest.raises(Exception, match="16|384"):
        main(bad)


def test_nan_loss_stops_with_message():
    system = MapperSystem(input_dim=4, hidden_dim=8, output_dim=6)
    batch = {
        "u": torch.full((3, 4), float("nan")),
        "u_aug": torch.zeros(0, 4),
        "owner": torch.zeros(0, dtype=torch.long),
    }
    with pytest.raises(FloatingPointError, match="lower --model.lr"):
        system.training_step(batch, 0)


@pytest.mark.slow
def test_ddp_two_cpu_processes(tmp_path, tiny_corpus, tiny_embedder_dir):
    args = cli_args(tmp_path, tiny_corpus, tiny_embedder_dir) + [
        "--trainer.strategy=ddp",
        "--trainer.devices=2",
        "--trainer.accelerator=cpu",
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "mapper.train", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "world_size: 2" in proc.stderr or "MEMBER: 2/2" in proc.stderr
    SemanticMapper.from_pretrained(tmp_path / "export")
