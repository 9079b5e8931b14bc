"""Whether a sentence choice tilts what the layer keeps, apart from the key (issue 79; a script
printing JSON lines).

A choice by a keyed score is unbiased over keys only if every candidate is equally likely to win
under a random key. The ``survival`` choice ranks a candidate by its z expected after a
rewrite, whose spread over keys grows with its margins, so candidates whose outputs sit far
from zero (short or repetitive sentences, perhaps) may win more often under every key. On the
held-out pools of ``data/sentence-key/pools.jsonl.gz`` (one prefix, the generator's next
sentences), for the first N candidates and K random keys of the config's sentence settings,
each choice (and a uniform pick, the reference) keeps one candidate per pool and key, as the
layer keeps it (:func:`research.common.choose`, each candidate read after the prefix's last
sentence). Printed per choice:

- ``tilt``: the mean over pools of the total variation distance between how often each
  candidate is kept over the K keys and 1/N, beside ``tilt_null``, the same for K uniform
  picks (what chance alone gives with K keys), and ``tilt_null_95``, its 95th percentile over
  200 such draws;
- the kept candidates' mean ``words``, share of ``short`` ones (under 4 words), ``repeat``
  (1 - distinct words / words), ``margin`` (mean |output| over the D outputs, in units of the
  pool's mean) and, with ``--nll``, ``nll`` (the oracle's mean negative log-likelihood per
  token of the sentence after its prefix), each minus the pool's mean over its N candidates
  (``*_gap``: 0 for a choice that ignores them).

    python -m research.choice_tilt --config robust
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from research.common import DATA, Pool, choose, read_pools, section_keys
from watermark.api import Watermark
from watermark.base import SENTENCE_CHOICES as CHOICES
from watermark.config.shipped import shipped_path


def kept_counts(picks: torch.Tensor, candidates: int) -> torch.Tensor:
    """How often each candidate is kept (P, N) from the picks (K, P) of K keys over P pools."""
    counts = torch.zeros(picks.shape[1], candidates)
    counts.scatter_add_(1, picks.T.long(), torch.ones(picks.T.shape))
    return counts


def tilt(picks: torch.Tensor, candidates: int) -> float:
    """Mean over pools of the total variation distance between the kept shares of the picks
    (K, P) and the uniform 1/N."""
    share = kept_counts(picks, candidates) / picks.shape[0]
    return float((share - 1 / candidates).abs().sum(1).mean() / 2)


def gap(picks: torch.Tensor, values: torch.Tensor) -> float:
    """Mean over keys and pools of the kept candidate's value less its pool's mean, for the
    picks (K, P) and candidates' values (P, N)."""
    kept = values.gather(1, picks.T.long())  # (P, K)
    return float((kept - values.mean(1, keepdim=True)).mean())


def picks_of(tested: list, pools: list[Pool], choice: str) -> torch.Tensor:
    """Long (K, P): the candidate each key keeps of each pool under ``choice``, as the layer
    keeps it (the first of equals)."""
    return torch.tensor([[choose(key, p.v, p.previous, choice) for p in pools] for key in tested])


def words_stats(sentence: str) -> tuple[float, float, float]:
    """(words, short, repeat) of one sentence: its word count, whether it has under 4 words,
    and 1 - distinct words / words (lower-cased, punctuation stripped)."""
    found = [w.strip(".,;:!?\"'()").lower() for w in sentence.split()]
    found = [w for w in found if w]
    n = len(found)
    return float(n), float(n < 4), 1 - len(set(found)) / n if n else 0.0


@torch.no_grad()
def nll(model, tokenizer, prefix: str, sentences: list[str]) -> list[float]:
    """The oracle's mean negative log-likelihood per token of each sentence after ``prefix``."""
    head = tokenizer(prefix, return_tensors="pt").input_ids[0]
    found = []
    for sentence in sentences:
        tail = tokenizer(" " + sentence, return_tensors="pt", add_special_tokens=False).input_ids[0]
        ids = torch.cat([head, tail])[None]
        logp = model(ids).logits[0, :-1].float().log_softmax(-1)
        picked = logp[len(head) - 1 :].gather(1, ids[0, len(head) :, None])
        found.append(-float(picked.mean()))
    return found


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=shipped_path("robust"))
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--pool-split", default="heldout")
    parser.add_argument("--nll", action="store_true", help="score the oracle's NLL too (slow)")
    parser.add_argument("--oracle", default="smollm2-135m")
    parser.add_argument("--data", type=Path, default=DATA, help="the pools' folder")
    return parser


def pool_values(pools: list[Pool], args: argparse.Namespace) -> dict[str, torch.Tensor]:
    """Per statistic, the candidates' values (P, N): words, short, repeat, margin and, with
    ``--nll``, the oracle's NLL."""
    values = {
        name: torch.tensor([[words_stats(t)[i] for t in p.texts] for p in pools])
        for i, name in enumerate(("words", "short", "repeat"))
    }
    size = torch.stack([p.v.abs().mean(1) for p in pools])
    values["margin"] = size / size.mean(1, keepdim=True)
    if args.nll:
        from watermark.models.loaders import load_lm

        model, tokenizer = load_lm(args.oracle)
        values["nll"] = torch.tensor([nll(model, tokenizer, p.prefix, p.texts) for p in pools])
    return values


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints one JSON line per choice (``wm``: the watermark to read with, instead of loading
    ``--config``)."""
    args = _parser().parse_args(argv)
    wm = wm or Watermark.load(args.config)
    if wm.sentences is None:
        raise SystemExit(f"error: {args.config} has the sentence layer off")
    n = args.candidates
    tested = section_keys(wm.config.sentences, args.keys, wm.sentences.semantic.num_dims)
    pools = [
        p for p in read_pools(wm.sentences, args.pool_split, data=args.data) if len(p.texts) >= n
    ]
    for p in pools:
        p.texts, p.v = p.texts[:n], p.v[:n].float()
    values = pool_values(pools, args)
    draw = torch.Generator().manual_seed(0)
    nulls = [
        tilt(torch.randint(0, n, (len(tested), len(pools)), generator=draw), n) for _ in range(200)
    ]
    uniform = torch.randint(0, n, (len(tested), len(pools)), generator=draw)
    null, null_95 = sum(nulls) / len(nulls), float(torch.tensor(nulls).quantile(0.95))
    choices = {"uniform": uniform}
    for choice in CHOICES:
        choices[choice] = picks_of(tested, pools, choice)
    for choice, picks in choices.items():
        found = {
            "config": str(args.config),
            "choice": choice,
            "candidates": n,
            "keys": len(tested),
            "pools": len(pools),
            "tilt": round(tilt(picks, n), 4),
            "tilt_null": round(null, 4),
            "tilt_null_95": round(null_95, 4),
        }
        found.update({f"{k}_gap": round(gap(picks, v), 4) for k, v in values.items()})
        found.update({f"{k}_pool": round(float(v.mean()), 4) for k, v in values.items()})
        print(json.dumps(found), flush=True)


if __name__ == "__main__":
    main()
