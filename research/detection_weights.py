"""Weighted detection statistics on cached watermarked texts and their rewrites (a script; prints
one JSON line per weighting).

Each tested token of a text gets a weight w from its step's features, and the text's statistic is
``sum w (g - 1/2) / sqrt(sum w^2 / 4)`` over its tested tokens (g its green bit; 1/2 stands in for
the vocabulary's green share, which the keyed token map keeps within a few thousandths of it).
With w = 1 this is the shipped z-test. The features are read once per text from the shipped
detector: the MM entropy H of the step, and v, the mapper output at the token's own dimension
(green iff v > 0; |v| is its margin). A weighting is then scored by ROC-AUC and TPR at 1% FPR
of the watermarked texts, unattacked and under each curve attack of the config, against the
human texts of the same prompts, with their median statistic.

The texts and attacks are those an evaluation run cached (``configs/evaluation/matched.yaml``), so
only detection is recomputed (about 1.5 s a text on a 2-core CPU).

Example::

    python research/detection_weights.py --config configs/evaluation/matched.yaml \
        --texts 64 --humans 128
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.config import EvalConfig  # noqa: E402
from evaluation.curves import attack_label  # noqa: E402
from evaluation.metrics import detection_metrics  # noqa: E402
from evaluation.run import Evaluation  # noqa: E402

Weighting = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def features(wm: object, texts: list[str]) -> list[np.ndarray]:
    """Per text, float (n, 2): entropy H and mapper output v of each tested token."""
    semantic, core = wm.core.semantic, wm.core
    values: dict[str, np.ndarray] = {}
    plain = semantic.green_lists

    def recording(inputs, progress=False):  # keeps v of every SE input the detector embeds
        if len(inputs) == 0:
            return plain(inputs)
        v = semantic.mapper(semantic.embed(inputs))
        values.update(zip(inputs, v.detach().cpu().numpy()))
        return semantic.from_signs(v > 0)

    semantic.green_lists = recording
    try:
        results = wm.detect(texts)
    finally:
        semantic.green_lists = plain
    dims = semantic.token_maps[0].cpu().numpy()
    out = []
    for r in results:
        rows = []
        for t in (i + 1 for i, tested in enumerate(r.tested) if tested):
            v = values[core.embedding_input(t, r.token_ids[: t - 1])]
            rows.append((r.entropy[t - 1], float(v[dims[r.token_ids[t - 1]]])))
        out.append(np.asarray(rows, dtype=np.float64).reshape(-1, 2))
    return out


def statistic(rows: np.ndarray, weigh: Weighting, scale: float) -> float:
    """The weighted z of one text (0 when nothing is tested)."""
    if len(rows) == 0:
        return 0.0
    entropy, v = rows[:, 0], rows[:, 1]
    w = weigh(entropy, np.abs(v), np.full_like(v, scale))
    spread = math.sqrt(float((w**2).sum()) / 4)
    return float((w * ((v > 0) - 0.5)).sum() / spread) if spread > 0 else 0.0


WEIGHTINGS: dict[str, Weighting] = {
    "plain (shipped)": lambda h, a, q: np.ones_like(a),
    "|v|": lambda h, a, q: a,
    "sqrt |v|": lambda h, a, q: np.sqrt(a),
    "min(|v| / median, 1)": lambda h, a, q: np.minimum(a / q, 1.0),
    "H": lambda h, a, q: h,
    "H - 1": lambda h, a, q: h - 1.0,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs/evaluation/matched.yaml"))
    parser.add_argument("--texts", type=int, default=64, help="watermarked texts per attack")
    parser.add_argument("--humans", type=int, default=128, help="human texts (negatives)")
    args = parser.parse_args()
    cfg = EvalConfig.load(args.config)
    ev = Evaluation(cfg, progress=False)
    method = ev.method("ours")
    units = ev.all_units[: max(args.texts, args.humans)]
    humans = [u["human"] for u in units]
    texts = [g["text"] for g in ev.generations(method, units[: args.texts])]
    groups = {"none": texts}
    for attack in cfg.curve_attacks:
        groups[attack_label(attack)] = ev.attacked(attack, texts, humans[: args.texts])
    found = {name: features(method.wm, group) for name, group in groups.items()}
    negatives = features(method.wm, humans[: args.humans])
    unattacked = np.concatenate([rows[:, 1] for rows in found["none"]])
    scale = float(np.median(np.abs(unattacked)))  # the median margin of watermarked tokens
    for name, weigh in WEIGHTINGS.items():
        neg = [statistic(rows, weigh, scale) for rows in negatives]
        line = {
            "weighting": name,
            "texts": args.texts,
            "humans": len(neg),
            "human_max": round(max(neg), 2),
        }
        for group, rows_list in found.items():
            pos = [statistic(rows, weigh, scale) for rows in rows_list]
            m = detection_metrics(pos, neg)
            line[group] = {
                "roc_auc": round(m["roc_auc"], 3),
                "tpr@1%fpr": round(m["tpr@1%fpr"], 3),
                "median": round(statistics.median(pos), 2),
            }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
