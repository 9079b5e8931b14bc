"""The figure of merit of a sentence key space: the evidence that survives a rewrite (issue 79;
a script printing JSON lines).

A config's sentence layer (its SE and SM) reads the 96 held-out pools of
``data/sentence-key/pools.jsonl.gz`` (one prefix, 16 next sentences sampled by the generator).
Under 32 random keys of the config's sentence settings, the candidate the layer keeps among the
first N of each pool has a per-sentence z in its key's test; after a rewrite it keeps each sign
with the probability measured for its margin on the held-out forced-rewrite pairs of
``data/sentence-key/rewrites.jsonl.gz`` (each original sentence paired with the rewrite's
sentence nearest to it in the SE), so its expected z falls to ``z_after``
(:func:`mapper.sentence_metrics.surviving_evidence`), in the config's test (its
``sentences.test`` and ``weight_power``). Beside it, for the same key space:
``stability`` (the keyed outputs' kept signs on those pairs), ``unrelated`` (the share of equal
signs of sentences of different pools) and ``lean`` (how far a pool's candidates agree). Each
N is measured under both of the layer's choices (``sentences.choice``): the best ``score``,
and the best z expected after a rewrite under the product's flip model (``survival``).

``--pool-split val --split val`` reads the val rows instead (for choosing among key spaces);
``--kind round_trip --split val``, another rewrite. ``--centre A`` reads each sentence with
context centring: its embedding less A times how far the mean embedding of the ``--context``
sentences before it in its text (a pool's prefix, a passage, a rewrite) sits from the mapper's
centre. The weights are the original sentence's; ``research/weight_swap_check.py`` checks
that this does not flatter a weight power above 1.

    python research/surviving_evidence.py --config configs/watermark-robust.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from data.sentence_rewrites import read_jsonl_gz  # noqa: E402
from mapper.sentence_data import complete_sentences  # noqa: E402
from mapper.sentence_metrics import (  # noqa: E402
    kept_by_bin,
    keys,
    nearest,
    pool_spread,
    rewrite_agreement,
    surviving_evidence,
    unrelated_agreement,
)
from watermark.api import Watermark  # noqa: E402

DATA = ROOT / "data" / "sentence-key"


def read_outputs(layer, sentences: list[str], contexts: list[list[str]], centre: float):
    """Outputs (N, D) of ``sentences``; with ``centre`` > 0, context centring: each embedding
    less ``centre`` times how far the mean embedding of its context (the sentences before it
    in its text; none for a text's first) sits from the mapper's centre."""
    if not centre:
        return layer.outputs(sentences)
    u = layer.semantic.embed(sentences).float()
    mid = layer.semantic.mapper.center.float().cpu()
    flat = [s for c in contexts for s in c]
    found = layer.semantic.embed(flat).float().cpu() if flat else torch.zeros(0, len(mid))
    shift, start = torch.zeros_like(u), 0
    for i, context in enumerate(contexts):
        if context:
            shift[i] = found[start : start + len(context)].mean(0) - mid
        start += len(context)
    return layer.semantic.outputs((u.cpu() - centre * shift).to(u.dtype)).float().cpu()


def before(sentences: list[str], i: int, context: int) -> list[str]:
    """The ``context`` sentences before the i-th."""
    return sentences[max(0, i - context) : i]


def rewrite_pairs(layer, kind: str, split: str, centre: float = 0.0, context: int = 2):
    """Outputs (P, D) of the ``split`` passages' complete sentences and of the sentence of their
    rewrite nearest to each in the SE, for rewrites of ``kind`` (each read in its own text)."""
    originals, rewrites, ctx_a, ctx_b = [], [], [], []
    for r in read_jsonl_gz(DATA / "rewrites.jsonl.gz"):
        if r["split"] != split or r["kind"] != kind or not r.get("rewrite"):
            continue
        a, b = complete_sentences(r["text"]), complete_sentences(r["rewrite"])
        if a and b:
            pick = nearest(layer.semantic.embed(a), layer.semantic.embed(b)).tolist()
            originals += a
            rewrites += [b[j] for j in pick]
            ctx_a += [before(a, i, context) for i in range(len(a))]
            ctx_b += [before(b, j, context) for j in pick]
    return read_outputs(layer, originals, ctx_a, centre), read_outputs(
        layer, rewrites, ctx_b, centre
    )


def pool_outputs(layer, split: str, centre: float = 0.0, context: int = 2) -> list[torch.Tensor]:
    """Outputs (N_p, D) of each ``split`` pool's candidates (read after their prefix)."""
    pools = []
    for r in read_jsonl_gz(DATA / "pools.jsonl.gz"):
        if r["split"] != split:
            continue
        candidates = [c for c in r["candidates"] if c]
        prefix = complete_sentences(r["prefix"])
        prior = [before(prefix, len(prefix), context)] * len(candidates)
        pools.append(read_outputs(layer, candidates, prior, centre))
    return [p for p in pools if len(p) >= 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs/watermark-robust.json")
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--candidates", default="4,8,16")
    parser.add_argument("--kind", default="forced", help="the rewrites' kind")
    parser.add_argument(
        "--split", default="heldout", help="the rewrites' split (round_trip has only val rows)"
    )
    parser.add_argument(
        "--pool-split", default="heldout", help="the pools' split (val: for choosing)"
    )
    parser.add_argument("--centre", type=float, default=0.0, help="context centring's weight")
    parser.add_argument("--context", type=int, default=2, help="sentences of context read")
    parser.add_argument("--choices", default="score,survival")
    args = parser.parse_args()
    wm = Watermark.load(args.config)
    layer = wm.sentences
    if layer is None:
        raise SystemExit(f"error: {args.config} has the sentence layer off")
    settings = wm.config.sentences
    tested = keys(layer.semantic.num_dims, args.keys, bits=settings.bits,
                  context_bits=settings.context_bits, keying=settings.keying,
                  test=settings.test, power=settings.weight_power)  # fmt: skip
    pools = pool_outputs(layer, args.pool_split, args.centre, args.context)
    v, w = rewrite_pairs(layer, args.kind, args.split, args.centre, args.context)
    stability = rewrite_agreement(v, w, tested)
    kept = kept_by_bin(stability)
    firsts = torch.stack([p[0] for p in pools])
    others = torch.stack([p[1] for p in pools]).roll(1, 0)  # a sentence of another pool
    common = {"config": str(args.config), "kind": args.kind, "split": args.split,
              "pool_split": args.pool_split, "centre": args.centre,
              "power": settings.weight_power}  # fmt: skip
    common.update(pairs=stability["pairs"])
    common.update(stability=stability["keyed"], kept_by_bin=[round(k, 3) for k in kept])
    common.update(unrelated=unrelated_agreement(firsts, others)["unrelated"])
    common.update(lean=pool_spread(pools, firsts, tested)["lean"], pools=len(pools))
    for choice in args.choices.split(","):
        for n in map(int, args.candidates.split(",")):
            found = surviving_evidence(pools, tested, kept, n, choice)
            found["z_after_ci95"] = [round(x, 4) for x in found["z_after_ci95"]]
            found = {k: round(x, 4) if isinstance(x, float) else x for k, x in found.items()}
            print(json.dumps({**common, **found}), flush=True)


if __name__ == "__main__":
    main()
