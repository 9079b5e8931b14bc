"""Diagnostic: what counting each mapper output once costs under rewrites, and what averaging keeps.

The tournament tests L bits per token on D mapper outputs, so many bits of a text read the same
output. ``outputs_once`` keeps only the first read of each output, which calibrates the test
(docs/research/evaluation.md, "Choosing a tournament default") but drops about 30% of the bits. This
script detects the texts of a matched-curves run (``configs/evaluation/matched.yaml``: our
method's first ``curve_attacked`` generations, unattacked and under each curve attack, against
the ``curve_prompts`` human texts, all read from the run's cache) once, with every bit kept, and
scores each text three ways from the same bits:

* ``all``: every tested bit (``outputs_once`` off);
* ``once``: the first read of each output (``outputs_once`` on, the shipped test);
* ``mean``: each output's share of green reads, summed over outputs, against a null variance of
  gamma (1 - gamma) per output, as if all reads of one output agreed (so never too small).

Per statistic and text set it prints ROC-AUC and TPR at 1% FPR against the human texts, and the
human texts' share at p < 0.01 (normal tail for ``mean``, the exact test for the others). The
detector is not changed: two of its functions are wrapped for the run.

Example::

    python research/output_reads.py --config configs/evaluation/matched.yaml
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import watermark.detect.assembly as assembly  # noqa: E402
from evaluation.config import EvalConfig  # noqa: E402
from evaluation.curves import attack_label  # noqa: E402
from evaluation.metrics import detection_metrics  # noqa: E402
from evaluation.run import Evaluation  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.core.stats import green_test  # noqa: E402
from watermark.core.units import first_reads  # noqa: E402

STATS = ("all", "once", "mean")
_FIRST_READS, _GREEN_TEST = assembly.first_reads, assembly.green_test
READ_DIMS: list[int] = []  # the output each bit of the current whole-text test reads
RECORDS: list[dict] = []


def _first_reads(dims, rows, once):
    """Every bit of the span (``once`` ignored), remembering the output each one reads."""
    found = _FIRST_READS(dims, rows, False)
    width = len(dims[0]) if len(dims) else 1
    READ_DIMS[:] = [int(dims[b // width][b % width]) for b in found]
    return found


def mean_test(bits: list[int], gammas: list[float], dims: list[int]) -> tuple[float, float]:
    """z and one-sided normal p-value of the per-output green shares (see the module doc)."""
    groups: dict[int, list[int]] = {}
    for i, d in enumerate(dims):
        groups.setdefault(d, []).append(i)
    excess = variance = 0.0
    for members in groups.values():
        g = float(np.mean([gammas[i] for i in members]))
        excess += float(np.mean([bits[i] for i in members])) - g
        variance += g * (1.0 - g)
    if variance <= 0:
        return 0.0, 1.0
    z = excess / math.sqrt(variance)
    return z, 0.5 * math.erfc(z / math.sqrt(2.0))


def score(bits: list[int], gammas: list[float], dims: list[int]) -> dict:
    """The three statistics of one text's whole-text bits."""
    keep = first_reads([[d] for d in dims], range(len(dims)), once=True)  # one list per row
    z_all, p_all = green_test(bits, gammas)
    z_once, p_once = green_test([bits[i] for i in keep], [gammas[i] for i in keep])
    z_mean, p_mean = mean_test(bits, gammas, dims)
    return {
        "all": (z_all, p_all),
        "once": (z_once, p_once),
        "mean": (z_mean, p_mean),
        "bits": len(bits),
        "outputs": len(keep),
    }


def _green_test(green, gammas):
    bits = [int(b) for b in green]
    RECORDS.append(score(bits, list(gammas), list(READ_DIMS)))
    return _GREEN_TEST(green, gammas)


def detect(wm, texts: list[str]) -> list[dict]:
    RECORDS.clear()
    wm.detect(texts, progress=True)
    return list(RECORDS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs/evaluation/matched.yaml"))
    parser.add_argument("--method", default="ours")
    args = parser.parse_args()
    ev = Evaluation(EvalConfig.load(args.config), progress=True)
    cfg = ev.cfg
    units = ev.all_units[: cfg.curve_prompts]
    humans = [u["human"] for u in units]
    n = min(cfg.curve_attacked, len(units))
    texts = [g["text"] for g in ev.generations(ev.method(args.method), units[:n])]
    sets = {"none": texts}
    for attack in cfg.curve_attacks:
        sets[attack_label(attack)] = ev.attacked(attack, texts, humans[:n])

    wm_cfg = ev.wm_config.evolve(window_sizes=[], outputs_once=False)
    wm = Watermark.load(wm_cfg, tokenizer=ev.tokenizer, generator=ev.model)
    assembly.first_reads, assembly.green_test = _first_reads, _green_test
    human = detect(wm, humans)
    for stat in STATS:
        p, z = np.array([r[stat][1] for r in human]), np.array([r[stat][0] for r in human])
        row = {
            "set": "human",
            "stat": stat,
            "n": len(human),
            "p<0.01": int((p < 0.01).sum()),
            "p<0.05": int((p < 0.05).sum()),
            "z_mean": float(z.mean()),
            "z_sd": float(z.std()),
        }
        print(json.dumps(row), flush=True)
    for name, batch in sets.items():
        found = detect(wm, batch)
        for stat in STATS:
            m = detection_metrics([r[stat][0] for r in found], [r[stat][0] for r in human])
            print(
                json.dumps(
                    {
                        "set": name,
                        "stat": stat,
                        "n": len(found),
                        "roc_auc": round(m["roc_auc"], 4),
                        "tpr@1%fpr": round(m["tpr@1%fpr"], 4),
                        "bits": float(np.mean([r["bits"] for r in found])),
                        "outputs": float(np.mean([r["outputs"] for r in found])),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
