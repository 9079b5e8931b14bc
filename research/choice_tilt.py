"""Whether a sentence choice tilts what the layer keeps, apart from the key (issue 79; a script
printing JSON lines).

A choice by a keyed score is unbiased over keys only if every candidate is equally likely to win
under a random key. The ``survival`` choice ranks a candidate by its z expected after a
rewrite, whose spread over keys grows with its margins, so candidates whose outputs sit far
from zero (short or repetitive sentences, perhaps) may win more often under every key. On the
held-out pools of ``data/sentence-key/pools.jsonl.gz`` (one prefix, the generator's next
sentences), for the first N candidates and K random keys of the config's sentence settings,
each choice (and a uniform pick, the reference) keeps one candidate per pool and key. Printed
per choice:

- ``tilt``: the mean over pools of the total variation distance between how often each
  candidate is kept over the K keys and 1/N, beside ``tilt_null``, the same for K uniform
  picks (what chance alone gives with K keys), and ``tilt_null_95``, its 95th percentile over
  200 such draws;
- the kept candidates' mean ``words``, share of ``short`` ones (under 4 words), ``repeat``
  (1 - distinct words / words), ``margin`` (mean |output| over the D outputs, in units of the
  pool's mean) and, with ``--nll``, ``nll`` (the oracle's mean negative log-likelihood per
  token of the sentence after its prefix), each minus the pool's mean over its N candidates
  (``*_gap``: 0 for a choice that ignores them).

    python research/choice_tilt.py --config configs/watermark-robust.json
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
from mapper.sentence_metrics import keys  # noqa: E402
from research.surviving_evidence import pool_outputs  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.base import SENTENCE_CHOICES as CHOICES  # noqa: E402

DATA = ROOT / "data" / "sentence-key"


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


def picks_of(tested: list, pools: list[torch.Tensor], choice: str) -> torch.Tensor:
    """Long (K, P): the candidate each key keeps of each pool's outputs (N, D) under ``choice``,
    as the layer ranks them (the first of equals)."""
    rows = []
    for key in tested:
        rates = [key.rate(p.float(), key.groups(p.float(), None), choice) for p in pools]
        rows.append([int(torch.argmax(r)) for r in rates])
    return torch.tensor(rows)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs/watermark-robust.json")
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--pool-split", default="heldout")
    parser.add_argument("--nll", action="store_true", help="score the oracle's NLL too (slow)")
    parser.add_argument("--oracle", default="smollm2-135m")
    args = parser.parse_args()
    wm = Watermark.load(args.config)
    if wm.sentences is None:
        raise SystemExit(f"error: {args.config} has the sentence layer off")
    s, n = wm.config.sentences, args.candidates
    tested = keys(wm.sentences.semantic.num_dims, args.keys, bits=s.bits,
                  context_bits=s.context_bits, keying=s.keying, test=s.test,
                  power=s.weight_power)  # fmt: skip
    rows = [
        r for r in read_jsonl_gz(DATA / "pools.jsonl.gz")
        if r["split"] == args.pool_split and len([c for c in r["candidates"] if c]) >= n
    ]  # fmt: skip
    texts = [[c for c in r["candidates"] if c][:n] for r in rows]
    pools = [p[:n] for p in pool_outputs(wm.sentences, args.pool_split) if len(p) >= n]
    if len(pools) != len(texts):
        raise SystemExit("error: pools and their texts disagree")
    values = {name: torch.tensor([[words_stats(t)[i] for t in pool] for pool in texts])
              for i, name in enumerate(("words", "short", "repeat"))}  # fmt: skip
    size = torch.stack([p.abs().mean(1) for p in pools])
    values["margin"] = size / size.mean(1, keepdim=True)
    if args.nll:
        from watermark.models.loaders import load_lm

        model, tokenizer = load_lm(args.oracle)
        values["nll"] = torch.tensor([nll(model, tokenizer, r["prefix"], t)
                                      for r, t in zip(rows, texts)])  # fmt: skip
    draw = torch.Generator().manual_seed(0)
    nulls = [tilt(torch.randint(0, n, (len(tested), len(pools)), generator=draw), n)
             for _ in range(200)]  # fmt: skip
    uniform = torch.randint(0, n, (len(tested), len(pools)), generator=draw)
    null, null_95 = sum(nulls) / len(nulls), float(torch.tensor(nulls).quantile(0.95))
    choices = {"uniform": uniform}
    for choice in CHOICES:
        choices[choice] = picks_of(tested, pools, choice)
    for choice, picks in choices.items():
        found = {"config": str(args.config), "choice": choice, "candidates": n,
                 "keys": len(tested), "pools": len(pools), "tilt": round(tilt(picks, n), 4),
                 "tilt_null": round(null, 4), "tilt_null_95": round(null_95, 4)}  # fmt: skip
        found.update({f"{k}_gap": round(gap(picks, v), 4) for k, v in values.items()})
        found.update({f"{k}_pool": round(float(v.mean()), 4) for k, v in values.items()})
        print(json.dumps(found), flush=True)


if __name__ == "__main__":
    main()
