"""What a real rewrite leaves of the sentences the layer kept, against what the flip model
predicted (issue 79; a script printing JSON lines).

The figure of merit (``research/surviving_evidence.py``) predicts a kept sentence's z after a
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
rewrite left as they were are skipped.

    python research/kept_rewrites.py --config configs/watermark-robust.json \
        --method ours-1a1e92dd7bbd8611
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.cache_keys import text_hash  # noqa: E402
from evaluation.store import Store  # noqa: E402
from mapper.sentence_data import complete_sentences  # noqa: E402
from mapper.sentence_metrics import nearest  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.sentences.key import margin_bins, margins  # noqa: E402

FORCED = "llm_forced[qwen2.5-coder-1.5b]@t1r8+facts|1.0|0"


def pairs(store: Store, method: str, attack: str) -> list[tuple[str, str]]:
    """(generated text, its rewrite) of every text of ``method`` that ``attack`` changed."""
    rewrites = store.table("attacks")
    found = []
    for key, rec in sorted(store.table("generations").items()):
        if key.startswith(method + "|"):
            done = rewrites.get(f"{attack}|{text_hash(rec['text'])}")
            if done and done["text"].strip() != rec["text"].strip():
                found.append((rec["text"], done["text"]))
    return found


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--method", required=True, help="the generation cache key's prefix")
    parser.add_argument("--attack", default=FORCED, help="the attack cache key's prefix")
    parser.add_argument("--run", type=Path, default=ROOT / "runs/eval/survive/cache")
    parser.add_argument("--seed", type=Path, default=ROOT / "data/eval-cache/sentence-rewrites")
    args = parser.parse_args()
    wm = Watermark.load(args.config)
    layer = wm.sentences
    if layer is None:
        raise SystemExit(f"error: {args.config} has the sentence layer off")
    key = layer.key
    texts = pairs(Store(args.run, [args.seed]), args.method, args.attack)
    if not texts:
        raise SystemExit(f"error: no rewritten texts of {args.method} under {args.attack}")
    originals, rewrites, merged, total = [], [], 0, 0
    for text, rewrite in texts:
        a, b = complete_sentences(text), complete_sentences(rewrite)
        if a and b:
            pick = nearest(layer.semantic.embed(a), layer.semantic.embed(b)).tolist()
            originals += a
            rewrites += [b[j] for j in pick]
            merged += len(pick) - len(set(pick))
            total += len(pick)
    v, w = layer.outputs(originals), layer.outputs(rewrites)
    groups, groups_w = key.groups(v, None), key.groups(w, None)
    found = {
        "config": str(args.config),
        "method": args.method,
        "texts": len(texts),
        "sentences": len(originals),
        "z": key.evidence(v, groups).mean().item(),
        "z_model": key.survival(v, groups).mean().item(),
        "z_real": key.evidence(w, groups_w).mean().item(),
        "z_real_own_weights": real_hits_own_weights(key, v, w, groups_w).mean().item(),
        "kept_by_bin": [round(k, 3) for k in kept_share(v, w, key.dims)],
        "merged": merged / total,
    }
    print(json.dumps({k: round(x, 4) if isinstance(x, float) else x for k, x in found.items()}))


if __name__ == "__main__":
    main()
