"""The sentence layer's levers replayed on real rewrites, without generating (issue 89; prints
one JSON line per lever).

The seed ``data/sentence-key/pool_rewrites.jsonl.gz`` holds one real forced rewrite of each of
the first 8 candidates of the 96 held-out pools (:mod:`data.pool_rewrites`). For each pool,
each of ``--keys`` random keys and each lever (a setting of the config's ``sentences``
section), the product's choice keeps a candidate (:meth:`~watermark.sentences.key.SentenceKey
.order`, the rule :meth:`~watermark.sentences.layer.SentenceLayer.choose` applies: the pool's
8 candidates read after the prefix's last sentence), and the replay reads:

* ``z_generated``: the kept sentence's z in the key's test (:meth:`~watermark.sentences.key
  .SentenceKey.evidence`), as generated;
* ``z_rewritten``: the z of its real rewrite read as the detector reads a text
  (:func:`rewrite_z`: the rewrite cut into sentences, each complete one in its own group with its
  own margins, the hits pooled), where the judge accepted a rewrite;
* ``z_rewritten_first``: the same for candidate 0, the unchosen draw (the chance level after a
  rewrite: what the choice adds is the difference);
* ``signs_kept``: the share of the kept sentence's tested signs its rewrite's nearest sentence
  keeps.

Each figure is a mean over pools of the mean over keys, with a bootstrap 95% interval over
pools. The outputs of every sentence are computed once, by the config's sentence SE and mapper.

    python -m research.replay --config robust --keys 32

Levers the product does not have (:data:`KEY_LEVERS`): context groups that share most of
their targets (:func:`research.common.shared_targets`) and each sentence weighed by the chance
that a rewrite kept its group (:func:`research.common.group_kept`). Weights read on real
rewrites (the last line): a weight table of the margin bins fitted on the even pools' kept
rewrites (the hit rate by the *rewrite's* margin, as log-odds) and read on the odd pools,
against the shipped weights on the same pools. The table: ``docs/research/sentence-layer.md``.
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import torch

from data.sentence_rewrites import read_jsonl_gz
from evaluation.bootstrap import mean_interval
from mapper.sentence_metrics import nearest
from research.common import (
    choose,
    group_kept,
    load_with_generator,
    section_keys,
    shared_targets,
)
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig, as_config
from watermark.sentences.key import WEIGHT_STEPS, SentenceKey, margin_bins, margins
from watermark.sentences.spans import sentence_spans

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "data" / "sentence-key"
FIGURES = ("z_generated", "z_rewritten", "z_rewritten_first", "signs_kept")
# the levers: changes to the config's sentences section, by field
LEVERS = {
    "robust (2 own context bits, margin, power 1)": {},
    "power 2": {"weight_power": 2},
    "power 3": {"weight_power": 3},
    "power 4": {"weight_power": 4},
    "hits": {"test": "hits"},
    "no context bits": {"context_bits": 0},
    "no context bits, power 4": {"context_bits": 0, "weight_power": 4},
    "survival choice": {"choice": "survival"},
    "survival choice, power 4": {"choice": "survival", "weight_power": 4},
    "no context bits, survival, power 4 (0.9's finalist)": {
        "context_bits": 0, "choice": "survival", "weight_power": 4,
    },
}  # fmt: skip
# levers the product does not have, on the robust config's section: (change, shared, weigh)
# where ``shared`` is the share of each group's target signs drawn anew from group 0's
# (:func:`shared_targets`; 1: the product's independent groups) and ``weigh`` weighs each
# sentence by the chance that a rewrite keeps its group (:func:`research.common.group_kept`)
KEY_LEVERS = {
    "1 context bit": ({"context_bits": 1}, 1.0, False),
    "groups share 3/4 of their targets": ({}, 0.5, False),
    "groups share 7/8 of their targets": ({}, 0.25, False),
    "weighed by the chance the group is kept": ({}, 1.0, True),
    "share 3/4, weighed by the group kept": ({}, 0.5, True),
}  # fmt: skip


def replay_pools(seeds: Path, candidates: int = 8) -> list[dict]:
    """Per held-out pool whose first ``candidates`` candidates all ended a sentence: the
    prefix's last sentence, the candidates and their rewrites (``None`` where the judge
    rejected one or the seed has none)."""
    rewrites = {
        (r["id"], r["candidate"]): r["rewrite"]
        for r in read_jsonl_gz(seeds / "pool_rewrites.jsonl.gz")
    }
    found = []
    for pool in read_jsonl_gz(seeds / "pools.jsonl.gz"):
        texts = pool["candidates"][:candidates]
        if pool["split"] != "heldout" or len(texts) < candidates or not all(texts):
            continue
        a, b, _ = sentence_spans(pool["prefix"])[-1]
        found.append(
            {
                "id": pool["id"],
                "previous": pool["prefix"][a:b],
                "candidates": texts,
                "rewrites": [rewrites.get((pool["id"], j)) for j in range(candidates)],
            }
        )
    return found


class Outputs:
    """The mapper outputs (D,) of every sentence the replay reads, each embedded alone by the
    layer's SE and mapped by its mapper, computed once."""

    def __init__(self, wm: Watermark, pools: list[dict]) -> None:
        texts = set()
        for pool in pools:
            texts.add(pool["previous"])
            texts.update(pool["candidates"])
            for rewrite in filter(None, pool["rewrites"]):
                texts.update(s for s, _ in sentences_of(rewrite))
        order = sorted(texts)
        found = wm.sentence_outputs(order)
        self.rows = dict(zip(order, found))
        self.dims = int(found.shape[1])

    def __call__(self, sentences: list[str]) -> torch.Tensor:
        return torch.stack([self.rows[s] for s in sentences])


def sentences_of(text: str) -> list[tuple[str, bool]]:
    """The sentences of ``text`` as detection cuts them, each with whether it is complete."""
    return [(text[a:b], complete) for a, b, complete in sentence_spans(text)]


def weights_of(
    key: SentenceKey, v: torch.Tensor, table: torch.Tensor | None, weigh: bool = False
) -> torch.Tensor:
    """The test's weights of sentences with outputs v (N, D) under ``key`` (N, b), or under a
    weight ``table`` (4,) of the margin bins in its place; ``weigh``: each row times
    :func:`group_kept` (both levers the product does not have)."""
    if table is not None:
        found = table[margin_bins(margins(v))[:, key.dims]].float()
    else:
        found = key.weights(v)
        found = torch.ones(len(v), key.bits) if found is None else found.float()
    return found * group_kept(key, v)[:, None] if weigh else found


def z_of(
    key: SentenceKey, v: torch.Tensor, groups: torch.Tensor, table=None, weigh: bool = False
) -> float:
    """The pooled z of sentences v (N, D) in ``groups``: sum w (2 hit - 1) / sqrt(sum w^2)."""
    signed = 2 * key.hits(v, groups).float() - 1
    weights = weights_of(key, v, table, weigh)
    return float((weights * signed).sum() / weights.norm().clamp_min(1e-12))


def rewrite_z(
    key: SentenceKey, w: torch.Tensor, complete: list[bool], table=None, weigh: bool = False
) -> float:
    """The z of a rewrite whose sentences have outputs w (m, D), read as the detector's test
    reads a text (:func:`~watermark.sentences.significance.text_test`): every complete sentence
    in its group, with its own margins; the hits of all of them pooled, sum w (2 hit - 1) /
    sqrt(sum w^2). NaN where it has no complete sentence."""
    rows = [i for i, c in enumerate(complete) if c]
    if not rows:
        return float("nan")
    return z_of(key, w[rows], key.text_groups(w)[rows], table, weigh)


def pool_rows(
    keys: list[SentenceKey],
    choice: str,
    pool: dict,
    outputs: Outputs,
    table=None,
    weigh: bool = False,
) -> np.ndarray:
    """Per key: z generated, z of the kept one's rewrite, z of candidate 0's rewrite, signs
    kept by the nearest rewrite sentence (NaN where a rewrite was rejected): (K, 4)."""
    v, previous = outputs(pool["candidates"]), outputs([pool["previous"]])[0]
    rewrites = [sentences_of(r) if r else None for r in pool["rewrites"]]
    found = np.full((len(keys), 4), np.nan)
    for k, key in enumerate(keys):
        kept = choose(key, v, previous, choice)
        groups = key.candidate_groups(v, previous)
        found[k, 0] = z_of(key, v[kept : kept + 1], groups[kept : kept + 1], table, weigh)
        for col, j in ((1, kept), (2, 0)):
            if rewrites[j]:
                w = outputs([s for s, _ in rewrites[j]])
                found[k, col] = rewrite_z(key, w, [c for _, c in rewrites[j]], table, weigh)
        if rewrites[kept]:
            w = outputs([s for s, _ in rewrites[kept]])
            near, dims = nearest(v[kept][None], w)[0], key.dims
            found[k, 3] = float(((w[near, dims] > 0) == (v[kept, dims] > 0)).float().mean())
    return found


def per_pool(rows: list[np.ndarray]) -> np.ndarray:
    """Each pool's mean over keys of each figure (NaN where no key has it): (pools, 4)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a pool whose rewrites were rejected
        return np.stack([np.nanmean(r, axis=0) for r in rows])


def bootstrap(values: np.ndarray) -> list[float | None]:
    """The mean of ``values`` (one per pool, NaN left out) and its bootstrap 95% interval
    (:func:`evaluation.bootstrap.mean_interval`), rounded (``None`` each where every value is
    NaN)."""
    values = values[~np.isnan(values)]
    if not len(values):
        return [None, None, None]
    return [round(float(v), 4) for v in (values.mean(), *mean_interval(values))]


def replay(cfg: WatermarkConfig, pools: list[dict], outputs: Outputs, num_keys: int) -> dict:
    """Per lever, per pool, the mean over keys of each figure: {lever: (pools, 4)}."""
    found = {}
    for lever, change in LEVERS.items():
        settings = cfg.evolve(**change).sentences if change else cfg.sentences
        keys = section_keys(settings, num_keys, outputs.dims)
        rows = [pool_rows(keys, settings.choice, p, outputs) for p in pools]
        found[lever] = per_pool(rows)
    for lever, (change, redraw, weigh) in KEY_LEVERS.items():
        settings = cfg.evolve(**change).sentences if change else cfg.sentences
        keys = section_keys(settings, num_keys, outputs.dims)
        keys = [shared_targets(key, redraw, k) for k, key in enumerate(keys)]
        rows = [pool_rows(keys, settings.choice, p, outputs, weigh=weigh) for p in pools]
        found[lever] = per_pool(rows)
    return found


def fit_table(keys: list[SentenceKey], choice: str, pools: list[dict], outputs: Outputs):
    """A weight table (4,) of the margin bins read on real rewrites: for the tested signs of
    the rewrites of the sentences the choice keeps, the hit rate h_b by the *rewrite's* margin
    bin b, weighed log(h_b / (1 - h_b)) in 1/WEIGHT_STEPS (none below 0), the log-odds
    weights the product draws from the generated margins (:data:`MARGIN_WEIGHTS`), here drawn
    from what a rewrite leaves; and the hit rates."""
    hits, seen = torch.zeros(4), torch.zeros(4)
    for pool in pools:
        v, previous = outputs(pool["candidates"]), outputs([pool["previous"]])[0]
        for key in keys:
            kept = choose(key, v, previous, choice)
            if not pool["rewrites"][kept]:
                continue
            found = [(s, c) for s, c in sentences_of(pool["rewrites"][kept]) if c]
            if not found:
                continue
            w = outputs([s for s, _ in found])
            bins = margin_bins(margins(w))[:, key.dims].flatten()
            hit = key.hits(w, key.text_groups(w)).flatten().float()
            hits += torch.zeros(4).index_add_(0, bins, hit)
            seen += torch.bincount(bins, minlength=4).float()
    rate = hits / seen.clamp_min(1)
    table = (torch.log(rate / (1 - rate)) * WEIGHT_STEPS).round().clamp_min(0).long()
    return table, [round(float(r), 4) for r in rate]


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """``wm``: the watermark whose layer reads the sentences (default: the config's)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="robust")
    parser.add_argument("--keys", type=int, default=32, help="random keys per lever")
    parser.add_argument("--seeds", type=Path, default=SEEDS, help="pools and pool rewrites")
    parser.add_argument("--candidates", type=int, default=8, help="per pool, as rewritten")
    args = parser.parse_args(argv)
    cfg = as_config(args.config)
    pools = replay_pools(args.seeds, args.candidates)
    wm = wm or load_with_generator(cfg)
    outputs = Outputs(wm, pools)
    table = replay(cfg, pools, outputs, args.keys)
    base = table[next(iter(LEVERS))]
    for lever, rows in table.items():
        print(json.dumps(lever_line(lever, rows, base, len(pools), args.keys)), flush=True)
    # weights read on real rewrites: fit on the even pools, read on the odd ones
    keys = section_keys(cfg.sentences, args.keys, outputs.dims)
    weights, rates = fit_table(keys, cfg.sentences.choice, pools[::2], outputs)
    odd = pools[1::2]
    rows = per_pool([pool_rows(keys, cfg.sentences.choice, p, outputs, weights) for p in odd])
    line = lever_line(
        "weights read on real rewrites (odd pools)", rows, base[1::2], len(odd), args.keys
    )
    print(json.dumps({**line, "table": weights.tolist(), "hit_rates": rates}), flush=True)


def lever_line(lever: str, rows: np.ndarray, base: np.ndarray, pools: int, keys: int) -> dict:
    """One lever's JSON line: each figure's mean and interval, and its z after a rewrite
    against the base lever's on the same pools (paired)."""
    line = {"lever": lever, "pools": pools, "keys": keys}
    for col, name in enumerate(FIGURES):
        line[name] = bootstrap(rows[:, col])
    line["z_rewritten_minus_base"] = bootstrap(rows[:, 1] - base[:, 1])
    return line


if __name__ == "__main__":
    main()
