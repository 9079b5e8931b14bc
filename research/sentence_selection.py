"""How much margin each way of choosing a candidate buys, on real pools (issue 70; a script
printing JSON lines).

The held-out pools of the sentence mapper's seeds (``data/sentence-key/pools.jsonl.gz``: 96
prefixes, each with 32 next sentences sampled by the generator; none trained on) are read by the
shipped mapper. For each number of candidates N (the first N of each pool: the cost), each
number of keyed bits b, each rule and 32 random keys of the robust setting (2 own context bits),
the kept candidate's evidence is measured as the per-sentence z of the hits test,
(hits - b/2) / (sqrt(b)/2), and of the margin test (the product's): the sentence test's power
grows with its mean over sentences, times the square root of their number. A pool with fewer
than N complete candidates offers what it has. Rules:

* ``tanh``: the layer's, the best sum of tanh(t_i v_{d_i} / tau);
* ``hits``: the most keyed signs on target (ties: the first sampled);
* ``weighted``: the best margin test statistic, sum_i w_i (2 hit_i - 1) with the margin test's
  weights w (:func:`~watermark.sentences.key.margin_weights`);
* ``cascade``: channel by channel, keep the candidates with the target sign while any has it,
  then the first left (a lexicographic choice, as a cascade of splits per channel).

    python research/sentence_selection.py
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from data.sentence_rewrites import read_jsonl_gz  # noqa: E402
from mapper.sentence_metrics import keys  # noqa: E402
from watermark.config.watermark_config import WatermarkConfig  # noqa: E402
from watermark.core.semantic import MappedEmbedder  # noqa: E402
from watermark.models.loaders import load_embedder  # noqa: E402
from watermark.models.semantic_mapper import SemanticMapper  # noqa: E402
from watermark.sentences.key import margin_weights  # noqa: E402

RULES = ("tanh", "hits", "weighted", "cascade")


def choose(rule: str, key, v: torch.Tensor) -> int:
    """The index of the candidate (outputs v (N, D)) that ``rule`` keeps under ``key``."""
    groups = key.groups(v, None)
    if rule == "tanh":
        return int(torch.argmax(key.scores(v, groups)))
    hits = key.hits(v, groups)
    if rule == "hits":
        return int(torch.argmax(hits.sum(1)))
    if rule == "weighted":
        return int(torch.argmax((margin_weights(v, key.dims) * (2 * hits.long() - 1)).sum(1)))
    alive = torch.ones(len(v), dtype=torch.bool)
    for i in range(hits.shape[1]):
        keep = alive & hits[:, i]
        if keep.any():
            alive = keep
    return int(alive.nonzero()[0])


def evidence(key, v: torch.Tensor) -> tuple[float, float]:
    """The per-sentence z of the hits test and of the margin test of one sentence (outputs v
    (1, D)): :meth:`~watermark.sentences.key.SentenceKey.evidence` under each test."""
    groups = key.groups(v, None)
    return tuple(replace(key, margin=m).evidence(v, groups)[0].item() for m in (False, True))


def read_pools(path: Path) -> tuple[list[list[str]], list[torch.Tensor]]:
    """The held-out pools of ``path`` with two or more candidates, and their outputs v (N, D)
    under the shipped SE and mapper."""
    rows = [r for r in read_jsonl_gz(path) if r["split"] == "heldout"]
    pools = [[c for c in r["candidates"] if c] for r in rows]
    pools = [p for p in pools if len(p) >= 2]
    shipped = WatermarkConfig.default()
    reader = MappedEmbedder(
        load_embedder(shipped.models.embedder),
        SemanticMapper.from_pretrained(shipped.mapper_dir()),
        batch_size=64,
    )
    return pools, [reader.outputs(reader.embed(p)).cpu() for p in pools]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pools", type=Path, default=ROOT / "data/sentence-key/pools.jsonl.gz")
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--candidates", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--bits", type=int, nargs="+", default=[4, 8, 16, 32])
    args = parser.parse_args()
    torch.set_num_threads(2)
    _, outputs = read_pools(args.pools)
    for bits in args.bits:
        tested = keys(outputs[0].shape[1], args.keys, bits=bits)
        for n in args.candidates:
            for rule in RULES if n > 1 else RULES[:1]:
                z = [evidence(k, v[[choose(rule, k, v[:n])]]) for k in tested for v in outputs]
                row = {"bits": bits, "candidates": n, "rule": rule, "pools": len(outputs)}
                row["z_hits"] = round(sum(a for a, _ in z) / len(z), 3)
                row["z_margin"] = round(sum(b for _, b in z) / len(z), 3)
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
