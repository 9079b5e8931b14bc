"""The figure of merit at the text level: the exact sentence test of whole texts after a
simulated rewrite (issue 79; a script printing JSON lines).

:mod:`surviving_evidence` measures one kept sentence; a text's test also pays for what its
sentences share. With one target set (no context bits) an output whose sign a text's topic
fixes is one coin for the whole text, however many sentences hit it
(:mod:`watermark.sentences.significance`), and context bits split a text's sentences into groups
only where their own context signs differ. So this script builds texts of one document's
pools (``data/sentence-key/pools.jsonl.gz``: 3-4 pools per train document, each one prefix of
the document and 16 sampled next sentences), keeps one candidate of the first N per pool by the
config's rule (:meth:`~watermark.sentences.layer.SentenceLayer.rank`'s ``choice``), and reads
the text with the detector's exact test (:func:`~watermark.sentences.significance.sentence_test`)
as generated and after a simulated rewrite: each sign flips with the probability measured for
its margin bin on the ``--kind`` rewrite pairs of ``--split``, independently, ``--draws`` times
(context signs too, which moves a sentence's group). Reported, over documents and 32 keys:
the mean probit z = Phi^-1(1 - p) of the text's p-value before and after, and the share at
p < 0.01.

The texts are 3-4 sentences where generated texts have 8-10, so the shared sign costs less
here than in generation; the figure ranks settings, it does not predict ROC-AUC.

    python research/text_evidence.py --config configs/watermark-robust.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

from data.sentence_rewrites import read_jsonl_gz  # noqa: E402
from mapper.sentence_metrics import kept_by_bin, keys, rewrite_agreement  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.config.watermark_config import WatermarkConfig  # noqa: E402
from watermark.sentences.key import SentenceKey, margin_bins, margins  # noqa: E402
from watermark.sentences.significance import sentence_test  # noqa: E402

rewrite_pairs = __import__("surviving_evidence").rewrite_pairs  # the sibling script's pairs
DATA = ROOT / "data" / "sentence-key"
NORMAL = torch.distributions.Normal(0.0, 1.0)


def document_pools(layer, split: str, candidates: int) -> list[list[torch.Tensor]]:
    """Per document of ``split`` with at least 3 pools: the outputs (N, D) of each pool's
    first ``candidates`` candidates, the pools in the document's order."""
    by_doc: dict[str, list[tuple[int, list[str]]]] = defaultdict(list)
    for r in read_jsonl_gz(DATA / "pools.jsonl.gz"):
        found = [c for c in r["candidates"] if c][:candidates]
        if r["split"] == split and len(found) >= 2:
            by_doc[r["doc"]].append((int(r["id"].rsplit(":", 1)[1]), found))
    docs = [sorted(p) for p in by_doc.values() if len(p) >= 3]
    flat = [c for doc in docs for _, pool in doc for c in pool]
    v = layer.outputs(flat)
    out, start = [], 0
    for doc in docs:
        pools = []
        for _, pool in doc:
            pools.append(v[start : start + len(pool)])
            start += len(pool)
        out.append(pools)
    return out


def probit(p: float) -> float:
    """Phi^-1(1 - p), clipped at p = 1e-12."""
    return float(NORMAL.icdf(torch.tensor(1 - min(max(p, 1e-12), 1 - 1e-12))))


def text_p(key: SentenceKey, v: torch.Tensor) -> float:
    """The exact sentence test's p-value of a text whose distinct sentences have outputs v."""
    groups = key.text_groups(v)
    positive = v[:, key.dims] > 0
    return sentence_test(key.hits(v, groups), groups, positive, key.weights(v))


def rewritten(v: torch.Tensor, kept: torch.Tensor, rng: torch.Generator) -> torch.Tensor:
    """v (n, D) with each sign flipped with probability 1 - kept[bin] of its margin."""
    stay = kept[margin_bins(margins(v))]
    flip = torch.rand(v.shape, generator=rng) > stay
    return torch.where(flip, -v, v)


def measure(cfg: WatermarkConfig, docs, kept: torch.Tensor, args) -> dict:
    """The texts' probit z before and after the simulated rewrite under ``cfg``'s rule."""
    s = cfg.sentences
    tested = keys(docs[0][0].shape[1], args.keys, bits=s.bits, context_bits=s.context_bits,
                  keying=s.keying, test=s.test, power=s.weight_power)  # fmt: skip
    rng = torch.Generator().manual_seed(0)
    before, after = [], []
    for key in tested:
        for pools in docs:
            rated = [key.rate(p, key.groups(p, None), s.choice) for p in pools]
            text = torch.stack([p[int(torch.argmax(r))] for p, r in zip(pools, rated)])
            before.append(text_p(key, text))
            after += [text_p(key, rewritten(text, kept, rng)) for _ in range(args.draws)]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return {
        "texts": len(before),
        "z": round(mean([probit(p) for p in before]), 4),
        "z_after": round(mean([probit(p) for p in after]), 4),
        "p<0.01": round(mean([p < 0.01 for p in before]), 4),
        "p<0.01_after": round(mean([p < 0.01 for p in after]), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, nargs="+",
                        default=[ROOT / "configs/watermark-robust.json"])  # fmt: skip
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--pool-split", default="train")
    parser.add_argument("--kind", default="forced")
    parser.add_argument("--split", default="val", help="the rewrite pairs' split")
    parser.add_argument("--draws", type=int, default=4, help="simulated rewrites per text")
    args = parser.parse_args()
    wm = Watermark.load(args.config[0])
    if wm.sentences is None:
        raise SystemExit(f"error: {args.config[0]} has the sentence layer off")
    docs = document_pools(wm.sentences, args.pool_split, args.candidates)
    v, w = rewrite_pairs(wm.sentences, args.kind, args.split)
    kept = torch.tensor(kept_by_bin(rewrite_agreement(v, w)))
    for path in args.config:  # the same SE and SM: only the key and the rule differ
        cfg = WatermarkConfig.load(path)
        if (cfg.sentences.mapper, cfg.sentences.embedder) != (
            wm.config.sentences.mapper,
            wm.config.sentences.embedder,
        ):
            raise SystemExit(f"error: {path} reads another SE or SM than {args.config[0]}")
        row = {"config": str(path), "candidates": args.candidates, "pool_split": args.pool_split,
               "kind": args.kind, "split": args.split, "documents": len(docs),
               "kept_by_bin": [round(k, 3) for k in kept.tolist()]}  # fmt: skip
        print(json.dumps({**row, **measure(cfg, docs, kept, args)}), flush=True)


if __name__ == "__main__":
    main()
