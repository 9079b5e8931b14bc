"""The sentence encoder's fine-tuning (issue 79): a tiny end-to-end run of `python -m mapper.train
--config configs/mapper/encoder.yaml` (text batches, the kept-out rewrite kind, the frozen lower
layers, the figure of merit at the epoch's end, the export of both parts)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from mapper.encoder_data import EncoderDataModule
from mapper.train import main
from tests.mapper.test_sentence_train import write_seeds
from watermark.models.loaders import load_embedder
from watermark.models.semantic_mapper import SemanticMapper

ROOT = Path(__file__).resolve().parents[2]


def test_the_data_keeps_a_rewrite_kind_out_of_training(tmp_path, tiny_corpus, tiny_embedder_dir):
    rewrites, pools = write_seeds(tmp_path)
    dm = EncoderDataModule(
        train_kinds=["forced"],
        rewrites=str(rewrites),
        pools=str(pools),
        corpus=str(tiny_corpus),
        embedder=str(tiny_embedder_dir),
        cache_dir=str(tmp_path / "cache"),
        pools_per_batch=2,
        pairs_per_batch=4,
        sentences_per_batch=4,
    )
    dm.setup("fit")
    assert set(dm.splits["train"].kinds) == {"forced"}
    assert {"forced", "round_trip"} <= set(dm.splits["val"].kinds)  # validation reads both
    batch = next(iter(dm.train_dataloader()))
    rows = torch.cat([batch["rows_a"], batch["rows_b"], batch["rows_pool"], batch["rows"]])
    assert all(dm.texts[i] for i in rows.tolist()) and len(batch["pool"]) == len(batch["rows_pool"])
    assert "Never. Read." not in dm.texts  # the held-out row is never read


def test_a_tiny_encoder_run_trains_the_top_layers_and_exports_both_parts(
    tmp_path, tiny_corpus, tiny_embedder_dir, capsys
) -> None:
    rewrites, pools = write_seeds(tmp_path)
    override = tmp_path / "override.yaml"
    override.write_text(
        "trainer:\n  logger: false\n  callbacks: []\n  enable_checkpointing: false\n"
        f"  default_root_dir: '{tmp_path}'\n"  # where the CLI saves its config.yaml
    )
    main(
        [
            "--config",
            str(ROOT / "configs" / "mapper" / "encoder.yaml"),
            "--config",
            str(override),
            f"--data.rewrites={rewrites}",
            f"--data.pools={pools}",
            f"--data.corpus={tiny_corpus}",
            f"--data.embedder={tiny_embedder_dir}",
            f"--data.cache_dir={tmp_path / 'cache'}",
            f"--model.encoder={tiny_embedder_dir}",
            "--model.train_layers=1",
            "--model.encoder_lr=0.01",
            "--data.train_kinds=[forced]",
            "--data.pools_per_batch=2",
            "--data.pairs_per_batch=8",
            "--data.sentences_per_batch=8",
            "--data.steps_per_epoch=4",
            "--model.hidden_dim=32",
            "--model.output_dim=48",
            "--model.warmup_steps=1",
            "--model.metric_keys=2",
            "--trainer.max_epochs=1",
            "--model.init_from=null",
            "--model.fom_candidates=4",
            "--trainer.enable_progress_bar=false",
            f"--export_dir={tmp_path / 'export'}",
        ]
    )
    assert '"exported"' in capsys.readouterr().out
    mapper = SemanticMapper.from_pretrained(tmp_path / "export")
    metrics = json.loads((tmp_path / "export" / "config.json").read_text())["extra"]["metrics"]
    assert mapper.config.input_dim == 16
    assert {"val/fom_z", "val/fom_z_after", "val/agree_round_trip_keyed"} <= set(metrics)
    assert 0 < metrics["val/fom_z_after"] < metrics["val/fom_z"]
    encoder = load_embedder(str(tmp_path / "export" / "encoder"))
    assert encoder.encode(["One sentence."]).shape == (1, 16)
    before = load_file(next((tiny_embedder_dir / "").rglob("model.safetensors")))
    after = load_file(next((tmp_path / "export" / "encoder").rglob("model.safetensors")))
    moved = [k for k in before if not torch.equal(before[k], after[k])]
    assert moved and all("encoder.layer.0." in k for k in moved), moved  # only the top layer
