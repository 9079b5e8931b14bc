"""Evaluation harness: metric code against hand-computed values, attacks, baselines, spoofing
counts, the resumable cache, and the whole ``--quick`` path on tiny random models."""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter
from pathlib import Path

import pytest
import torch
import yaml

from tests.test_watermark_support import WORDS, tiny_llama, tiny_mapper, word_tokenizer
from watermark.evaluate import attacks
from watermark.evaluate.config import EvalConfig
from watermark.evaluate.frontier import (
    cell_label,
    distinct_n,
    expand_cells,
    human_threshold,
    rule_label,
)
from watermark.evaluate.methods import KGWGreenLists, KGWMethod, kgw_z, normal_sf
from watermark.evaluate.metrics import (
    best_f1,
    detection_metrics,
    median,
    ngram_repetition,
    tpr_at_fpr,
)
from watermark.evaluate.security import decryption_rate, follower_counts, most_common_context
from watermark.evaluate.store import Store
from watermark.evaluate.synthid import SynthIDMethod

POS, NEG = [0.9, 0.8, 0.4], [0.5, 0.3, 0.2]


def test_detection_metrics_by_hand() -> None:
    m = detection_metrics(POS, NEG)
    assert m["roc_auc"] == pytest.approx(8 / 9)  # 8 of 9 (pos, neg) pairs ordered
    # thresholds: >= 0.8 -> P 1, R 2/3, F1 0.8; >= 0.4 -> P 3/4, R 1, F1 6/7
    assert best_f1(POS, NEG) == pytest.approx(6 / 7)
    assert m["tpr@1%fpr"] == pytest.approx(2 / 3)  # no false positive allowed: cut above 0.5
    assert tpr_at_fpr(POS, NEG, 0.34) == pytest.approx(1.0)  # one of three negatives allowed
    assert detection_metrics([2.0, 3.0], [0.0, 1.0])["tpr@10%fpr"] == 1.0
    with pytest.raises(ValueError):
        detection_metrics([], NEG)


def test_repetition_and_medians_by_hand() -> None:
    assert ngram_repetition([1, 2, 1, 2, 1, 2], 2) == pytest.approx(1 - 2 / 5)
    assert ngram_repetition([1, 2, 3], 4) == 0.0
    assert ngram_repetition([5, 5, 5, 5], 1) == pytest.approx(0.75)
    assert median([3.0, 1.0, float("nan"), 2.0, 10.0]) == pytest.approx(2.5)


def test_kgw_statistics_and_green_lists() -> None:
    assert kgw_z(75, 100, 0.5) == pytest.approx(5.0)
    assert normal_sf(0.0) == pytest.approx(0.5) and normal_sf(1.6448536) == pytest.approx(0.05)
    lists = KGWGreenLists(1000, 0.5, key=7, context=2)
    a, b = lists.mask([1, 2, 3]), lists.mask([9, 2, 3])
    assert int(a.sum()) == 500 and torch.equal(a, b)  # only the last two ids matter
    assert not torch.equal(a, lists.mask([2, 4]))
    fixed = KGWGreenLists(1000, 0.5, key=7, context=0)
    assert torch.equal(fixed.mask([1]), fixed.mask([5, 6, 7]))
    assert not torch.equal(fixed.mask([]), KGWGreenLists(1000, 0.5, key=8, context=0).mask([]))


def test_transformers_lefthash_ignores_all_but_the_last_token() -> None:
    """Why KGW-2 is ours: transformers' lefthash seeds with input_seq[-1] whatever the width."""
    from transformers.generation.logits_process import WatermarkLogitsProcessor

    proc = WatermarkLogitsProcessor(500, "cpu", greenlist_ratio=0.5, context_width=2)
    one = proc._get_greenlist_ids(torch.tensor([11, 42]))
    other = proc._get_greenlist_ids(torch.tensor([99, 42]))
    assert torch.equal(torch.sort(one).values, torch.sort(other).values)


def test_kgw_generation_is_detected_and_text_without_it_is_not() -> None:
    tok = word_tokenizer()
    model = tiny_llama(len(tok), seed=3)
    from watermark.generation import generate

    for name, context in (("kgw0", 0), ("kgw2", 2)):
        method = KGWMethod(name, tok, len(tok), 0.5, 6.0, key=5, context=context)
        outs = generate(model, tok, ["river city", "the bank"], method.processor(),
                        max_new_tokens=60, top_k=20, seed=0, min_new_tokens=50)  # fmt: skip
        marked = method.detect([o.text for o in outs])
        plain = method.detect([" ".join(random.Random(i).choices(WORDS, k=60)) for i in range(3)])
        assert all(d["z"] > 3 for d in marked), (name, marked)
        assert all(abs(d["z"]) < 3 for d in plain)
        # z recomputed by hand from the green lists over distinct (context, token) units
        ids = tok(outs[0].text, add_special_tokens=False)["input_ids"]
        units = {tuple(ids[i - context : i + 1]) for i in range(context, len(ids))}
        green = sum(bool(method.green_mask(u[:-1])[u[-1]]) for u in units)
        assert marked[0]["z"] == pytest.approx(kgw_z(green, len(units), 0.5))


def test_synthid_generation_is_detected_and_text_without_it_is_not() -> None:
    tok = word_tokenizer()
    model = tiny_llama(len(tok), seed=3)
    from watermark.generation import generate

    method = SynthIDMethod(list(range(101, 121)), 3, tok, top_k=40, top_p=1.0)
    proc = method.processor()
    assert proc.applies_sampling_filters  # the tournament acts on the filtered distribution
    outs = generate(model, tok, ["river city", "the bank"], proc, max_new_tokens=150, top_k=40,
                    seed=0, min_new_tokens=140)  # fmt: skip
    marked = method.detect([o.text for o in outs])
    plain = method.detect([" ".join(random.Random(i).choices(WORDS, k=150)) for i in range(3)])
    assert all(d["score"] > 0.53 and d["z"] > 3 for d in marked), marked
    assert all(abs(d["z"]) < 3 for d in plain)
    # score = mean g-value over the non-repeated contexts and all layers
    inner = method.config.construct_processor(vocab_size=0, device="cpu")
    x = torch.tensor([[0, 0] + tok(outs[0].text, add_special_tokens=False)["input_ids"]])
    keep = inner.compute_context_repetition_mask(x)[0].bool()
    g = inner.compute_g_values(x)[0][keep]
    assert marked[0]["score"] == pytest.approx(float(g.double().mean()))
    assert marked[0]["num_scored"] == int(keep.sum())


def test_frontier_helpers() -> None:
    cells = expand_cells(
        [
            {"scaling": "additive", "bias": [1.0, 2.0], "context_guard": [0, 4]},
            {"scaling": "tournament", "layers": 2, "filter_first": True},
        ]
    )
    assert len(cells) == 5 and cells[1] == {"scaling": "additive", "bias": 1.0, "context_guard": 4}
    assert cell_label(cells[0]) == "additive, bias=1.0"
    assert cell_label(cells[1]) == "additive, bias=1.0, guard=4"
    assert cell_label(cells[4]) == "tournament, layers=2, filter first"
    wm = {"scaling": "tournament", "layers": 30, "bias": 2.0, "delta": 1.5, "filter_first": True,
          "context_guard": 4, "fresh_only": False}  # fmt: skip
    assert rule_label(wm) == "tournament, layers=30, filter first, guard=4"
    assert rule_label({**wm, "scaling": "additive", "fresh_only": True}) == (
        "additive, bias=2.0, filter first, guard=4, fresh only"
    )
    assert distinct_n([[1, 2, 1, 2], [1, 2, 3]]) == pytest.approx(3 / 5)  # (1,2) (2,1) (2,3)
    scores = [float(i) for i in range(100)]
    assert human_threshold(scores) == 98.0  # one of 100 (1%) lies above
    assert human_threshold(scores[:10]) == 9.0  # too few texts: nothing may lie above


def test_attacks() -> None:
    text = " " + " ".join(f"w{i}" for i in range(20))
    out = attacks.delete_words(text, 0.25, seed=1)
    assert len(out.split()) == 15 and set(out.split()) <= set(text.split())
    assert out == attacks.delete_words(text, 0.25, seed=1)
    human = " ".join(f"h{i}" for i in range(40))
    mixed = attacks.copy_paste(text, human, 0.5, seed=0).split()
    assert len(mixed) == 20 and mixed.count("w0") == 1
    assert sum(w.startswith("w") for w in mixed) == 10  # the first half of the marked text
    start = mixed.index("w0")
    assert mixed[start : start + 10] == [f"w{i}" for i in range(10)]

    class Swap:  # a stand-in thesaurus: swaps every "storm" for "tempest"
        def variants(self, sentence, rng, rate):
            return [sentence.replace("storm", "tempest")] if "storm" in sentence else []

    swapped = attacks.substitute_synonyms(" The storm came. It rained.", 0.5, Swap())
    assert swapped == " The tempest came. It rained."


def test_spoofing_counts_by_hand() -> None:
    ids = [[1, 5, 1, 6, 1, 5], [2, 1, 5]]
    assert follower_counts(ids, [1]) == Counter({5: 3, 6: 1})
    assert follower_counts(ids, []) == Counter({1: 4, 5: 3, 6: 1, 2: 1})
    assert most_common_context(ids, 1) == [1] and most_common_context(ids, 0) == []
    green = torch.zeros(10, dtype=torch.bool)
    green[[5, 2]] = True
    # common = {1, 2, 5, 6, 7}; seen: 1 (4), 5 (3), 2 (1), 6 (1); top 3 = 1, 5, then 2 (ties by id)
    rate, size = decryption_rate(follower_counts(ids, []), [1, 2, 5, 6, 7], green, top=3)
    assert size == 3 and rate == pytest.approx(2 / 3)
    assert decryption_rate(Counter(), [1], green, 3)[1] == 0


def test_store_resumes_and_ignores_a_cut_line(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.put("t", [{"key": "a", "v": 1}, {"key": "b", "v": 2}])
    with (tmp_path / "t.jsonl").open("a") as f:
        f.write('{"key": "c", "v"')  # killed mid-write
    again = Store(tmp_path).table("t")
    assert sorted(again) == ["a", "b"] and again["b"]["v"] == 2


def test_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("num_prompt: 3\n")
    with pytest.raises(ValueError, match="unknown keys"):
        EvalConfig.load(path)
    with pytest.raises(ValueError, match="unknown methods"):
        EvalConfig(methods=["kgw9"])
    with pytest.raises(ValueError, match="bad attack"):
        EvalConfig(attacks=[{"kind": "rewrite", "strength": 1}])
    with pytest.raises(ValueError, match="oracle"):
        EvalConfig(oracle="smollm2-135m")


def _tiny_setup(root: Path, tiny_embedder_dir: Path) -> Path:
    words = WORDS + [w.capitalize() for w in WORDS if w.isalpha()]
    tok = word_tokenizer(words)
    tok.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    for name, seed in (("gen", 0), ("oracle", 1)):
        tiny_llama(len(tok), seed=seed).save_pretrained(root / name)
        tok.save_pretrained(root / name)
    tiny_mapper(16, 24).save_pretrained(root / "mapper")
    from watermark.config import WatermarkConfig

    WatermarkConfig(mapper="mapper", generator="gen", measurement_model="gen",
                    embedder=str(tiny_embedder_dir), key="k", opening_sentence="River city.",
                    alpha=1.0, opening_steps=3, top_k=10).save(root / "wm.json")  # fmt: skip
    rng = random.Random(0)
    with gzip.open(root / "heldout.jsonl.gz", "wt") as f:
        for d in range(6):
            sents = [" ".join([rng.choice(WORDS[:40]).capitalize()] + rng.choices(WORDS[:60], k=9))
                     + " ." for _ in range(6)]  # fmt: skip
            rec = {"doc": f"d{d}", "source": "news" if d % 2 else "wiki", "text": " ".join(sents)}
            f.write(json.dumps(rec) + "\n")
    cfg = {
        "name": "tiny", "out_dir": str(root / "out"), "watermark_config": "wm.json",
        "generator": "gen", "oracle": "oracle", "paraphraser": "gen",
        "heldout": "heldout.jsonl.gz", "num_prompts": 6, "human_tokens": 24, "new_tokens": 30,
        "min_new_tokens": 20, "batch_size": 4, "kgw_delta": 4.0,
        "attacks": [{"kind": k, "strength": 0.3} for k in
                    ("deletion", "synonym", "paraphrase", "copy_paste")],
        "paraphrase_limit": 2, "spoof_texts": 4, "spoof_tokens": 16,
        "frontier_prompts": 4, "frontier_baselines": ["unwatermarked", "kgw1", "synthid"],
        "synthid_layers": 4, "synthid_ngram_len": 3,
        "frontier": [{"scaling": "additive", "bias": [1.0, 3.0]},
                     {"scaling": "tournament", "layers": 2, "filter_first": True,
                      "context_guard": 2}],
        "quick": {"num_prompts": 4, "green_share_texts": 2, "ablation_prompts": 4,
                  "ablations": {"alpha": [0.0, 1.0], "delta": [1.5]},
                  "ablation_attack": {"kind": "deletion", "strength": 0.3}},
    }  # fmt: skip
    (root / "eval.yaml").write_text(yaml.safe_dump(cfg))
    return root / "eval.yaml"


def test_quick_run_on_tiny_models_writes_report_and_resumes(
    tmp_path: Path, tiny_embedder_dir: Path, capsys
) -> None:
    from watermark.evaluate.__main__ import main

    config = _tiny_setup(tmp_path, tiny_embedder_dir)
    assert main(["--config", str(config), "--quick", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    out = tmp_path / "out"
    results = json.loads((out / "results.json").read_text())
    assert results["units"] == 4 and set(results["methods"]) == {
        "unwatermarked", "ours", "kgw0", "kgw1", "kgw2"
    }  # fmt: skip
    ours = results["methods"]["ours"]
    assert set(ours["attacks"]) == {"none", "deletion@0.3", "synonym@0.3", "paraphrase@0.3",
                                    "copy_paste@0.3"}  # fmt: skip
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
    assert 0 <= results["ablations"]["delta"][0]["attack_roc_auc"] <= 1
    assert set(results["spoofing"]) >= {"kgw0", "kgw1", "kgw2", "ours", "ours_opening"}
    rows = results["frontier"]["rows"]
    assert [r["label"] for r in rows] == [
        "Unwatermarked", "KGW-1", "SynthID-Text", "additive, bias=1.0", "additive, bias=3.0",
        "tournament, layers=2, filter first, guard=2",
    ]  # fmt: skip
    assert "detected@p<0.01" not in rows[0] and results["frontier"]["prompts"] == 4
    for r in rows[1:]:
        assert 0 <= r["detected@p<0.01"] <= 1 and 0 <= r["fpr@p<0.01"] <= 1 and r["rep4"] >= 0
    # the frontier's first units are the main table's: same generations, read from the cache
    assert rows[0]["ppl_median"] == pytest.approx(median(results["methods"]["unwatermarked"]
                                                         ["quality"]["ppl"]))  # fmt: skip
    detections = [json.loads(x)["key"] for x in (out / "cache/detections.jsonl").open()]
    ours_keys = {k.split("|")[0] for k in detections if k.startswith("ours-det-")}
    assert len(ours_keys) == 3  # main config; both additive cells share one; the guarded cell
    report = (out / "report.md").read_text()
    assert "| Ours (adaptive) |" in report and "## Security (spoofing)" in report
    assert "## Quality / power frontier (4 prompts)" in report
    for png in ("roc_none.png", "roc_paraphrase_0.3.png", "ppl_box.png", "frontier_ppl.png",
                "frontier_rep4.png"):  # fmt: skip
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
