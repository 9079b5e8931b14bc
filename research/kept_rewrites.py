"""What a real rewrite leaves of the sentences the layer kept, against what the flip model
predicted (issue 79; a script printing JSON lines).

The figure of merit (:mod:`research.surviving_evidence`) predicts a kept sentence's z after a
rewrite from its margins: each tested sign survives with the probability measured for its
margin bin on held-out rewrite pairs of *unselected* sentences. Here the sentences are the
ones generation kept: the generated texts of one method in an evaluation cache, under the
config's key (the demo key, as the evaluation generates), each complete sentence paired with
the sentence of its rewrite nearest to it in the layer's SE. Printed: per-sentence ``z`` as
generated, ``z_model`` (the flip model's expectation,
:meth:`~watermark.sentences.key.SentenceKey.survival`), ``z_real`` (the paired rewrite
sentence's z in its own group), ``z_real_own_weights`` (the same hits weighed by the original's
margins, as the flip model weighs them: the rest of the gap is the rewrite's smaller
margins), the kept share of the tested signs by margin bin, and
``merged`` (the share of rewrite sentences nearest to more than one original). Texts that the
rewrite left as they were are skipped. Each sentence is read in its group as detection reads it
(under a key read from the previous sentence, the sentence before it in its own text).

    python -m research.kept_rewrites --config robust \
        --method ours-1a1e92dd7bbd8611
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from evaluation.store import Store
from research.common import ROOT, paired_sentences, rewritten_texts
from watermark.api import Watermark
from watermark.sentences.key import SentenceKey, margin_bins, margins
from watermark.sentences.layer import SentenceLayer

FORCED = "llm_forced[qwen2.5-coder-1.5b]@t1r8+facts|1.0|0"


def kept_share(v: torch.Tensor, w: torch.Tensor, dims: torch.Tensor) -> list[float]:
    """Share of the tested outputs ``dims`` whose sign w (P, D) keeps from v (P, D), per margin
    bin of v (NaN for an empty bin)."""
    bins = margin_bins(margins(v))[:, dims]
    same = (v[:, dims] > 0) == (w[:, dims] > 0)
    return [float(same[bins == b].float().mean()) for b in range(int(bins.max()) + 1)]


def real_hits_own_weights(key, v: torch.Tensor, w: torch.Tensor, groups: torch.Tensor):
    """Float (P,): the z of the rewrites' hits (outputs w (P, D), ``groups``) weighed by the
    originals' margins (outputs v (P, D)) instead of their own: the originals' hits in those
    groups, each turned where the rewrite's differs (:meth:`SentenceKey.evidence` with the
    kept signs as ``kept``)."""
    agree = key.hits(w, groups) == key.hits(v, groups)
    return key.evidence(v, groups, agree)


def read_groups(
    layer: SentenceLayer, key: SentenceKey, v: torch.Tensor, contexts: list[list[str]]
) -> torch.Tensor:
    """Groups (P,) of sentences with outputs v (P, D) under ``key``, each read after the last
    sentence of its context (none for a text's first), as detection reads it."""
    previous: list = [None] * len(v)
    if key.context_dims.numel() and not key.own:
        rows = [i for i, c in enumerate(contexts) if c]
        found = layer.outputs([contexts[i][-1] for i in rows])
        for i, row in zip(rows, found):
            previous[i] = row
    return key.candidate_groups(v, previous)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--method", required=True, help="the generation cache key's prefix")
    parser.add_argument("--attack", default=FORCED, help="the attack cache key's prefix")
    parser.add_argument("--run", type=Path, default=ROOT / "runs/eval/survive/cache")
    parser.add_argument("--seed", type=Path, default=ROOT / "data/eval-cache/sentence-rewrites")
    return parser


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints one JSON line (``wm``: the watermark to read with, instead of loading
    ``--config``)."""
    args = _parser().parse_args(argv)
    wm = wm or Watermark.load(args.config)
    layer = wm.sentences
    if layer is None:
        raise SystemExit(f"error: {args.config} has the sentence layer off")
    key = layer.key
    texts = rewritten_texts(Store(args.run, [args.seed]), args.method, args.attack)
    if not texts:
        raise SystemExit(f"error: no rewritten texts of {args.method} under {args.attack}")
    found = paired_sentences(layer, texts, context=1)
    originals = found["originals"]
    v, w = layer.outputs(originals), layer.outputs(found["rewrites"])
    groups = read_groups(layer, key, v, found["original_contexts"])
    groups_w = read_groups(layer, key, w, found["rewrite_contexts"])
    row = {
        "config": str(args.config),
        "method": args.method,
        "texts": len(texts),
        "sentences": len(originals),
        "z": key.evidence(v, groups).mean().item(),
        "z_model": key.survival(v, groups).mean().item(),
        "z_real": key.evidence(w, groups_w).mean().item(),
        "z_real_own_weights": real_hits_own_weights(key, v, w, groups_w).mean().item(),
        "kept_by_bin": [round(k, 3) for k in kept_share(v, w, key.dims)],
        "merged": found["merged"] / len(originals),
    }
    print(json.dumps({k: round(x, 4) if isinstance(x, float) else x for k, x in row.items()}))


if __name__ == "__main__":
    main()
