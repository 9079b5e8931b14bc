"""The figure of merit at the text level: the exact sentence test of whole texts after a
simulated rewrite (issue 79; a script printing JSON lines).

:mod:`research.surviving_evidence` measures one kept sentence; a text's test also pays for what its
sentences share. With one target set (no context bits) an output whose sign a text's topic
fixes is one coin for the whole text, however many sentences hit it
(:mod:`watermark.sentences.significance`), and context bits split a text's sentences into groups
only where their own context signs differ. So this script builds texts of one document's
pools (``data/sentence-key/pools.jsonl.gz``: 3-4 pools per train document, each one prefix of
the document and 16 sampled next sentences), keeps one candidate of the first N per pool by the
config's rule (the layer's choice, :meth:`~watermark.sentences.key.SentenceKey.order`, each
candidate read after the text's sentence before it, as generation reads it), and reads
the text with the detector's exact test (:func:`~watermark.sentences.significance.sentence_test`)
as generated and after a simulated rewrite: each sign flips with the probability measured for
its margin bin on the ``--kind`` rewrite pairs of ``--split``, independently, ``--draws`` times
(context signs too, which moves a sentence's group). Reported, over documents and 32 keys:
the mean probit z = Phi^-1(1 - p) of the text's p-value before and after, and the share at
p < 0.01.

The texts are 3-4 sentences where generated texts have 8-10, so the shared sign costs less
here than in generation; the figure ranks settings, it does not predict ROC-AUC.

    python -m research.text_evidence --config robust
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import torch

from data.sentence_rewrites import read_jsonl_gz
from research.common import DATA, choose, flip_model, rewrite_pairs, rewritten, section_keys
from watermark.api import Watermark
from watermark.config.shipped import shipped_path
from watermark.config.watermark_config import WatermarkConfig
from watermark.sentences.key import SentenceKey
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.significance import sentence_test

NORMAL = torch.distributions.Normal(0.0, 1.0)


def document_pools(
    layer: SentenceLayer, split: str, candidates: int, data: Path = DATA
) -> list[list[torch.Tensor]]:
    """Per document of ``split`` with at least 3 pools: the outputs (N, D) of each pool's
    first ``candidates`` candidates, the pools in the document's order."""
    by_doc: dict[str, list[tuple[int, list[str]]]] = defaultdict(list)
    for r in read_jsonl_gz(Path(data) / "pools.jsonl.gz"):
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


def kept_text(key: SentenceKey, pools: list[torch.Tensor], choice: str) -> torch.Tensor:
    """Outputs (n, D) of the text the layer writes from one candidate of each pool in turn,
    each chosen after the sentence kept before it (the first after none)."""
    text: list[torch.Tensor] = []
    for v in pools:
        text.append(v[choose(key, v, text[-1] if text else None, choice)])
    return torch.stack(text)


def measure(
    cfg: WatermarkConfig,
    docs: list[list[torch.Tensor]],
    kept: torch.Tensor,
    args: argparse.Namespace,
) -> dict:
    """The texts' probit z before and after the simulated rewrite under ``cfg``'s rule."""
    s = cfg.sentences
    tested = section_keys(s, args.keys, docs[0][0].shape[1])
    rng = torch.Generator().manual_seed(0)
    before, after = [], []
    for key in tested:
        for pools in docs:
            text = kept_text(key, pools, s.choice)
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, nargs="+", default=[shipped_path("robust")])
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--pool-split", default="train")
    parser.add_argument("--kind", default="forced")
    parser.add_argument("--split", default="val", help="the rewrite pairs' split")
    parser.add_argument("--draws", type=int, default=4, help="simulated rewrites per text")
    parser.add_argument("--data", type=Path, default=DATA, help="pools and rewrites folder")
    return parser


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints one JSON line per config (``wm``: the watermark whose SE and SM read the
    texts, instead of loading the first ``--config``)."""
    args = _parser().parse_args(argv)
    wm = wm or Watermark.load(args.config[0])
    if wm.sentences is None:
        raise SystemExit(f"error: {args.config[0]} has the sentence layer off")
    docs = document_pools(wm.sentences, args.pool_split, args.candidates, args.data)
    kept = flip_model(*rewrite_pairs(wm.sentences, args.kind, args.split, data=args.data))
    for path in args.config:  # the same SE and SM: only the key and the rule differ
        cfg = WatermarkConfig.load(path)
        if (cfg.sentences.mapper, cfg.sentences.embedder) != (
            wm.config.sentences.mapper,
            wm.config.sentences.embedder,
        ):
            raise SystemExit(f"error: {path} reads another SE or SM than {args.config[0]}")
        row = {
            "config": str(path),
            "candidates": args.candidates,
            "pool_split": args.pool_split,
            "kind": args.kind,
            "split": args.split,
            "documents": len(docs),
            "kept_by_bin": [round(k, 3) for k in kept.tolist()],
        }
        print(json.dumps({**row, **measure(cfg, docs, kept, args)}), flush=True)


if __name__ == "__main__":
    main()
