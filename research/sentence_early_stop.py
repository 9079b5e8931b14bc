"""Ending a round early when a finished candidate is good enough, on real pools (issue 70; a
script printing JSON lines).

In the decode loop a round of N candidate rows lasts until its longest row ends: every row
costs a forward per step until then. Early stopping ends the round at the first step at which
a row ends whose evidence reaches a threshold t, and keeps the best of the rows ended by then;
if none reaches t the round ends as today. This replays that on the held-out pools of
``data/sentence-key/pools.jsonl.gz`` (96 prefixes, 32 next sentences each, sampled by the
generator; none trained on), read by the shipped mapper under 32 random keys of the robust
setting. A candidate ends at its length in generator tokens; the pools' candidates are drawn
independently, as the rows of a round are.

For each N and t it prints, averaged over pools and keys:

* ``z``: the kept sentence's margin-test z (the product's per-sentence evidence);
* ``kept_tokens``: its length, and ``steps``: the round's length in steps;
* ``tokens_per_step``: kept tokens over steps (the round's throughput at N rows);
* ``z_text_200``: z times sqrt(200 / kept_tokens), what a 200-token text's sentence test grows
  with (more, shorter sentences are more units).

The kept row is chosen among the finished ones by the layer's tanh score (``tanh``, as the
decode loop did with ``sentences.stop_at`` before 0.9 removed it) or by the margin-test z
(``margin``); ``t = inf`` is best-of-N.

    python research/sentence_early_stop.py
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sentence_selection import read_pools  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from mapper.sentence_metrics import keys  # noqa: E402
from watermark.config.watermark_config import WatermarkConfig  # noqa: E402
from watermark.models.loaders import resolve_lm  # noqa: E402


def round_outcome(z: list[float], lengths: list[int], threshold: float) -> tuple[list[int], int]:
    """(the rows that are candidates, round steps) of one round whose rows have evidence z and
    end after ``lengths`` tokens: the round ends at the first step at which a row ends whose z
    reaches ``threshold`` (every row ended by then is a candidate), or at the longest row."""
    steps = min((n for n, s in zip(lengths, z) if s >= threshold), default=max(lengths))
    return [i for i, n in enumerate(lengths) if n <= steps], steps


def kept(rule: str, key, v: torch.Tensor, z: list[float], rows: list[int]) -> int:
    """The row kept among the candidate ``rows`` (outputs v (N, D)): the best by the layer's tanh
    score among them, or by z (ties: the first sampled)."""
    if rule == "margin":
        return max(rows, key=lambda i: (z[i], -i))
    return rows[int(torch.argmax(key.scores(v[rows], key.groups(v[rows], None))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pools", type=Path, default=ROOT / "data/sentence-key/pools.jsonl.gz")
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--candidates", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument(
        "--thresholds", type=float, nargs="+", default=[math.inf, 2.5, 2.0, 1.5, 1.0]
    )
    parser.add_argument("--bits", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(2)
    pools, outputs = read_pools(args.pools)
    generator = WatermarkConfig.default().models.generator
    tokenizer = AutoTokenizer.from_pretrained(resolve_lm(generator))
    lengths = [[len(tokenizer(c, add_special_tokens=False).input_ids) for c in p] for p in pools]
    tested = keys(outputs[0].shape[1], args.keys, bits=args.bits)
    z = [[k.evidence(v, k.groups(v, None)).tolist() for v in outputs] for k in tested]
    for n in args.candidates:
        runs = [(rule, t) for rule in ("tanh", "margin") for t in args.thresholds]
        for rule, threshold in runs:
            kept_z, kept_len, steps = [], [], []
            for k, key in enumerate(tested):
                for p, v in enumerate(outputs):
                    zs, ls = z[k][p][:n], lengths[p][:n]
                    rows, s = round_outcome(zs, ls, threshold)
                    i = kept(rule, key, v, zs, rows)
                    kept_z.append(zs[i])
                    kept_len.append(ls[i])
                    steps.append(s)
            mean_z = sum(kept_z) / len(kept_z)
            mean_len = sum(kept_len) / len(kept_len)
            row = {"candidates": n, "rule": rule, "threshold": threshold, "pools": len(outputs)}
            row["z"] = round(mean_z, 3)
            row["kept_tokens"] = round(mean_len, 2)
            row["steps"] = round(sum(steps) / len(steps), 2)
            row["tokens_per_step"] = round(sum(kept_len) / sum(steps), 3)
            row["z_text_200"] = round(mean_z * math.sqrt(200 / mean_len), 3)
            print(json.dumps(row).replace("Infinity", '"inf"'), flush=True)


if __name__ == "__main__":
    main()
