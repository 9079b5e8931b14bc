"""Robustness of matched-quality settings under several keys (a script; prints JSON lines).

A single key decides a method's verdict on the bigrams or tokens common to every text, so the
human scores of one key can sit above or below zero for the whole human set (KGW-1's human z
has mean -0.43 under transformers' default key on the matched curves' 128 human texts). The
ROC-AUC of one key is then partly the luck of that key. This script repeats the matched
curves' attacked comparison under further keys, derived by a fixed rule before any result is
read: key ``i`` of ours is the config's key + ``"#i"``, key ``i`` of a KGW method is its
integer key + ``i``; key 0 is the config's own (its texts are cached by the curves run).

Per method and key: the first ``curve_attacked`` texts of the curve prompts, generated under
that key (cached under the key's method cache key), detected unattacked and under each curve
attack against the ``curve_prompts`` human texts detected under the same key. Printed per key,
and pooled over keys (every key's attacked z against every key's human z). Text quality is not
re-measured: the key does not change it in expectation.

``--human-keys N`` instead prints, for each method, the mean and sd of its human z under keys
0..N-1 (detection of the human texts only): how far one key moves every human score.

Example::

    python research/matched_keys.py --config configs/evaluation/matched.yaml \
        --methods ours-t10-temp1.04-rep,kgw1-d1.0 --keys 0,1,2
    python research/matched_keys.py --methods kgw1-d1.0 --human-keys 16
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.config import EvalConfig  # noqa: E402
from evaluation.curves import attack_label  # noqa: E402
from evaluation.metrics import detection_metrics  # noqa: E402
from evaluation.run import Evaluation, words_kept  # noqa: E402


def keyed_method(ev: Evaluation, name: str, index: int):
    """Method ``name`` of the config (a variant or a method) under key ``index``."""
    if index == 0:
        return ev.method(name)
    overrides = dict(ev.cfg.variants.get(name) or {})
    base = overrides.pop("base", ev.cfg.base_method(name))
    if base == "ours":
        overrides["key"] = f"{ev.wm_config.keys.key}#{index}"
    else:
        overrides["kgw_key"] = ev.cfg.kgw_key + index
    return ev._method(base, **overrides)


def scores_of(ev: Evaluation, method, name: str, index: int) -> dict[str, dict]:
    """``{"human": z list, <attack or "none">: {"z", "words_kept"}}`` of one method and key."""
    cfg = ev.cfg
    units = ev.all_units[: cfg.curve_prompts]
    humans = [u["human"] for u in units]
    n = min(cfg.curve_attacked, len(units))
    texts = [g["text"] for g in ev.generations(method, units[:n])]
    out = {
        "human": [d.z_score for d in ev.detections(method, humans)],
        "none": {"z": [d.z_score for d in ev.detections(method, texts)], "words_kept": 1.0},
    }
    for attack in cfg.curve_attacks:
        attacked = ev.attacked(attack, texts, humans[:n])
        out[attack_label(attack)] = {
            "z": [d.z_score for d in ev.detections(method, attacked)],
            "words_kept": words_kept(texts, attacked),
        }
    return out


def rows(name: str, key: str, s: dict) -> list[dict]:
    """One row per attack: ROC-AUC and TPR at 1% FPR of the attacked z against the human z."""
    out = []
    for label, group in s.items():
        if label == "human":
            continue
        m = detection_metrics(group["z"], s["human"])
        out.append(
            {
                "method": name,
                "key": key,
                "attack": label,
                "words_kept": round(group["words_kept"], 3),
                "roc_auc": round(m["roc_auc"], 3),
                "tpr@1%fpr": round(m["tpr@1%fpr"], 3),
                "positives": len(group["z"]),
                "negatives": len(s["human"]),
                "human_z_mean": round(sum(s["human"]) / len(s["human"]), 3),
            }
        )
    return out


def pooled(per_key: list[dict]) -> dict:
    """The scores of all keys in one set (each text scored under its own key)."""
    out = {}
    for label in per_key[0]:
        if label == "human":
            out[label] = [z for s in per_key for z in s[label]]
        else:
            kept = sum(s[label]["words_kept"] for s in per_key) / len(per_key)
            out[label] = {"z": [z for s in per_key for z in s[label]["z"]], "words_kept": kept}
    return out


def human_spread(ev: Evaluation, name: str, keys: int) -> dict:
    """Mean human z of method ``name`` under each of keys 0..``keys``-1."""
    humans = [u["human"] for u in ev.all_units[: ev.cfg.curve_prompts]]
    means = []
    for index in range(keys):
        z = [d.z_score for d in ev.detections(keyed_method(ev, name, index), humans)]
        means.append(round(statistics.fmean(z), 3))
    return {
        "method": name,
        "human_texts": len(humans),
        "human_z_mean_per_key": means,
        "across_keys_mean": round(statistics.fmean(means), 3),
        "across_keys_sd": round(statistics.pstdev(means), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs/evaluation/matched.yaml"))
    parser.add_argument("--methods", default="ours-t10-temp1.04-rep,kgw1-d1.0")
    parser.add_argument("--keys", default="0,1,2", help="key indices (0: the config's key)")
    parser.add_argument("--human-keys", type=int, help="only the human z mean under N keys")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    ev = Evaluation(EvalConfig.load(args.config), progress=True)
    if args.human_keys:
        for name in args.methods.split(","):
            print(json.dumps(human_spread(ev, name, args.human_keys)), flush=True)
        return
    indices = [int(k) for k in args.keys.split(",")]
    for name in args.methods.split(","):
        per_key = []
        for index in indices:
            per_key.append(scores_of(ev, keyed_method(ev, name, index), name, index))
            for row in rows(name, str(index), per_key[-1]):
                print(json.dumps(row), flush=True)
        if len(per_key) > 1:
            for row in rows(name, "pooled", pooled(per_key)):
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
