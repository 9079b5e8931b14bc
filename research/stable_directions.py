"""Whether any direction of the sentence embedding keeps its sign under a rewrite well enough to
carry a context group that survives.

The mapper's outputs flip 18% of their signs under the forced rewrite, the 8 most stable 12%
(:mod:`research.context_stability`). This looks for better directions in the layer's SE
embedding u itself, fitted on the forced rewrites of the ``train`` passages (each sentence
paired with the nearest sentence of its rewrite, :func:`research.common.paired_sentences`) and
read on the held-out pools' real rewrites (the replay's seed): the sign of d . (u - mean), for

* ``random``: 256 random directions (what a sign hash of u does);
* ``pca``: the directions of largest variance;
* ``lda s``: those that maximise the variance between sentences over the variance between a
  sentence and its rewrite, the latter shrunk towards the identity by ``s`` (its trace share).

Printed per family: the held-out flip rate of its first ``--top`` directions, each one's, the
train flip rate (how much the fit learnt by heart) and how evenly each splits the sentences.

    python -m research.stable_directions --config robust --top 8
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from mapper.sentence_metrics import nearest
from research.common import DATA, load_with_generator, paired_sentences, rewrite_texts
from research.replay import replay_pools, sentences_of
from watermark.api import Watermark
from watermark.config.watermark_config import as_config

ROOT = Path(__file__).resolve().parents[1]


def train_pairs(wm: Watermark, data: Path, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Embeddings (P, E) of the ``split`` passages' sentences and of their rewrites' nearest."""
    found = paired_sentences(wm.sentences, rewrite_texts("forced", split, data))
    embed = wm.sentences.semantic.embed
    return embed(found["originals"]).double().cpu(), embed(found["rewrites"]).double().cpu()


def heldout_pairs(wm: Watermark, data: Path, candidates: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Embeddings (P, E) of the held-out candidates with a rewrite and of its nearest sentence."""
    embed = wm.sentences.semantic.embed
    originals, rewrites = [], []
    for pool in replay_pools(data, candidates):
        for text, rewrite in zip(pool["candidates"], pool["rewrites"]):
            if rewrite:
                found = embed([text] + [s for s, _ in sentences_of(rewrite)]).double().cpu()
                near = nearest(found[:1], found[1:])[0]
                originals.append(found[0])
                rewrites.append(found[1 + near])
    return torch.stack(originals), torch.stack(rewrites)


def families(u: torch.Tensor, w: torch.Tensor, shrinks: list[float]) -> dict[str, torch.Tensor]:
    """Directions (K, E) per family, best first, fitted on pairs (u, w) (P, E)."""
    both = torch.cat([u, w])
    centred = both - both.mean(0)
    total = centred.T @ centred / len(both)
    moved = (u - w).T @ (u - w) / (2 * len(u))
    dims = u.shape[1]
    rng = torch.Generator().manual_seed(0)
    found = {"random": torch.randn(256, dims, generator=rng, dtype=torch.float64)}
    found["pca"] = torch.linalg.eigh(total)[1].T.flip(0)
    for s in shrinks:
        within = moved + s * torch.eye(dims, dtype=torch.float64) * moved.trace() / dims
        inverse = torch.linalg.inv(torch.linalg.cholesky(within))
        vectors = torch.linalg.eigh(inverse @ total @ inverse.T)[1]
        found[f"lda {s}"] = (inverse.T @ vectors).T.flip(0)
    return found


def flip_rates(u: torch.Tensor, w: torch.Tensor, mean: torch.Tensor, dirs: torch.Tensor):
    """Float (K,): the share of pairs (u, w) (P, E) whose sign of d . (x - mean) differs."""
    return (((u - mean) @ dirs.T > 0) != ((w - mean) @ dirs.T > 0)).double().mean(0)


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints one JSON line per family of directions."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="robust")
    parser.add_argument("--top", type=int, default=8, help="directions of each family read")
    parser.add_argument("--shrinks", default="0.01,1,10", help="the LDA's shrinkages")
    parser.add_argument("--seeds", type=Path, default=DATA, help="rewrites, pools, their rewrites")
    parser.add_argument("--candidates", type=int, default=8, help="per pool, as rewritten")
    parser.add_argument("--fit-split", default="train", help="the rewrites the fit reads")
    args = parser.parse_args(argv)
    cfg = as_config(args.config)
    if cfg.sentences.bits < 1:
        raise SystemExit("error: the config has no sentence layer")
    wm = wm or load_with_generator(cfg)
    u, w = train_pairs(wm, args.seeds, args.fit_split)
    hu, hw = heldout_pairs(wm, args.seeds, args.candidates)
    mean = torch.cat([u, w]).mean(0)
    shrinks = [float(s) for s in args.shrinks.split(",")]
    for name, dirs in families(u, w, shrinks).items():
        dirs = dirs[: args.top] if name != "random" else dirs
        held = flip_rates(hu, hw, mean, dirs)
        line = {
            "directions": name,
            "read": len(dirs),
            "fit_pairs": len(u),
            "heldout_pairs": len(hu),
            "flip_heldout": round(float(held.mean()), 4),
            "flip_heldout_each": [round(float(x), 3) for x in held[: args.top]],
            "flip_fit": round(float(flip_rates(u, w, mean, dirs).mean()), 4),
            "positive_share": [
                round(float(x), 2) for x in ((hu - mean) @ dirs[: args.top].T > 0).double().mean(0)
            ],
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
