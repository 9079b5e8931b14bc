"""The sentence layer's two parts, cell by cell: what the token-level test and the sentence test
each say about a harness run's texts (issue 54).

For each sentence-layer method of an evaluation YAML and each of its curve attacks (and no
attack), the texts come from the run's caches (nothing is generated or attacked here; a missing
entry fails) and are detected again with full results. Printed per cell (JSON lines): the hit
rate of the keyed outputs (hits / (sentences x bits); 0.5 under the null), sentences per text,
median p-values of the token-level verdict, the sentence test and their combination, and the
ROC-AUC of each part against the run's human negatives.

    python research/sentence_parts.py --config configs/evaluation/sentence-pilot.yaml
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.config import EvalConfig  # noqa: E402
from evaluation.curves import attack_label  # noqa: E402
from evaluation.metrics import detection_metrics  # noqa: E402
from evaluation.run import Evaluation  # noqa: E402


def parts(results: list) -> dict[str, list[float]]:
    """Per text: the token-level verdict p, the sentence p, their combination by Fisher's rule
    (the product's) and, for comparison, by Bonferroni's (twice the smaller p)."""
    return {
        "token": [r.token_verdict_p_value for r in results],
        "sentence": [r.sentence_p_value for r in results],
        "combined": [r.combined_p_value for r in results],
        "bonferroni": [
            min(1.0, 2 * min(r.token_verdict_p_value, r.sentence_p_value)) for r in results
        ],
    }


def cell(name: str, attack: str, found: list, human: list) -> dict:
    ours, null = parts(found), parts(human)
    bits = 2 * sum(r.sentence_expected for r in found)
    row = {
        "method": name,
        "attack": attack,
        "texts": len(found),
        "hit_rate": sum(r.sentence_hits for r in found) / max(1, bits),
        "sentences_per_text": statistics.fmean(r.num_sentences for r in found),
    }
    for part in ours:
        row[f"median_p_{part}"] = statistics.median(ours[part])
        row[f"detected_p<0.01_{part}"] = statistics.fmean(p < 0.01 for p in ours[part])
        row[f"human_p<0.01_{part}"] = statistics.fmean(p < 0.01 for p in null[part])
        pos = [-p for p in ours[part]]  # smaller p: more evidence
        metrics = detection_metrics(pos, [-p for p in null[part]])
        row[f"roc_auc_{part}"] = metrics["roc_auc"]
        row[f"tpr@1%fpr_{part}"] = metrics["tpr@1%fpr"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", action="append", default=[], help="as python -m evaluation")
    parser.add_argument("--out", help="the run's folder (default: the YAML's out_dir)")
    args = parser.parse_args()
    cfg = EvalConfig.load(args.config, overrides=args.set)
    if args.out:
        from dataclasses import replace

        cfg = replace(cfg, out_dir=args.out)
    for name, wm, humans, cells in curve_texts(Evaluation(cfg, progress=False)):
        human = wm.detect(humans)
        for attack, texts in cells:
            print(json.dumps(cell(name, attack, wm.detect(texts), human)), flush=True)


def curve_texts(ev: Evaluation):
    """Per sentence-layer method of the run's curves: (name, its watermark, the human texts,
    (attack label, texts) for the unattacked texts and then each curve attack, read from the
    caches as they are reached)."""
    cfg = ev.cfg
    units = ev.all_units[cfg.curve_offset : cfg.curve_offset + cfg.curve_prompts]
    more = ev.all_units[cfg.curve_offset + len(units) : cfg.curve_offset + cfg.curve_negatives]
    humans = [u["human"] for u in units + more]
    for name in cfg.curve_methods:
        method = ev.method(name)
        if getattr(getattr(method, "wm", None), "sentences", None) is None:
            continue
        texts = [g["text"] for g in ev.generations(method, units)]
        yield name, method.wm, humans, attacked_texts(ev, texts, units)


def attacked_texts(ev: Evaluation, texts: list[str], units: list[dict]):
    """("none", texts), then (label, the texts under it) for each curve attack."""
    yield "none", texts
    n = min(ev.cfg.curve_attacked, len(units))
    for attack in ev.cfg.curve_attacks:
        yield attack_label(attack), ev.attacked(attack, texts[:n], [u["human"] for u in units[:n]])


if __name__ == "__main__":
    main()
