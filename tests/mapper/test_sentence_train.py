"""The sentence mapper: its loss terms and metrics on hand values, and a tiny end-to-end run of
`python -m mapper.train --config configs/mapper/sentence.yaml` (data module, every term and
metric logged, export)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
import torch

from mapper import losses
from mapper.sentence_metrics import keys, pool_spread, rewrite_agreement, unrelated_agreement
from mapper.sentence_system import SentenceMapperSystem
from mapper.train import main
from tests.helpers import RECORD_WORDS, make_records
from watermark.models.semantic_mapper import SemanticMapper

ROOT = Path(__file__).resolve().parents[2]


def test_stability_and_spread_terms_on_hand_values() -> None:
    same = torch.tensor([[1.0, -1.0], [0.5, 0.5]])
    assert losses.stability_loss(same.sign(), same.sign()) == 0.0  # full margin, kept
    assert losses.stability_loss(same.sign(), -same.sign()) == 2.0  # every sign flipped
    assert losses.stability_loss(same * 0.0, same) == 1.0  # no margin at all
    split = torch.tensor([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [1.0, -1.0]])
    pool = torch.tensor([0, 0, 1, 1])
    # pool 0 splits both outputs (mean 0); pool 1 agrees on both (mean +-1)
    assert losses.pool_spread_loss(split, pool) == pytest.approx(0.5)
    assert losses.pool_spread_loss(split[:2], pool[:2]) == 0.0


def test_metrics_on_hand_values() -> None:
    v = torch.tensor([[3.0, -1.0, 0.1, -0.2], [1.0, 1.0, -1.0, 1.0]])
    w = torch.tensor([[2.0, 1.0, 0.3, 0.2], [1.0, 1.0, -1.0, 1.0]])  # row 0: 2 of 4 flip
    found = rewrite_agreement(v, w)
    assert found["all"] == pytest.approx(6 / 8) and found["pairs"] == 2
    assert found["bin_2-inf"] == 1.0  # the margin of 3 / 1.075 kept its sign
    assert unrelated_agreement(v, w)["unrelated"] == pytest.approx(0.75)
    gen = torch.Generator().manual_seed(0)
    tested = keys(64, 4, bits=8, context_bits=1)
    apart = [torch.randn(32, 64, generator=gen) for _ in range(6)]  # candidates that spread
    alike = [torch.randn(1, 64, generator=gen).repeat(32, 1) + 0.01 * p for p in apart]
    unrelated = torch.randn(256, 64, generator=gen)
    spread, same = pool_spread(apart, unrelated, tested), pool_spread(alike, unrelated, tested)
    assert spread["hit_rate"] > same["hit_rate"] and spread["score_z"] > same["score_z"] + 1
    assert spread["lean"] < 0.3 < 0.9 < same["lean"]


def write_seeds(root: Path) -> tuple[Path, Path]:
    """Tiny rewrite and pool seeds over the synthetic corpus's train / val documents."""
    rng, by_doc = random.Random(0), {}
    for r in make_records():
        by_doc.setdefault(r["doc"], []).append(r)
    rewrites, pools = [], []
    for doc, rows in by_doc.items():
        split = rows[0]["split"]
        text = " ".join(r["text"] for r in rows[:3])
        swapped = " ".join(
            " ".join(reversed(r["text"][:-1].split())).capitalize() + "." for r in rows[:3]
        )
        row = {"id": doc, "doc": doc, "source": "news", "split": split, "text": text}
        row.update(rewrite=swapped, similarity=0.9, facts_kept=1.0)
        rewrites += [{**row, "kind": kind} for kind in ("forced", "round_trip")]
        for k in range(2):
            candidates = [
                " ".join(rng.sample(RECORD_WORDS, 8)).capitalize() + "." for _ in range(6)
            ]
            pools.append(
                {
                    "id": f"{doc}:{k}",
                    "doc": doc,
                    "split": split,
                    "prefix": rows[0]["text"],
                    "next": rows[1]["text"],
                    "candidates": candidates + [None],
                }
            )
    rewrites.append({**rewrites[0], "split": "heldout", "text": "Never. Read.", "rewrite": "No."})
    paths = (root / "rewrites.jsonl.gz", root / "pools.jsonl.gz")
    for path, rows in zip(paths, (rewrites, pools)):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    return paths


def test_a_tiny_sentence_run_logs_every_term_and_metric_and_exports(
    tmp_path, tiny_corpus, tiny_embedder_dir, capsys
) -> None:
    rewrites, pools = write_seeds(tmp_path)
    override = tmp_path / "override.yaml"
    override.write_text(
        "trainer:\n  logger:\n    class_path: lightning.pytorch.loggers.CSVLogger\n"
        f"    init_args: {{save_dir: '{tmp_path / 'runs'}', name: tiny}}\n"
        "  callbacks: []\n  enable_checkpointing: false\n"
    )
    main(
        [
            "--config",
            str(ROOT / "configs" / "mapper" / "sentence.yaml"),
            "--config",
            str(override),
            f"--data.rewrites={rewrites}",
            f"--data.pools={pools}",
            f"--data.corpus={tiny_corpus}",
            f"--data.embedder={tiny_embedder_dir}",
            f"--data.cache_dir={tmp_path / 'cache'}",
            "--data.pools_per_batch=2",
            "--data.pairs_per_batch=8",
            "--data.sentences_per_batch=16",
            "--data.steps_per_epoch=10",
            "--model.hidden_dim=32",
            "--model.output_dim=48",
            "--model.warmup_steps=2",
            "--model.metric_keys=2",
            "--trainer.max_epochs=2",
            "--model.init_from=null",
            "--trainer.enable_progress_bar=false",
            f"--export_dir={tmp_path / 'export'}",
        ]
    )
    mapper = SemanticMapper.from_pretrained(tmp_path / "export")
    config = json.loads((tmp_path / "export" / "config.json").read_text())
    assert mapper.config.input_dim == 16 and config["extra"]["training"]["w_spread"] == 0.5
    metrics = config["extra"]["metrics"]
    names = ["agree_forced_all", "agree_round_trip_keyed", "agree_paraphrase_all", "unrelated"]
    names += ["spread_hit_rate", "spread_score_z", "spread_lean"]
    assert all(f"val/{name}" in metrics for name in names), sorted(metrics)
    logged = (next((tmp_path / "runs" / "tiny").rglob("metrics.csv"))).read_text().splitlines()[0]
    for term in ("stability", "spread", "sentence", "dimension", "distance", "decorrelation"):
        assert f"val/{term}" in logged and f"train/{term}" in logged
    assert '"exported"' in capsys.readouterr().out
    sizes = {"input_dim": 16, "hidden_dim": 32, "output_dim": 48}
    started = SentenceMapperSystem(**sizes, init_from=str(tmp_path / "export")).mapper
    assert all(torch.equal(a, b) for a, b in zip(started.parameters(), mapper.parameters()))
    ship_the_sentence_mapper(tmp_path / "export", tmp_path)


def ship_the_sentence_mapper(export: Path, root: Path) -> None:
    """`python -m mapper.ship --sentence`: a dry run touches nothing; with --yes the mapper lands
    in the package's checkpoints and the config names it and its digest."""
    from mapper.ship import SENTENCE_MAPPER, ship_sentence
    from watermark.core.identity import tensor_digest

    package, config = root / "package", root / "robust.json"
    config.write_text(json.dumps({"sentences": {"bits": 32, "candidates": 32}}))
    dry = ship_sentence(export, config, yes=False, package_dir=package)
    assert dry["replaced"] is False and not package.exists()
    done = ship_sentence(export, config, yes=True, package_dir=package)
    shipped = SemanticMapper.from_pretrained(package / SENTENCE_MAPPER)
    section = json.loads(config.read_text())["sentences"]
    assert done["replaced"] and tensor_digest(shipped) == done["new"] == section["mapper_digest"]
    assert section["mapper"] == SENTENCE_MAPPER and section["bits"] == 32
    assert ship_sentence(export, config, yes=True, package_dir=package)["replaced"] is False
    config.write_text(json.dumps({"scheme": {"alpha": 2.0}}))
    with pytest.raises(ValueError, match="no section 'sentences'"):
        ship_sentence(export, config, yes=True, package_dir=package)
