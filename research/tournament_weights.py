"""Entropy-weighted statistics of a tournament setting on cached texts and their rewrites (a
script; prints one JSON line per weighting).

Each tested token t carries G_t, its green bits over the L lists, gamma_t, its null probability
of green per list (the keyed token map gives every list the same vocabulary share), and H_t, its
step's MM entropy, all read from the shipped detector. A weighting w = f(H) scores a text by
``sum w (G - L gamma) / sqrt(sum w^2 L gamma (1 - gamma))``: the exact null mean and variance of
the weighted count, so the statistic stays calibrated whatever f is (f = 1 is the shipped z).
Each weighting is scored by ROC-AUC and TPR at 1% FPR of the watermarked texts, unattacked and
under each curve attack of the config, against the human texts of the same prompts.

The texts and attacks are those an evaluation run cached, so only detection is recomputed.

Example::

    python research/tournament_weights.py --method ours-t10-temp1.05 --texts 64 --humans 128
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.config import EvalConfig  # noqa: E402
from evaluation.metrics import detection_metrics  # noqa: E402
from evaluation.run import Evaluation  # noqa: E402
from watermark.core.stats import z_score  # noqa: E402

WEIGHTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "none": np.ones_like,
    "H": lambda h: h,
    "sqrt H": np.sqrt,
    "1 - exp(-H)": lambda h: 1.0 - np.exp(-h),
    "H^2": lambda h: h * h,
}


def tested_features(wm: object, texts: list[str]) -> list[np.ndarray]:
    """Per text, an array (n, 3) of (G, gamma, H) over its tested tokens."""
    rows = []
    for res in wm.detect(texts):
        idx = [i for i, tested in enumerate(res.tested) if tested]
        rows.append(np.array([[res.green_bits[i], res.gamma[i], res.entropy[i]] for i in idx]))
    return rows


def weighted_z(feats: np.ndarray, layers: int, f: Callable[[np.ndarray], np.ndarray]) -> float:
    """The weighted statistic of one text (0 when nothing is tested)."""
    if len(feats) == 0:
        return 0.0
    green, gamma, entropy = feats.T
    w = f(entropy)
    return z_score(
        float((w * green).sum()),
        float((w * layers * gamma).sum()),
        float((w * w * layers * gamma * (1.0 - gamma)).sum()),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "configs/evaluation/matched.yaml"))
    parser.add_argument("--method", default="ours-t10-temp1.05", help="a tournament curve method")
    parser.add_argument("--texts", type=int, default=64, help="watermarked texts per attack")
    parser.add_argument("--humans", type=int, default=128, help="human texts (negatives)")
    args = parser.parse_args()

    cfg = EvalConfig.load(args.config)
    ev = Evaluation(cfg, progress=True)
    units = ev.all_units[: max(args.humans, args.texts)]
    humans = [u["human"] for u in units][: args.humans]
    method = ev.method(args.method)
    wm = method.wm
    texts = [g["text"] for g in ev.generations(method, units[: args.texts])]
    groups = {"none": texts}
    for attack in cfg.curve_attacks:
        label = f"{attack['kind']}@{attack['strength']}"
        groups[label] = ev.attacked(attack, texts, humans[: args.texts])
    negatives = tested_features(wm, humans)
    positives = {label: tested_features(wm, group) for label, group in groups.items()}
    layers = wm.config.scheme.layers
    for name, f in WEIGHTS.items():
        neg = [weighted_z(x, layers, f) for x in negatives]
        row: dict = {"weighting": name, "human_sd": round(float(np.std(neg)), 3)}
        for label, feats in positives.items():
            scores = detection_metrics([weighted_z(x, layers, f) for x in feats], neg)
            row[label] = [round(scores["roc_auc"], 3), round(scores["tpr@1%fpr"], 3)]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
