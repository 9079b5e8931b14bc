"""Sentence keys a rewrite keeps better, simulated on the committed generated texts and their
real rewrites: targets drawn by the sentence's place, one of K keys per text, and both (issue
96; a script printing JSON lines).

**Today's key, as measured now** (``today``): the robust config's texts read with the key they
were generated under, each complete sentence in its own context group (the normal reading of
the product's exact test, :func:`research.alignment.cell_z`; ``z_exact`` is the product's own
test, :func:`~watermark.sentences.significance.sentence_test`, as a probit).

**Other keyings, simulated** (:func:`simulate`): the texts were chosen under today's key, so
each simulated key moves that choice onto its own targets. Original sentence i was chosen to
hit the targets T_{g_i} of its group g_i; under a simulated key it would have been chosen
against the targets tau_i of its own slot (its position, its position and secret sign, the
one set, its group). Its tested signs are turned by f_i = tau_i T_{g_i} (so it hits tau_i
exactly where it hit T_{g_i}: the same hits at the same margins) and every sentence of the
rewrite by the f of its nearest original (so a sign the rewrite kept is kept, a flipped one
flipped, and a sentence read at another place than its original's meets unrelated targets).
Candidates scored against one target set are more alike than candidates each scored in its
own group (their shared topic pulls their scores together), so the choice puts less in: each
f_i is replaced by a coin with probability 1 - r, r the ratio of the z generated under the
keying's choice to the robust config's on the held-out pools (:func:`selection_ratios`, the
replay's choice). Per text, ``--keys`` simulated keys.

Readings (:class:`research.keyings.Keying`): ``fixed`` cells (the groups; the one set;
positions in order), ``oracle`` (each rewrite sentence at its reference position: the bound),
or aligned (:class:`research.alignment.Moves`, calibrated by the same maximisation under
``--draws`` random keys per simulated key, :func:`research.alignment.calibrated`). K keys per
text: the text's key and K - 1 others; ``detected``: K min_k p_k < 0.01 (Bonferroni, as key
rotation tests), the z: the probit of 1 - (1 - min_k p_k)^K
(:func:`research.keyings.corrected`). Figures are means over texts of the mean over keys,
bootstrap 95% intervals over texts, and paired against
``today``; the alignment's ``accuracy`` is the share of rewrite sentences with a reference
that it puts at their reference position. ``calibration`` lines: on held-out human texts, the
share of random keys whose z passes p < 0.01 and p < 0.05 (an aligned reading calibrated on
other draws than it is read on; K keys: the draws taken K at a time).

    python -m research.position_key --keys 8 --draws 128 --human 128 --human-draws 2048
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch

from evaluation.heldout import units
from evaluation.store import Store
from research.alignment import (
    Moves,
    aligned_z,
    calibrated,
    cell_z,
    null_draws,
    probit,
    random_targets,
)
from research.common import DATA, ROOT, rewritten_texts, section_keys
from research.keyings import (
    KEYINGS,
    Keying,
    aligned_cells,
    corrected,
    fixed_cells,
    flagged,
    table_size,
)
from research.replay import Outputs, bootstrap, pool_rows, replay_pools
from research.text_pairs import Pair, SentenceTable, Text, complete, read_pairs, read_text
from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.sentences.key import SentenceKey
from watermark.sentences.significance import sentence_test

ROBUST = "ours-1a1e92dd7bbd8611"  # the robust config's texts (n8k4, 64 prompts)
ROBUST_N32 = "ours-94f4533773ca9590"  # the same key, 32 candidates, 32 prompts
FORCED = "llm_forced[qwen2.5-coder-1.5b]@t1r8+facts|1.0|0"
CELLS = {  # attack: (method, attack cache key prefix)
    "forced rewrite": (ROBUST, FORCED),
    "second rewrite (paraphrase T 0.85)": (ROBUST, "paraphrase@t0.85r0|1.0|0"),
    "1.5B paraphrase once": (ROBUST, "llm_paraphrase[qwen2.5-coder-1.5b]|1.0|0"),
    "1.5B paraphrase twice": (ROBUST, "llm_paraphrase[qwen2.5-coder-1.5b]x2|1.0|0"),
    "round trip (N 32 texts)": (ROBUST_N32, FORCED.replace("|1.0", "+llm_paraphrase|1.0")),
}


def accuracy(at: np.ndarray, reference: np.ndarray) -> float:
    """The share of sentences with a reference position read there (NaN: none has one)."""
    has = reference >= 0
    return float((at[has] == reference[has]).mean()) if has.any() else math.nan


def simulate(
    pair: Pair,
    keying: Keying,
    demo: np.ndarray,
    ratio: float,
    keys: int,
    draws: int,
    rng: np.random.Generator,
    key: SentenceKey,
) -> dict:
    """Per K, the mean over ``keys`` simulated keys of the text's z as generated and after its
    rewrite, and the alignment's accuracy (module docstring); ``demo`` (G, b): today's
    targets as +-1."""
    n, m, kmax = len(pair.original), len(pair.rewrite), max(keying.ks)
    aligned = isinstance(keying.reading, Moves)
    positions = keying.reading.positions(max(n, m)) if aligned else max(n, m)
    size = table_size(keying, key, positions)
    raw = {"generated": [], "rewritten": []}
    nulls = {"generated": [], "rewritten": []}
    found_at = []
    for _ in range(keys):
        t = random_targets(rng, (kmax, size, demo.shape[1]))  # row 0: the text's key
        f = t[0][fixed_cells(keying, pair.original)] * demo[pair.original.groups]
        coin = rng.random(f.shape) > ratio
        f = np.where(coin, random_targets(rng, f.shape), f)
        for name, text, x in (
            ("generated", pair.original, pair.original.x * f),
            ("rewritten", pair.rewrite, pair.rewrite.x * f[pair.source]),
        ):
            at = np.arange(len(text))
            if aligned:
                cells = aligned_cells(keying, text, positions)
                z, at = aligned_z(t, x, cells, keying.reading, path=True)
                nulls[name].append(null_draws(x, cells, size, keying.reading, draws, rng))
            elif keying.reading == "oracle" and name == "rewritten":
                at = pair.reference
                z = cell_z(t, fixed_cells(keying, text, at), x)
            else:
                z = cell_z(t, fixed_cells(keying, text), x)
            raw[name].append(z)
            if name == "rewritten" and keying.cells.startswith("position"):
                found_at.append(accuracy(at, pair.reference))
    out = {}
    for name in raw:
        z = np.stack(raw[name])  # (keys, K)
        if aligned:
            z = calibrated(z, np.concatenate(nulls[name]))
        out.update({(name, k): float(corrected(z, k).mean()) for k in keying.ks})
        if name == "rewritten":
            out.update({("detected", k): float(flagged(z, k).mean()) for k in keying.ks})
    out["accuracy"] = float(np.nanmean(found_at)) if found_at else math.nan
    return out


def today(pair: Pair, demo: np.ndarray, key: SentenceKey) -> dict:
    """Today's key as generated: the real texts in their own groups, z and the product's
    exact test as a probit."""
    out = {}
    for name, text in (("generated", pair.original), ("rewritten", pair.rewrite)):
        z = float(cell_z(demo[None], text.groups, text.x)[0])
        positive = torch.as_tensor(text.x > 0)
        groups = torch.as_tensor(text.groups)
        hits = positive == key.targets[groups]
        weights = torch.as_tensor(np.abs(text.x)).round().long()
        p = sentence_test(hits, groups, positive, weights if key.margin else None)
        out.update({(name, 1): z, (f"{name}_exact", 1): float(probit(np.array(p)))})
    out[("detected", 1)] = float(flagged(np.array([[out[("rewritten", 1)]]]), 1)[0])
    out["accuracy"] = math.nan
    return out


def selection_ratios(table: SentenceTable, config, seeds: Path, keys: int) -> dict[str, float]:
    """The z generated under each keying's choice over the robust config's, on the held-out
    pools (:func:`research.replay.pool_rows`): ``c0`` one target set, ``c1`` two sets by one
    own output; 1 each without pools or keys."""
    pools = replay_pools(seeds) if keys else []
    if not pools:
        return {"robust": 1.0, "c0": 1.0, "c1": 1.0}
    outputs = Outputs(table, pools)
    z = {}
    for name, bits in (("robust", None), ("c0", 0), ("c1", 1)):
        settings = config.sentences if bits is None else config.evolve(context_bits=bits).sentences
        found = section_keys(settings, keys, outputs.dims)
        z[name] = np.mean(
            [pool_rows(found, settings.choice, p, outputs)[:, 0].mean() for p in pools]
        )
    return {name: float(min(1.0, z[name] / z["robust"])) for name in z}


def human_texts(
    table: SentenceTable, key: SentenceKey, wm: Watermark, heldout: Path, count: int
) -> list[Text]:
    """The complete sentences of ``count`` held-out human texts (news and wiki, about 200
    generator tokens each) under ``key``."""
    found = []
    for unit in units(heldout, wm.tokenizer, ["news", "wiki"], 150, 200)[:count]:
        sentences = complete(unit["human"])
        if sentences:
            found.append(read_text(key, table.sentence_outputs(sentences)))
    return found


def calibration(texts: list[Text], keying: Keying, key: SentenceKey, draws: int, rng) -> dict:
    """Per K, the share of random keys whose z passes p < 0.01 and p < 0.05 (K min p with K
    keys: the draws taken K at a time), mean over human texts; an aligned reading is
    calibrated on other draws than it is read on."""
    found = {k: [] for k in keying.ks}
    for text in texts:
        aligned = isinstance(keying.reading, Moves)
        positions = keying.reading.positions(len(text)) if aligned else len(text)
        size = table_size(keying, key, positions)
        t = random_targets(rng, (draws, size, text.x.shape[1]))
        if aligned:
            cells = aligned_cells(keying, text, positions)
            fit = null_draws(text.x, cells, size, keying.reading, draws, rng)
            z = calibrated(aligned_z(t, text.x, cells, keying.reading), fit)
        else:
            z = cell_z(t, fixed_cells(keying, text), text.x)
        for k in keying.ks:
            z_k = z[: len(z) // k * k].reshape(-1, k)
            found[k].append((flagged(z_k, k).mean(), flagged(z_k, k, 0.05).mean()))
    return {k: np.mean(v, axis=0).round(4).tolist() for k, v in found.items()}


def row(attack: str, name: str, k: int, rows: list[dict], base: list[dict]) -> dict:
    """One setting's JSON line on one attack, paired against today's key on the same texts."""
    pick = lambda rs, f: np.array([r.get((f, k), r.get(f, math.nan)) for r in rs])  # noqa: E731
    line = {"attack": attack, "keying": name, "keys_per_text": k, "texts": len(rows)}
    for f in ("generated", "rewritten", "detected", "accuracy"):
        line[f] = bootstrap(pick(rows, f))
    for f in ("generated", "rewritten"):
        line[f"{f}_minus_today"] = bootstrap(pick(rows, f) - np.array([b[(f, 1)] for b in base]))
    return line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="robust")
    parser.add_argument("--run", type=Path, default=ROOT / "runs/position_key/store")
    parser.add_argument("--seed", type=Path, default=ROOT / "data/eval-cache/sentence-rewrites")
    parser.add_argument(
        "--cell",
        nargs=3,
        action="append",
        metavar=("NAME", "METHOD", "ATTACK"),
        help="an attack to read (default: the committed ones)",
    )
    parser.add_argument("--keys", type=int, default=16, help="simulated keys per text")
    parser.add_argument("--draws", type=int, default=128, help="null draws per simulated key")
    parser.add_argument("--human", type=int, default=256, help="human texts for calibration")
    parser.add_argument("--human-draws", type=int, default=2048, help="random keys per text")
    parser.add_argument("--heldout", type=Path, default=ROOT / "data/corpus/heldout.jsonl.gz")
    parser.add_argument("--seeds", type=Path, default=DATA, help="pools for the choice ratios")
    parser.add_argument("--pool-keys", type=int, default=16, help="keys per pool (0: ratio 1)")
    parser.add_argument("--only", default="", help="keyings whose name holds this")
    parser.add_argument("--cache", type=Path, default=None, help="the sentence table's file")
    return parser


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints the choice ratios, a line per attack, keying and K, and the calibration."""
    args = _parser().parse_args(argv)
    config = as_config(args.config)
    wm = wm or Watermark.load(config)
    if wm.sentences is None:
        raise SystemExit(f"error: {args.config} has the sentence layer off")
    key = wm.sentences.key
    demo = key.targets.double().numpy() * 2 - 1
    cache = args.cache or ROOT / f"runs/position_key/sentences-{Path(args.config).stem}.pt"
    table = SentenceTable(wm.sentences, cache)
    ratios = selection_ratios(table, config, args.seeds, args.pool_keys)
    print(json.dumps({"choice_ratios": ratios}), flush=True)
    keyings = [k for k in KEYINGS if args.only in k.name]
    store = Store(args.run, [args.seed])
    for attack, method, prefix in args.cell or [(a, *c) for a, c in CELLS.items()]:
        pairs = read_pairs(table, key, rewritten_texts(store, method, prefix))
        if not pairs:
            print(json.dumps({"attack": attack, "texts": 0, "missing": [method, prefix]}))
            continue
        base = [today(p, demo, key) for p in pairs]
        line = row(attack, "today (as measured now)", 1, base, base)
        exact = [b[("rewritten_exact", 1)] for b in base]
        print(json.dumps({**line, "rewritten_exact": bootstrap(np.array(exact))}), flush=True)
        for keying in keyings:
            rng = np.random.default_rng(0)
            rows = [
                simulate(p, keying, demo, ratios[keying.choice], args.keys, args.draws, rng, key)
                for p in pairs
            ]
            for k in keying.ks:
                print(json.dumps(row(attack, keying.name, k, rows, base)), flush=True)
        print(f"{attack}: done", file=sys.stderr, flush=True)
    texts = human_texts(table, key, wm, args.heldout, args.human) if args.human else []
    for keying in keyings if texts else []:
        found = calibration(texts, keying, key, args.human_draws, np.random.default_rng(1))
        for k, (one, five) in found.items():
            print(
                json.dumps(
                    {
                        "calibration": keying.name,
                        "keys_per_text": k,
                        "texts": len(texts),
                        "p<0.01": one,
                        "p<0.05": five,
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
