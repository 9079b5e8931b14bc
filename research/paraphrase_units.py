"""Where a paraphrase loses each method's watermark: kept and new detection units, and their green
rates (a script; prints one JSON line per method).

A unit is what a detector counts once: a token id for ours (each tested token) and KGW-0, a
distinct (previous token, token) pair for KGW-1, a distinct trigram for KGW-2, a distinct hashed
n-gram for SynthID-Text (green: its mean g-value over the layers above 1/2). A unit of the
attacked text is *kept* when the original text has it, so for the token-hash schemes the kept
share is the share of keyed contexts that survive. Reads the texts and attacks cached by an
evaluation run (``python -m evaluation --config configs/evaluation/eval.yaml``), so it needs that
run's cache; only detection is recomputed. Texts that the attack left as they were (a rewrite
whose every draw failed) are skipped.

With ``--spans`` it also prints, for ours, how stable the green lists of kept tokens are: each
token tested in both texts (its first tested occurrence in each) is embedded in its context
window in the original and in the attacked text, and the line gives, by the embedder's cosine
similarity of the two windows, the share of mapper signs and of the token's own list bits that
stay the same.

Example::

    python research/paraphrase_units.py --config configs/evaluation/eval.yaml \
        --attack "paraphrase|1.0|0"
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.config import EvalConfig  # noqa: E402
from evaluation.run import Evaluation, text_hash  # noqa: E402
from watermark.core.text import encode_text  # noqa: E402

CONTEXT = {"kgw0": 0, "kgw1": 1, "kgw2": 2}
COSINE_BINS = (0.0, 0.7, 0.8, 0.9, 0.95, 1.0001)


def units(method: object, base: str, tokenizer: object, text: str) -> tuple[dict, float]:
    """The text's detection units (unit -> green) and its z-score under the method, whose
    family (``ours``, ``kgw0``, ``kgw1``, ``kgw2``; a variant's base) is ``base``."""
    if base == "ours":
        res = method.wm.detect([text])[0]
        return {i: g for i, g, t in zip(res.token_ids, res.green, res.tested) if t}, res.z_score
    if base == "synthid":
        return synthid_units(method, tokenizer, text), method.detect([text])[0].z_score
    c, ids = CONTEXT[base], encode_text(tokenizer, text)
    found = {tuple(ids[i - c : i + 1]) for i in range(max(c, 1), len(ids))}
    green = {u: bool(method.green_mask(list(u[:-1]) or [0])[u[-1]]) for u in found}
    return green, method.detect([text])[0].z_score


def synthid_units(method: object, tokenizer: object, text: str) -> dict:
    """SynthID-Text's distinct hashed n-grams of ``text`` -> mean g-value above 1/2."""
    n = method.config.ngram_len
    proc = method.config.construct_processor(vocab_size=0, device="cpu")
    ids = [0] * (n - 1) + encode_text(tokenizer, text)  # generation starts from zeros
    g = proc.compute_g_values(torch.tensor([ids]))[0].double().mean(1)  # (T,)
    return {tuple(ids[i : i + n]): bool(g[i] > 0.5) for i in range(len(g))}


def first_tested(result: object) -> dict[int, int]:
    """Token id -> 1-based step of its first tested occurrence in a detection result."""
    found: dict[int, int] = {}
    for step, (token, tested) in enumerate(zip(result.token_ids, result.tested), 1):
        if tested and token not in found:
            found[token] = step
    return found


def span_stability(wm: object, pairs: list[tuple[str, str]]) -> dict:
    """For ours: kept tokens' window similarity and how many of their signs and list bits stay."""
    core = wm.core
    cos, signs_kept, bits_kept = [], [], []
    for original, attack in pairs:
        before, after = wm.detect([original, attack])
        first, again = first_tested(before), first_tested(after)
        kept = [token for token in again if token in first]
        if not kept:
            continue
        steps = [first[t] for t in kept] + [again[t] for t in kept]
        ids = [before.token_ids] * len(kept) + [after.token_ids] * len(kept)
        u = core.semantic.embed([core.embedding_input(t, i[: t - 1]) for t, i in zip(steps, ids)])
        signs = core.semantic.signs(u)
        bits = core.semantic.from_signs(signs).contains(torch.tensor(kept * 2))
        k = len(kept)
        cos += torch.nn.functional.cosine_similarity(u[:k], u[k:]).tolist()
        signs_kept += (signs[:k] == signs[k:]).float().mean(1).tolist()
        bits_kept += (bits[:k] == bits[k:]).float().mean(1).tolist()
    cos_t, s_t, b_t = (torch.tensor(x) for x in (cos, signs_kept, bits_kept))
    bins = []
    for lo, hi in zip(COSINE_BINS, COSINE_BINS[1:]):
        m = (cos_t >= lo) & (cos_t < hi)
        if m.any():
            kept_share = {"signs_kept": float(s_t[m].mean()), "bits_kept": float(b_t[m].mean())}
            bins.append({"cosine": [lo, min(hi, 1.0)], "tokens": int(m.sum()), **kept_share})
    overall = {"signs_kept": float(s_t.mean()), "bits_kept": float(b_t.mean())}
    return {"kept_tokens": len(cos), "window_cosine": float(cos_t.mean()), **overall, "bins": bins}


def cached_pairs(ev: Evaluation, method: object, attack: str) -> list[tuple[str, str]]:
    """``(original, attacked)`` of each of the method's cached generations that the cached
    attack (key prefix ``attack``) changed."""
    cfg = ev.cfg
    attacked = ev.store.table("attacks")
    prefix = f"{method.key}|{cfg.generator}|{cfg.seed}|{cfg.new_tokens}|"
    pairs = []
    for key, row in ev.store.table("generations").items():
        done = attacked.get(f"{attack}|{text_hash(row['text'])}")
        changed = done is not None and done["text"].strip() != row["text"].strip()
        if key.startswith(prefix) and changed:  # a text the attack left alone says nothing
            pairs.append((row["text"], done["text"]))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs/evaluation/eval.yaml"))
    parser.add_argument("--attack", default="paraphrase|1.0|0", help="cached attack key prefix")
    parser.add_argument("--methods", default="ours,kgw0,kgw1,kgw2,synthid")
    parser.add_argument("--limit", type=int, default=64)
    parser.add_argument("--spans", action="store_true", help="ours: kept tokens' window stability")
    args = parser.parse_args()
    ev = Evaluation(EvalConfig.load(args.config), progress=False)
    cfg = ev.cfg
    for name in args.methods.split(","):
        method = ev.method(name)
        pairs = cached_pairs(ev, method, args.attack)[: args.limit]
        if not pairs:
            print(json.dumps({"method": name, "error": "no cached attacked texts"}), flush=True)
            continue
        n = Counter()
        for original, attack in pairs:
            (before, z_before), (after, z_after) = (
                units(method, cfg.base_method(name), ev.tokenizer, text)
                for text in (original, attack)
            )
            n["z_original"] += z_before
            n["z_attacked"] += z_after
            n["orig"] += len(before)
            n["orig_green"] += sum(before.values())
            for unit, green in after.items():
                kind = "kept" if unit in before else "new"
                n[kind] += 1
                n[kind + "_green"] += green
        total = n["kept"] + n["new"]
        print(
            json.dumps(
                {
                    "method": name,
                    "attack": args.attack,
                    "texts": len(pairs),
                    "units_original": n["orig"] / len(pairs),
                    "units_attacked": total / len(pairs),
                    "green_original": n["orig_green"] / n["orig"],
                    "kept_share": n["kept"] / total,
                    "green_kept": n["kept_green"] / max(1, n["kept"]),
                    "green_new": n["new_green"] / max(1, n["new"]),
                    "z_original": n["z_original"] / len(pairs),
                    "z_attacked": n["z_attacked"] / len(pairs),
                }
            ),
            flush=True,
        )
        if args.spans and cfg.base_method(name) == "ours":
            spans = span_stability(method.wm, pairs)
            print(json.dumps({"method": name, "attack": args.attack, **spans}), flush=True)


if __name__ == "__main__":
    main()
