"""Whether the detector could read a rewritten sentence's context group better than from the
sentence's own context outputs.

A rewrite that flips a context output reads the sentence under another group's targets; the
replay (:mod:`research.replay`) puts most of the robust config's loss there. Generation keeps
its groups (so a spoofer still faces 2^c target sets); only the reading changes. On the
held-out pools' real rewrites of what the product's choice keeps (the replay's seed), each
complete sentence of a rewrite is scored in four ways, each a z calibrated under the null of
random signs for that key and those weights (Monte Carlo, ``--null-draws``), and a rewrite's
score is their Stouffer sum over its sentences:

* ``own``: its own context outputs' group (the product's reading);
* ``generated``: the group the kept candidate was generated in (an oracle: the bound);
* ``max``: the best of the 2^c groups, calibrated as a maximum;
* ``mixture λ``: log sum_g pi_g e^(λ z_g), pi_g the chance that a rewrite turned the group g
  into the own one, by the context outputs' margins (:data:`MARGIN_KEPT`).

Bootstrap 95% intervals over pools, each reading paired against ``own``.

    python -m research.group_reading --config robust --keys 32
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from research.common import DATA, choose, load_with_generator, section_keys
from research.replay import Outputs, bootstrap, replay_pools, sentences_of
from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.sentences.key import MARGIN_KEPT, SentenceKey, margin_bins, margins

ROOT = Path(__file__).resolve().parents[1]
NORMAL = torch.distributions.Normal(0.0, 1.0)


def group_prior(key: SentenceKey, w: torch.Tensor, own: int) -> torch.Tensor:
    """Float (G,): the chance of each group given that a rewrite reads ``own`` from outputs w
    (D,): each context output kept with :data:`MARGIN_KEPT` of its margin bin."""
    stay = torch.tensor(MARGIN_KEPT)[margin_bins(margins(w[None]))[0, key.context_dims]]
    groups = torch.arange(len(key.targets))
    prior = torch.ones(len(groups))
    for j, s in enumerate(stay):
        same = ((groups >> j) & 1) == ((own >> j) & 1)
        prior *= torch.where(same, s, 1 - s)
    return prior


def readings(key: SentenceKey, w: torch.Tensor, generated: int, null: torch.Tensor, lams) -> dict:
    """Per reading, the calibrated z of one sentence with outputs w (D,); ``null`` (M, b):
    random signs +-1."""
    groups = torch.arange(len(key.targets))
    z = key.evidence(w[None].expand(len(groups), -1), groups)  # (G,)
    weights = key.weights(w[None])
    weights = torch.ones(key.bits) if weights is None else weights[0].float()
    null_z = (null * weights / weights.norm()) @ (2 * key.targets.float() - 1).T  # (M, G)
    own = int(key.text_groups(w[None])[0])
    stats = {
        "own": lambda x: x[..., own],
        "generated": lambda x: x[..., generated],
        "max": lambda x: x.max(-1).values,
    }
    log_prior = torch.log(group_prior(key, w, own))
    for lam in lams:
        stats[f"mixture {lam}"] = lambda x, lam=lam: torch.logsumexp(log_prior + lam * x, -1)
    found = {}
    for name, stat in stats.items():
        p = ((stat(null_z) >= stat(z)).float().sum() + 0.5) / (len(null) + 1)  # mid-p
        found[name] = float(NORMAL.icdf(1 - p))
    return found


def pool_scores(keys, choice: str, pool: dict, outputs: Outputs, null, lams) -> dict:
    """Per reading, the mean over keys of the Stouffer score of the kept candidate's rewrite
    (NaN where no key's kept candidate has a rewrite with a complete sentence)."""
    v, previous = outputs(pool["candidates"]), outputs([pool["previous"]])[0]
    found: dict[str, list[float]] = {}
    for key in keys:
        kept = choose(key, v, previous, choice)
        rewrite = pool["rewrites"][kept]
        sentences = [s for s, complete in sentences_of(rewrite) if complete] if rewrite else []
        if not sentences:
            continue
        generated = int(key.candidate_groups(v, previous)[kept])
        rows = [readings(key, w, generated, null, lams) for w in outputs(sentences)]
        for name in rows[0]:
            found.setdefault(name, []).append(sum(r[name] for r in rows) / len(rows) ** 0.5)
    return {name: float(np.mean(values)) for name, values in found.items()}


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints one JSON line per reading: its mean score and the paired difference to ``own``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="robust")
    parser.add_argument("--keys", type=int, default=32, help="random keys")
    parser.add_argument("--seeds", type=Path, default=DATA, help="pools and pool rewrites")
    parser.add_argument("--candidates", type=int, default=8, help="per pool, as rewritten")
    parser.add_argument("--null-draws", type=int, default=4000, help="Monte Carlo null signs")
    parser.add_argument("--lams", default="0.8,1.5", help="the mixtures' λ")
    args = parser.parse_args(argv)
    cfg = as_config(args.config)
    if cfg.sentences.bits < 1 or cfg.sentences.keying != "own":
        raise SystemExit("error: the config needs a sentence layer keyed by its own outputs")
    lams = [float(x) for x in args.lams.split(",")]
    wm = wm or load_with_generator(cfg)
    pools = replay_pools(args.seeds, args.candidates)
    outputs = Outputs(wm, pools)
    keys = section_keys(cfg.sentences, args.keys, outputs.dims)
    rng = torch.Generator().manual_seed(0)
    null = torch.randint(0, 2, (args.null_draws, cfg.sentences.bits), generator=rng) * 2.0 - 1
    scores = [pool_scores(keys, cfg.sentences.choice, p, outputs, null, lams) for p in pools]
    names = next(s for s in scores if s).keys()
    table = {n: np.array([s.get(n, np.nan) for s in scores]) for n in names}
    for name, values in table.items():
        line = {
            "reading": name,
            "pools": int((~np.isnan(values)).sum()),
            "keys": args.keys,
            "score": bootstrap(values),
            "minus_own": bootstrap(values - table["own"]),
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
