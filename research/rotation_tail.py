"""Key rotation's false-positive rate on human text, measured over many keys.

A p-value is random through the key as well as through the text, so one set of three keys on
320 passages is one draw of the rotation's FPR. This script detects the human passages once
under the config's keys followed by ``--fresh-keys`` derived ones (one model pass: a key only
changes the token map), keeps every key's own p-value, and prints one JSON object:

- ``per_key``: for each key, the passages below each cut-off;
- ``pooled``: over all key-passage pairs, the share below each cut-off, and the variance of the
  per-key counts over a binomial's at that share (near 1 or below: no key has a heavier tail than
  another);
- ``rotation``: for every set of as many keys as the config has (``--set-size`` to change),
  the Bonferroni-corrected test ``min p * k < cut-off``: the FPR averaged over the sets, its
  95% bootstrap interval over passages, the range of the per-set counts, the share of sets at
  or below ``target_fpr``, and the config's own keys' count (the first set);
- ``one_per_dim``: the same pooled shares keeping only the first tested token of each mapper
  dimension (the dependence between tokens that share a dimension's sign); left out with
  ``repeats="bigram"``, whose repeats read a shifted dimension.

With ``window_sizes`` in the config, ``pooled`` and ``rotation`` are given for the windowed
p-value as well. ``--out`` keeps each passage's per-key bits, nulls and dimensions as JSON lines.

Every key's own result comes from :meth:`~watermark.detect.detector.Detector.detect_per_key`
(the results the verdict picks from).

Example::

    python -m research.rotation_tail --human runs/keys/human.jsonl \\
        --config runs/keys/rot-windowed.json --fresh-keys 45 --out runs/keys/rotation_tail.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np

from research.common import Load, load_with_generator
from watermark.config.watermark_config import WatermarkConfig
from watermark.detect.stats import green_test

CUTOFFS = (0.001, 0.01, 0.05)


def key_record(result: object, dims: list[int]) -> dict:
    """One key's tested bits, nulls and mapper dimensions (layer 0, each token's own), with its
    p-values."""
    pos = [i for i, tested in enumerate(result.tested) if tested]
    return {
        "green": [bool(result.green[i]) for i in pos],
        "gamma": [result.gamma[i] for i in pos],
        "dim": [dims[result.token_ids[i]] for i in pos],
        "p": result.p_value,
        "window_p": result.window_p_value,
    }


def one_per_dim_p(rec: dict) -> float:
    """The p-value over the first tested token of each mapper dimension."""
    seen, green, gamma = set(), [], []
    for g, y, d in zip(rec["green"], rec["gamma"], rec["dim"]):
        if d not in seen:
            seen.add(d)
            green.append(g)
            gamma.append(y)
    return green_test(green, gamma)[1]


def pooled(p: np.ndarray) -> dict:
    """Share of key-passage pairs below each cut-off, and the variance of the per-key counts over
    that of a binomial at the same share (None when no pair is below)."""
    n = p.shape[0]
    out = {}
    for c in CUTOFFS:
        counts = (p < c).sum(0)
        share = counts.mean() / n
        binomial = n * share * (1 - share)
        spread = round(float(counts.var() / binomial), 2) if binomial > 0 else None
        out[f"p<{c}"] = {"share": round(float(share), 5), "var_over_binomial": spread}
    return out


def rotation(p: np.ndarray, size: int, target: float, draws: int = 1000) -> dict:
    """FPR of the Bonferroni test over every set of ``size`` keys (p: passages x keys)."""
    sets = np.array(list(itertools.combinations(range(p.shape[1]), size)))
    corrected = np.minimum(1.0, p[:, sets].min(axis=2) * size)  # (passages, sets)
    rng = np.random.default_rng(0)
    out = {"sets": len(sets)}
    for c in CUTOFFS:
        hit = corrected < c
        counts = hit.sum(0)
        per_text, n = hit.mean(1), len(hit)
        boot = [per_text[rng.integers(0, n, n)].mean() for _ in range(draws)]
        entry = {
            "fpr": round(float(hit.mean()), 5),
            "ci95": [round(float(x), 5) for x in np.quantile(boot, [0.025, 0.975])],
            "count_min_median_max": [
                int(counts.min()),
                float(np.median(counts)),
                int(counts.max()),
            ],
            "config_keys_count": int(counts[0]),
        }
        if c == target:
            entry["sets_at_or_below"] = round(float((hit.mean(0) <= c).mean()), 4)
        out[f"p<{c}"] = entry
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--human", type=Path, required=True, help="JSONL with a 'text' field")
    parser.add_argument("--config", type=Path, required=True, help="config whose keys come first")
    parser.add_argument("--fresh-keys", type=int, default=45, help="derived keys added after them")
    parser.add_argument("--key-prefix", default="rotation-tail-key-", help="derived keys' prefix")
    parser.add_argument("--set-size", type=int, help="keys per set (default: the config's)")
    parser.add_argument("--out", type=Path, help="JSONL of every passage's per-key records")
    return parser


def main(argv: list[str] | None = None, load: Load = load_with_generator) -> None:
    """Prints one JSON object (``load``: how the watermark of a config is loaded)."""
    args = _parser().parse_args(argv)
    cfg = WatermarkConfig.load(args.config)
    own = 1 + len(cfg.keys.old_keys)
    fresh = [f"{args.key_prefix}{i}" for i in range(args.fresh_keys)]
    # the token level's tail (research.sentence_tail adds the sentence layer's)
    cfg = cfg.evolve(old_keys=list(cfg.keys.old_keys) + fresh, bits=0)
    wm = load(cfg)
    texts = [json.loads(x)["text"] for x in args.human.read_text().splitlines() if x.strip()]
    per_text = [k for k in wm.detector.detect_per_key(texts, progress=True) if k[0].reason is None]
    maps = [m[0][0].tolist() for m in wm.core.semantic.key_maps]  # layer 0 of each key
    rows = [[key_record(r, maps[k]) for k, r in enumerate(found)] for found in per_text]
    if args.out:
        with args.out.open("w", encoding="utf-8") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
    p = np.array([[rec["p"] for rec in row] for row in rows])
    size = args.set_size or own
    out = {
        "texts": len(rows),
        "keys": len(maps),
        "config_keys": own,
        "set_size": size,
        "per_key": {f"p<{c}": (p < c).sum(0)[:own].tolist() for c in CUTOFFS},
        "pooled": pooled(p),
        "rotation": rotation(p, size, cfg.detection.target_fpr),
    }
    if cfg.scheme.repeats != "bigram":
        out["one_per_dim"] = pooled(np.array([[one_per_dim_p(r) for r in row] for row in rows]))
    if cfg.detection.window_sizes:
        wp = np.array([[rec["window_p"] for rec in row] for row in rows])
        out["windowed"] = {
            "pooled": pooled(wp),
            "rotation": rotation(wp, size, cfg.detection.target_fpr),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
