"""Whether the sentence layer's context groups would survive a rewrite better if the context
outputs were the mapper outputs a rewrite flips least.

A sentence's group is the signs of its ``context_bits`` own context outputs; a rewrite that
flips any of them reads the sentence under another group's targets, which costs the robust
config most of what it loses per kept sentence (``docs/research/sentence-layer.md``, "Every
lever replayed on real rewrites"). This reads how often each of the D outputs flips on the
forced rewrites of the ``train`` passages (``data/sentence-key/rewrites.jsonl.gz``, each
sentence paired with the nearest sentence of its rewrite, :func:`research.common.rewrite_pairs`)
and, on the held-out pools' real rewrites (the replay's seed, each candidate paired with the
nearest sentence of its rewrite), the share of candidates whose context outputs all keep their
signs: for random context outputs (the key's way) and for random ones among the ``--top`` the
train rewrites flipped least; and what that is worth, the replay's z of the kept sentence's
rewrite (:mod:`research.replay`) under keys whose context outputs are drawn among those, against
the config's keys. Intervals: bootstrap over held-out pools, the differences paired.

    python -m research.context_stability --config robust --top 8,32,128
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from mapper.sentence_metrics import nearest
from research.common import DATA, load_with_generator, rewrite_pairs, section_keys
from research.replay import Outputs, bootstrap, per_pool, pool_rows, replay_pools, sentences_of
from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.sentences.key import SentenceKey

ROOT = Path(__file__).resolve().parents[1]


def heldout_flips(pools: list[dict], outputs: Outputs) -> tuple[torch.Tensor, list[int]]:
    """Bool (P, D): which outputs of each held-out candidate the nearest sentence of its real
    rewrite flipped, and each row's pool index."""
    flips, pool_of = [], []
    for i, pool in enumerate(pools):
        v = outputs(pool["candidates"])
        for j, rewrite in enumerate(pool["rewrites"]):
            if rewrite:
                w = outputs([s for s, _ in sentences_of(rewrite)])
                near = nearest(v[j][None], w)[0]
                flips.append((w[near] > 0) != (v[j] > 0))
                pool_of.append(i)
    return torch.stack(flips), pool_of


def groups_kept(flips: torch.Tensor, dims: torch.Tensor, bits: int, draws: int) -> torch.Tensor:
    """Float (P,): per row of ``flips`` (P, D), the share of ``draws`` random sets of ``bits``
    context outputs among ``dims`` that keep all their signs (a fixed seed: reruns agree)."""
    rng = torch.Generator().manual_seed(0)
    kept = torch.zeros(flips.shape[0])
    for _ in range(draws):
        chosen = dims[torch.randperm(len(dims), generator=rng)[:bits]]
        kept += (~flips[:, chosen].any(dim=1)).float()
    return kept / draws


def pool_means(values: torch.Tensor, pool_of: list[int]) -> np.ndarray:
    """The mean of ``values`` (P,) per pool, in pool order."""
    index = torch.tensor(pool_of)
    return np.array([float(values[index == p].mean()) for p in sorted(set(pool_of))])


def stable_context(key: SentenceKey, order: torch.Tensor, top: int, seed: int) -> SentenceKey:
    """``key`` with its context outputs drawn (by ``seed``) among the first ``top`` of
    ``order`` (the outputs by flip rate) that it does not test (all of them, if fewer)."""
    tested = set(key.dims.tolist())
    allowed = torch.tensor([int(d) for d in order if int(d) not in tested][:top])
    pick = torch.randperm(len(allowed), generator=torch.Generator().manual_seed(seed))
    return replace(key, context_dims=allowed[pick[: key.context_dims.numel()]])


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints one JSON line per ``--top``: the flip rates, the groups kept and the z after the
    rewrite, stable context outputs against random ones."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="robust")
    parser.add_argument("--top", default="32", help="the outputs flipped least, kept (a list)")
    parser.add_argument("--keys", type=int, default=32, help="random keys of the replay")
    parser.add_argument("--draws", type=int, default=2000, help="random context sets")
    parser.add_argument("--seeds", type=Path, default=DATA, help="rewrites, pools, their rewrites")
    parser.add_argument("--candidates", type=int, default=8, help="per pool, as rewritten")
    parser.add_argument("--fit-split", default="train", help="the rewrites the rates are read on")
    args = parser.parse_args(argv)
    cfg = as_config(args.config)
    bits, tops = cfg.sentences.context_bits, [int(t) for t in args.top.split(",")]
    if bits < 1 or min(tops) < bits:
        raise SystemExit(f"error: need context bits >= 1 and every --top >= {bits}")
    wm = wm or load_with_generator(cfg)
    v, w = rewrite_pairs(wm.sentences, "forced", args.fit_split, data=args.seeds)
    rates = ((v > 0) != (w > 0)).float().mean(dim=0)
    order = torch.argsort(rates)
    pools = replay_pools(args.seeds, args.candidates)
    outputs = Outputs(wm, pools)
    flips, pool_of = heldout_flips(pools, outputs)
    held = flips.float().mean(dim=0)
    random_kept = pool_means(groups_kept(flips, order, bits, args.draws), pool_of)
    keys = section_keys(cfg.sentences, args.keys, outputs.dims)
    choice = cfg.sentences.choice
    base = per_pool([pool_rows(keys, choice, p, outputs) for p in pools])[:, 1]
    for top in tops:
        kept = pool_means(groups_kept(flips, order[:top], bits, args.draws), pool_of)
        stable = [stable_context(key, order, top, k) for k, key in enumerate(keys)]
        z = per_pool([pool_rows(stable, choice, p, outputs) for p in pools])[:, 1]
        line = {
            "top": top,
            "fit_pairs": len(v),
            "heldout_pairs": len(flips),
            "pools": len(pools),
            "dims": len(rates),
            "context_bits": bits,
            "keys": args.keys,
            "flip_rate_fit": round(float(rates.mean()), 4),
            "flip_rate_heldout": round(float(held.mean()), 4),
            "rate_correlation": round(float(np.corrcoef(rates.numpy(), held.numpy())[0, 1]), 4),
            "stable_flip_rate_heldout": round(float(held[order[:top]].mean()), 4),
            "groups_kept_random": bootstrap(random_kept),
            "groups_kept_stable": bootstrap(kept),
            "groups_kept_difference": bootstrap(kept - random_kept),
            "z_rewritten_base": bootstrap(base),
            "z_rewritten_stable": bootstrap(z),
            "z_rewritten_difference": bootstrap(z - base),
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
