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
centre. The weights are the original sentence's (``weight_swap_check.py``, run at commit
``4912ceb`` and removed in 0.10, checked that this does not flatter a weight power above 1).
The kept candidate is the layer's choice (:meth:`~watermark.sentences.key.SentenceKey.order`),
each pool's candidates read after the prefix's last sentence, as generation reads a next
sentence.

    python -m research.surviving_evidence --config robust
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from mapper.sentence_metrics import (
    kept_by_bin,
    pool_spread,
    rewrite_agreement,
    surviving_evidence,
    unrelated_agreement,
)
from research.common import DATA, read_pools, rewrite_pairs, section_keys
from watermark.api import Watermark
from watermark.config.shipped import shipped_path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=shipped_path("robust"))
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
    parser.add_argument("--data", type=Path, default=DATA, help="pools and rewrites folder")
    return parser


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints one JSON line per choice and N (``wm``: the watermark to read with, instead of
    loading ``--config``)."""
    args = _parser().parse_args(argv)
    wm = wm or Watermark.load(args.config)
    layer = wm.sentences
    if layer is None:
        raise SystemExit(f"error: {args.config} has the sentence layer off")
    settings = wm.config.sentences
    tested = section_keys(settings, args.keys, layer.semantic.num_dims)
    found = read_pools(layer, args.pool_split, 0, args.centre, args.context, args.data)
    pools, previous = [p.v for p in found], [p.previous for p in found]
    v, w = rewrite_pairs(layer, args.kind, args.split, args.centre, args.context, args.data)
    stability = rewrite_agreement(v, w, tested)
    kept = kept_by_bin(stability)
    firsts = torch.stack([p[0] for p in pools])
    others = torch.stack([p[1] for p in pools]).roll(1, 0)  # a sentence of another pool
    common = {
        "config": str(args.config),
        "kind": args.kind,
        "split": args.split,
        "pool_split": args.pool_split,
        "centre": args.centre,
        "power": settings.weight_power,
    }
    common.update(pairs=stability["pairs"])
    common.update(stability=stability["keyed"], kept_by_bin=[round(k, 3) for k in kept])
    common.update(unrelated=unrelated_agreement(firsts, others)["unrelated"])
    common.update(lean=pool_spread(pools, firsts, tested)["lean"], pools=len(pools))
    for choice in args.choices.split(","):
        for n in map(int, args.candidates.split(",")):
            found = surviving_evidence(pools, tested, kept, n, choice, previous)
            found["z_after_ci95"] = [round(x, 4) for x in found["z_after_ci95"]]
            found = {k: round(x, 4) if isinstance(x, float) else x for k, x in found.items()}
            print(json.dumps({**common, **found}), flush=True)


if __name__ == "__main__":
    main()
