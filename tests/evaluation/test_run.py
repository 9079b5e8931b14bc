"""End-to-end ``--quick`` evaluation run on tiny random models: report, cache, resume."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
import yaml

from evaluation.config import EvalConfig
from evaluation.metrics import detection_metrics, median
from evaluation.run import Evaluation
from tests.helpers import WORDS, tiny_llama, tiny_mapper, word_tokenizer


def _tiny_setup(root: Path, tiny_embedder_dir: Path) -> Path:
    words = WORDS + [w.capitalize() for w in WORDS if w.isalpha()]
    tok = word_tokenizer(words)
    tok.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    for name, seed in (("gen", 0), ("oracle", 1)):
        tiny_llama(len(tok), seed=seed).save_pretrained(root / name)
        tok.save_pretrained(root / name)
    tiny_mapper(16, 24).save_pretrained(root / "mapper")
    from watermark.config.watermark_config import WatermarkConfig

    WatermarkConfig.of(
        mapper="mapper",
        generator="gen",
        measurement_model="gen",
        embedder=str(tiny_embedder_dir),
        key="k",
        opening_sentence="River city.",
        alpha=1.0,
        opening_steps=3,
        top_k=10,  # guard off: alpha 0 opens every step
        context_guard=0,
    ).save(root / "wm.json")
    rng = random.Random(0)
    with gzip.open(root / "heldout.jsonl.gz", "wt") as f:
        for d in range(6):
            sents = [
                " ".join([rng.choice(WORDS[:40]).capitalize()] + rng.choices(WORDS[:60], k=9))
                + " ."
                for _ in range(6)
            ]
            rec = {"doc": f"d{d}", "source": "news" if d % 2 else "wiki", "text": " ".join(sents)}
            f.write(json.dumps(rec) + "\n")
    cfg = {
        "name": "tiny",
        "out_dir": str(root / "out"),
        "models": {
            "watermark_config": "wm.json",
            "generator": "gen",
            "oracle": "oracle",
            "paraphraser": "gen",
            "similarity_embedder": str(tiny_embedder_dir),
        },
        "texts": {
            "heldout": "heldout.jsonl.gz",
            "prompts": 6,
            "human_tokens": 24,
            "new_tokens": 30,
            "min_new_tokens": 20,
            "batch_size": 4,
        },
        "methods": {
            "kgw_delta": 4.0,
            "synthid_layers": 4,
            "synthid_ngram_len": 3,
            "variants": {
                "ours-a0": {"alpha": 0.0},
                "kgw0-d1": {"base": "kgw0", "kgw_delta": 1.0},
            },
        },
        "table": {
            "attacks": [
                {"kind": k, "strength": 0.3}
                for k in ("deletion", "synonym", "paraphrase", "copy_paste")
            ],
            "paraphrase_limit": 2,
        },
        "spoofing": {"texts": 4, "tokens": 16, "steal_texts": 4, "steal_prompts": 2},
        "curves": {
            "prompts": 4,
            "attacked": 2,
            "negatives": 6,
            "methods": ["unwatermarked", "ours", "kgw0", "ours-a0", "kgw0-d1"],
            "attacks": [
                {"kind": "paraphrase", "strength": 1.0, "passes": 2},
                {"kind": "paraphrase_synonym", "strength": 0.5},
            ],
        },
        "frontier": {
            "prompts": 4,
            "baselines": ["unwatermarked", "kgw1", "synthid"],
            "cells": [
                {"scaling": "additive", "bias": [1.0, 3.0]},
                {"scaling": "tournament", "layers": 2, "filter_first": True, "context_guard": 2},
            ],
        },
        "quick": {
            "texts": {"prompts": 4},
            "table": {"green_share_texts": 2},
            "ablations": {
                "prompts": 4,
                "vary": {"alpha": [0.0, 1.0], "layers": [2, {"layers": 1, "alpha": 0.0}]},
                "attack": {"kind": "deletion", "strength": 0.3},
            },
        },
    }
    (root / "eval.yaml").write_text(yaml.safe_dump(cfg))
    return root / "eval.yaml"


@pytest.mark.slow  # every stage end to end (about 2.5 min on 2 cores)
def test_quick_run_on_tiny_models_writes_report_and_resumes(
    tmp_path: Path, tiny_embedder_dir: Path, capsys
) -> None:
    from evaluation.__main__ import main

    config = _tiny_setup(tmp_path, tiny_embedder_dir)
    capsys.readouterr()  # the set-up's own output
    assert main(["--config", str(config), "--quick", "--no-progress"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert "it/s]" not in captured.err and "text/s]" not in captured.err  # no progress bars
    out = tmp_path / "out"
    results = json.loads((out / "results.json").read_text())
    assert results["units"] == 4 and set(results["methods"]) == {
        "unwatermarked",
        "ours",
        "kgw0",
        "kgw1",
        "kgw2",
    }
    ours = results["methods"]["ours"]
    assert set(ours["attacks"]) == {
        "none",
        "deletion@0.3",
        "synonym@0.3",
        "paraphrase@0.3",
        "copy_paste@0.3",
    }
    assert ours["attacks"]["paraphrase@0.3"]["positives"] == 2  # paraphrase_limit
    assert 0 <= ours["attacks"]["none"]["roc_auc"] <= 1 and len(ours["human_z"]) == 4
    for res in results["methods"].values():  # the stored metrics follow from the stored z-scores
        for att in res.get("attacks", {}).values():
            again = detection_metrics(att["z"], res["human_z"])
            assert att["roc_auc"] == pytest.approx(again["roc_auc"])
            assert att["tpr@1%fpr"] == pytest.approx(again["tpr@1%fpr"])
    assert 0 <= ours["green_share_all_tokens"] <= 1
    assert [r["value"] for r in results["ablations"]["alpha"]] == [0.0, 1.0]
    assert results["ablations"]["alpha"][0]["awr"] == 1.0  # alpha 0 gates every step
    assert 0 <= results["ablations"]["layers"][0]["attack_roc_auc"] <= 1
    both = results["ablations"]["layers"][1]  # a dict value sets both fields
    assert both["value"] == {"layers": 1, "alpha": 0.0} and both["awr"] == 1.0
    assert set(results["spoofing"]) >= {"kgw0", "kgw1", "kgw2", "ours", "ours_opening"}
    curves = results["curves"]["rows"]
    assert [(r["method"], r["attack"]) for r in curves] == [("unwatermarked", "none")] + [
        (m, a)
        for m in ("ours", "kgw0", "ours-a0", "kgw0-d1")
        for a in ("none", "paraphrase@1.0x2", "paraphrase_synonym@0.5")
    ]
    assert "roc_auc" not in curves[0] and curves[0]["ppl_median"] > 0  # the quality reference
    assert all(r["ppl_median"] > 0 and 0 <= r["rep4"] <= 1 for r in curves if r["attack"] == "none")
    assert [r["family"] for r in curves[1::3]] == ["ours", "kgw0", "ours", "kgw0"]
    ev = Evaluation(EvalConfig.load(config, quick=True), progress=False)
    variant = ev.method("ours-a0")  # its own config, hence its own cache entries
    assert variant.wm.config.scheme.alpha == 0.0 and variant.key != ev.method("ours").key
    kgw = ev.method("kgw0-d1")  # a KGW variant: the base method at the variant's strength
    assert (kgw.name, kgw.delta, kgw.lists.context) == ("kgw0", 1.0, 0)
    assert kgw.key != ev.method("kgw0").key
    curves = curves[1:]
    assert all(0 <= r["words_kept"] <= 1 and -1 <= r["similarity"] <= 1.0001 for r in curves)
    assert all(r["positives"] == (4 if r["attack"] == "none" else 2) for r in curves)
    assert all(r["negatives"] == 6 for r in curves if "roc_auc" in r)  # 2 beyond the 4 prompts
    assert all(0 <= r["tpr@p<0.01"] <= 1 and 0 <= r["fpr@p<0.01"] <= 1 for r in curves)
    steal = results["stealing"]
    assert (steal["steal_texts"], steal["spoof_texts"]) == (4, 2)
    for name in ("kgw0", "kgw1", "ours"):
        assert steal[name]["best"] == max(steal[name]["width0"], steal[name]["width1"])
    rows = results["frontier"]["rows"]
    assert [r["label"] for r in rows] == [
        "Unwatermarked",
        "KGW-1",
        "SynthID-Text",
        "additive, bias=1.0",
        "additive, bias=3.0",
        "tournament, layers=2, filter first, guard=2",
    ]
    assert "detected@p<0.01" not in rows[0] and results["frontier"]["prompts"] == 4
    for r in rows[1:]:
        assert 0 <= r["detected@p<0.01"] <= 1 and 0 <= r["fpr@p<0.01"] <= 1 and r["rep4"] >= 0
    # the frontier's first units are the main table's: same generations, read from the cache
    assert rows[0]["ppl_median"] == pytest.approx(
        median(results["methods"]["unwatermarked"]["quality"]["ppl"])
    )
    detections = [json.loads(x)["key"] for x in (out / "cache/detections.jsonl").open()]
    ours_keys = {k.split("|")[0] for k in detections if k.startswith("ours-det-")}
    # the main config (6 lists); both additive cells share one (one list); the guarded
    # 2-list cell; alpha 0 (the ablations' and ours-a0's gate); the layers ablation's 2 lists
    # and its one list at alpha 0
    assert len(ours_keys) == 6
    report = (out / "report.md").read_text()
    assert "| Ours (adaptive) |" in report and "## Security (spoofing)" in report
    assert "## Quality / power frontier (4 prompts)" in report
    for png in (
        "roc_none.png",
        "roc_paraphrase_0.3.png",
        "ppl_box.png",
        "frontier_ppl.png",
        "frontier_rep4.png",
    ):
        assert (out / png).stat().st_size > 1000 and f"]({png})" in report
    assert summary["report"] == str(out / "report.md")
    # a second run computes nothing new: every cache table keeps its size
    sizes = {p.name: p.stat().st_size for p in (out / "cache").glob("*.jsonl")}
    assert main(["--config", str(config), "--quick", "--no-progress"]) == 0
    assert {p.name: p.stat().st_size for p in (out / "cache").glob("*.jsonl")} == sizes
    assert (
        json.loads((out / "results.json").read_text())["methods"]["ours"]["attacks"]
        == (ours["attacks"])
    )


def test_generations_read_from_the_cache_whichever_device_made_them(
    tmp_path: Path, tiny_embedder_dir: Path, monkeypatch
) -> None:
    import torch

    from watermark.base import UserError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config = _tiny_setup(tmp_path, tiny_embedder_dir)
    with pytest.raises(UserError, match="CUDA is not available"):
        Evaluation(EvalConfig.load(config, overrides=["models.device=cuda"]), progress=False)
    ev = Evaluation(EvalConfig.load(config, overrides=["models.device=auto"]), progress=False)
    units = ev.units[:4]  # one batch
    made = ev.generations(ev.method("ours"), units, new_tokens=6)
    assert {g["device"] for g in made} == {"cpu"}
    # what a CUDA machine would have written under the same keys
    table = ev.store.table("generations")
    ev.store.put("generations", [{**r, "text": "on cuda", "device": "cuda"} for r in made])
    again = Evaluation(EvalConfig.load(config), progress=False)
    found = again.generations(again.method("ours"), units, new_tokens=6)
    assert [(g["text"], g["device"]) for g in found] == [("on cuda", "cuda")] * 4
    assert len(table) == 4
    # truncate: the first share of the generator's tokens
    texts = [g["text"] for g in made]
    cut = again.attacker.attacked({"kind": "truncate", "strength": 0.5}, texts, texts)
    for text, short in zip(texts, cut):
        ids = again.tokenizer(text, add_special_tokens=False).input_ids
        assert (
            again.tokenizer(short, add_special_tokens=False).input_ids == ids[: round(len(ids) / 2)]
        )


def test_generate_only_fills_the_generation_cache_and_stops(
    tmp_path: Path, tiny_embedder_dir: Path, capsys, monkeypatch
) -> None:
    import torch

    from evaluation.__main__ import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    config = str(_tiny_setup(tmp_path, tiny_embedder_dir))
    small = ["--set", "table.methods=[ours, kgw1]", "--set", "curves.methods=[ours, ours-a0]"]
    capsys.readouterr()
    assert main(["--config", config, "--generate-only", "--no-progress", *small]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["generated"] == {"ours": 6, "kgw1": 6, "curves ours": 4, "curves ours-a0": 4}
    assert summary["device"] == "cpu"
    out = tmp_path / "out"
    assert not (out / "results.json").exists()  # nothing but the generations
    assert {p.name for p in (out / "cache").glob("*.jsonl")} == {"generations.jsonl"}
    lines = (out / "cache/generations.jsonl").read_text().splitlines()
    assert len(lines) == 6 + 6 + 4  # the curves' ours shares the main run's first 4 prompts
    argv = [
        "--config",
        config,
        "--generate-only",
        "--no-progress",
        *small,
        "--set",
        "models.device=cuda",
    ]
    assert main(argv) == 2  # no CUDA here
    assert "error: device 'cuda': CUDA is not available" in capsys.readouterr().err
    # the cache saved as a seed serves a fresh checkout: nothing is generated again
    seed = tmp_path / "seed"
    assert main(["--config", config, "--save-cache-seed", str(seed)]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == {"generations": 16}
    fresh = ["--out", str(tmp_path / "fresh"), "--set", f"cache_seeds=[{seed}]"]
    assert main(["--config", config, "--generate-only", "--no-progress", *small, *fresh]) == 0
    assert json.loads(capsys.readouterr().out)["generated"]["curves ours-a0"] == 4
    assert not (tmp_path / "fresh/cache/generations.jsonl").exists()
