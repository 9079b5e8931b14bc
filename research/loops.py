"""Degenerate loops: how often a config's texts lock into repeating a phrase, and why.

Generates continuations of held-out prompts with a watermark config (or unwatermarked, with the
same sampling), recording at every step the model's own sampling distribution (temperature and
top-k / top-p, no watermark) next to the one the rule sampled from. Per text it writes the
4-gram repetition, the longest repeated span and, for texts whose rep-4 is above 0.2, the loop
entry: the first step whose token completes a 4-gram already in the text, the probability the
model gave that token and the probability the rule gave it, whether it was neutral (its pair
already in the text) and what the gate and the context guard did from there on.

    python research/loops.py --start 0 --count 128 --out runs/loops/default.jsonl
    python research/loops.py --start 0 --count 128 --unwatermarked --out runs/loops/plain.jsonl
    python research/loops.py --set repeat_rule=keep --out runs/loops/keep.jsonl

Every batch is appended to ``--out`` as it finishes; a rerun skips the prompts already there.
A summary (tail shares with bootstrap intervals, loop-entry figures) goes to stdout as JSON.

``--compare PLAIN.jsonl`` sets a watermarked run against unwatermarked texts of the same prompts
and seeds: median oracle perplexity and mean rep-4 ratios and the tail-share differences with
paired bootstrap intervals (:func:`evaluation.bootstrap.quality_ratio`), and with ``--detect N``
the share of the first N watermarked texts detected at p < 0.01. Perplexities are cached in
``PATH.ppl.json`` beside each file.

    python research/loops.py --pool heldout --count 512 --out runs/loops/kept.jsonl \
        --compare runs/loops/plain.jsonl --detect 128
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from data.sources import split_sentences  # noqa: E402
from evaluation.bootstrap import mean_interval, quality_ratio  # noqa: E402
from evaluation.config import key_values  # noqa: E402
from evaluation.heldout import units as heldout_units  # noqa: E402
from evaluation.metrics import (  # noqa: E402
    TAIL_KEYS,
    TAIL_LEVELS,
    OraclePerplexity,
    longest_repeat,
    ngram_repetition,
)
from evaluation.run import interleave  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.config.watermark_config import as_config  # noqa: E402
from watermark.core.repeats import repeated_steps  # noqa: E402
from watermark.core.rules.logits import filter_logits  # noqa: E402
from watermark.models.loaders import load_lm  # noqa: E402


def prompt_pool(pool: str, tokenizer: object) -> list[dict]:
    """``{"unit", "prompt"}`` in a fixed order. ``heldout``: the first two sentences of every
    held-out passage (news and wiki interleaved), then sentences 7-8 of those with ten or
    more; ``train``: two consecutive sentences every
    sixth sentence of the mapper's training documents (prompts for choosing a setting, never
    for confirming it)."""
    if pool == "heldout":
        path = ROOT / "data/corpus/heldout.jsonl.gz"
        found = interleave(heldout_units(path, tokenizer, None, 1, 1), "source")
        more = []  # then sentences 7-8 of the passages with ten or more (490 are too few)
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for rec in map(json.loads, f):
                sents = split_sentences(rec["text"].replace("\n", " "))
                if len(sents) >= 10:
                    more.append({"source": rec["source"], "prompt": " ".join(sents[6:8])})
        found += interleave(more, "source")
        return [{"unit": i, "prompt": u["prompt"]} for i, u in enumerate(found)]
    docs: dict[str, list[dict]] = {}
    with gzip.open(ROOT / "data/corpus/sentences.jsonl.gz", "rt", encoding="utf-8") as f:
        for rec in map(json.loads, f):
            if rec["split"] == "train":
                docs.setdefault(rec["doc"], []).append(rec)
    pairs = [
        {"source": s[0]["source"], "prompt": f"{s[i]['text']} {s[i + 1]['text']}"}
        for s in docs.values()
        for i in range(0, len(s) - 1, 6)
    ]
    return [{"unit": i, "prompt": p["prompt"]} for i, p in enumerate(interleave(pairs, "source"))]


class StepLog:
    """Wraps a core's ``sampling_logits``: per step, the chosen-token probabilities come later
    from the ids, so it keeps each row's base and watermarked distributions over the top-k."""

    def __init__(self, core) -> None:
        self.core, self.steps = core, []
        self.inner = core.sampling_logits
        core.sampling_logits = self

    def __call__(self, scores: torch.Tensor, decision) -> torch.Tensor:
        out = self.inner(scores, decision)
        cfg = self.core.config
        base = filter_logits(
            scores / cfg.scheme.temperature, cfg.scheme.top_k, cfg.scheme.top_p
        ).softmax(-1)
        marked = out.softmax(-1)
        neutral = decision.neutral
        self.steps.append(
            {
                "base": base,
                "marked": marked,
                "gated": decision.gated.clone(),
                "entropy": decision.entropy.clone(),
                "neutral": None if neutral is None else neutral.clone(),
            }
        )
        return out


def first_repeat(ids: list[int], n: int = 4) -> int | None:
    """0-based index of the first token that completes an n-gram already in ``ids``."""
    seen = set()
    for end in range(n, len(ids) + 1):
        gram = tuple(ids[end - n : end])
        if gram in seen:
            return end - 1
        seen.add(gram)
    return None


def entry_record(ids: list[int], row: int, steps: list[dict], guard: int) -> dict:
    """What happened at and after the loop entry of one text."""
    at = first_repeat(ids)
    if at is None:
        return {}
    s = steps[at]
    tok = ids[at]
    after = range(at, min(len(ids), len(steps)))
    guard_closed = repeated_steps(ids, guard)
    neutral = None if s["neutral"] is None else bool(s["neutral"][row, tok])
    n_mass = None
    if s["neutral"] is not None:
        mask = s["neutral"][row].to(s["base"].dtype)
        n_mass = [float((s["base"][row] * mask).sum()), float((s["marked"][row] * mask).sum())]
    return {
        "entry_step": at + 1,
        "entry_p_model": float(s["base"][row, tok]),
        "entry_p_rule": float(s["marked"][row, tok]),
        "entry_gated": bool(s["gated"][row]),
        "entry_neutral": neutral,
        "entry_neutral_mass": n_mass,
        "after_gated_share": sum(bool(steps[t]["gated"][row]) for t in after) / len(after),
        "after_guard_share": sum(bool(guard_closed[t]) for t in after) / len(after),
    }


def run(args: argparse.Namespace) -> None:
    cfg = as_config(args.config)
    cfg = cfg.evolve(**key_values(args.set))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        done = {json.loads(line)["unit"] for line in out.open()}
    model, tokenizer = load_lm(cfg.models.generator)
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model)
    log = StepLog(wm.core)
    prompts = prompt_pool(args.pool, tokenizer)[args.start : args.start + args.count]
    todo = [p for p in prompts if p["unit"] not in done]
    for b in range(0, len(todo), args.batch):
        batch = todo[b : b + args.batch]
        log.steps = []
        seed = args.seed + batch[0]["unit"]
        gens = wm.generate(
            [p["prompt"] for p in batch],
            max_new_tokens=args.tokens,
            seed=seed,
            watermark=not args.unwatermarked,
            record=False,
            min_new_tokens=args.tokens,
        )
        with out.open("a") as f:
            for row, (p, g) in enumerate(zip(batch, gens)):
                ids = g.token_ids
                rec = {"unit": p["unit"], "seed": seed, "text": g.text, "ids": ids}
                rec.update(rep4=ngram_repetition(ids, 4), longest=longest_repeat(ids))
                if rec["rep4"] > 0.2 and log.steps:
                    rec.update(entry_record(g.token_ids, row, log.steps, cfg.scheme.context_guard))
                f.write(json.dumps(rec) + "\n")
        print(f"{len(done) + b + len(batch)}/{len(prompts)}", file=sys.stderr, flush=True)
    print(json.dumps(summary(out, {p["unit"] for p in prompts})))


def summary(path: Path, units: set[int]) -> dict:
    """Tail shares with 95% bootstrap intervals, and the loop entries' mean figures."""
    recs = [r for r in map(json.loads, path.open()) if r["unit"] in units]
    out = {"texts": len(recs)}
    for name, values in (
        ("rep4", [r["rep4"] for r in recs]),
        *(
            (key, [float(r["rep4"] > level) for r in recs])
            for key, level in zip(TAIL_KEYS, TAIL_LEVELS)
        ),
        ("longest", [r["longest"] for r in recs]),
    ):
        mean = sum(values) / len(values)
        out[name] = [round(mean, 4), *(round(v, 4) for v in mean_interval(values))]
    entries = [r for r in recs if "entry_p_model" in r]
    if entries:
        out["entries"] = len(entries)
        for key in ("entry_p_model", "entry_p_rule", "after_gated_share"):
            out[key] = round(sum(r[key] for r in entries) / len(entries), 4)
        out["entry_neutral_share"] = sum(bool(r["entry_neutral"]) for r in entries) / len(entries)
        out["entry_gated_share"] = sum(r["entry_gated"] for r in entries) / len(entries)
    return out


def perplexities(path: Path, pool: str, oracle: str = "gemma3-270m") -> dict[int, float]:
    """Oracle perplexity of each text of a run given its prompt, cached beside the run."""
    cache = path.with_suffix(".ppl.json")
    found = {int(k): v for k, v in json.loads(cache.read_text()).items()} if cache.exists() else {}
    recs = [r for r in map(json.loads, path.open()) if r["unit"] not in found]
    if recs:
        model, tokenizer = load_lm(oracle)
        prompts = {p["unit"]: p["prompt"] for p in prompt_pool(pool, tokenizer)}
        score = OraclePerplexity(model, tokenizer)
        for n, r in enumerate(recs):
            found[r["unit"]] = score(prompts[r["unit"]], r["text"])
            if n % 32 == 31 or n == len(recs) - 1:
                cache.write_text(json.dumps(found))
                print(f"ppl {n + 1}/{len(recs)}", file=sys.stderr, flush=True)
    return found


def compare(args: argparse.Namespace) -> dict:
    """Quality and tail of ``--out`` against ``--compare`` on their shared prompts."""
    runs = [Path(args.out), Path(args.compare)]
    recs = [{r["unit"]: r for r in map(json.loads, p.open())} for p in runs]
    units = sorted(set(recs[0]) & set(recs[1]) & set(range(args.start, args.start + args.count)))
    ppl = [perplexities(p, args.pool) for p in runs]
    ppls = [[found[u] for u in units] for found in ppl]
    reps = [[run[u]["rep4"] for u in units] for run in recs]
    out = quality_ratio(ppls[0], reps[0], ppls[1], reps[1])
    if args.detect:
        wm = Watermark.load(as_config(args.config))
        found = wm.detect([recs[0][u]["text"] for u in units[: args.detect]])
        out["detected@p<0.01"] = sum(r.p_value < 0.01 for r in found) / len(found)
        out["detected_of"] = len(found)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=None, help="watermark config (default: shipped)")
    parser.add_argument("--set", action="append", default=[], help="FIELD=VALUE override")
    parser.add_argument("--unwatermarked", action="store_true")
    parser.add_argument("--pool", choices=("heldout", "train"), default="train")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=128)
    parser.add_argument("--tokens", type=int, default=150)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--summary", action="store_true", help="only summarise --out")
    parser.add_argument("--compare", help="unwatermarked run of the same prompts and seeds")
    parser.add_argument("--detect", type=int, default=0, help="with --compare: texts detected")
    args = parser.parse_args()
    torch.set_num_threads(2)
    if args.compare:
        print(json.dumps(compare(args)))
        return
    if args.summary:
        units = set(range(args.start, args.start + args.count))
        print(json.dumps(summary(Path(args.out), units)))
        return
    run(args)


if __name__ == "__main__":
    main()
