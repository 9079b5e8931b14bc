"""Degenerate loops: how often a config's texts lock into repeating a phrase, and why.

Generates continuations of held-out prompts with a watermark config (or unwatermarked, with the
same sampling). Per text it writes the 4-gram repetition and the longest repeated span, and for
texts whose rep-4 is above 0.2 the loop entry: the first step whose token completes a 4-gram
already in the text, whether that step was watermarked, and the share of the steps from there
on that were watermarked and that the context guard closed. (Until 0.10 it also
recorded, by wrapping the core's sampling step, the probability the model and the rule gave the
entry token; the evaluation notes' diagnosis of 0.4's loops was measured so at commit
``1787b40``.)

    python -m research.loops --start 0 --count 128 --out runs/loops/default.jsonl
    python -m research.loops --start 0 --count 128 --unwatermarked --out runs/loops/plain.jsonl
    python -m research.loops --set repeat_rule=keep --out runs/loops/keep.jsonl

Every batch is appended to ``--out`` as it finishes; a rerun skips the prompts already there.
A summary (tail shares with bootstrap intervals, loop-entry figures) goes to stdout as JSON.

``--compare PLAIN.jsonl`` sets a watermarked run against unwatermarked texts of the same prompts
and seeds: median oracle perplexity and mean rep-4 ratios and the tail-share differences with
paired bootstrap intervals (:func:`evaluation.bootstrap.quality_ratio`), and with ``--detect N``
the share of the first N watermarked texts detected at p < 0.01. Perplexities are cached in
``PATH.ppl.json`` beside each file.

    python -m research.loops --pool heldout --count 512 --out runs/loops/kept.jsonl \
        --compare runs/loops/plain.jsonl --detect 128
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import torch

from data.sources import split_sentences
from evaluation.bootstrap import mean_interval, quality_ratio
from evaluation.config_files import key_values
from evaluation.heldout import units as heldout_units
from evaluation.metrics import (
    TAIL_KEYS,
    TAIL_LEVELS,
    OraclePerplexity,
    longest_repeat,
    ngram_repetition,
)
from evaluation.run import interleave
from research.common import ROOT, Load, load_with_generator
from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.core.repeats import repeated_steps
from watermark.models.loaders import load_lm


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


def first_repeat(ids: list[int], n: int = 4) -> int | None:
    """0-based index of the first token that completes an n-gram already in ``ids``."""
    seen = set()
    for end in range(n, len(ids) + 1):
        gram = tuple(ids[end - n : end])
        if gram in seen:
            return end - 1
        seen.add(gram)
    return None


def entry_record(ids: list[int], watermarked_steps: list[int], guard: int) -> dict:
    """What happened at and after the loop entry of one text (``watermarked_steps``: the
    1-based steps that were watermarked, as generation records them)."""
    at = first_repeat(ids)
    if at is None:
        return {}
    marked = set(watermarked_steps)
    after = range(at, len(ids))
    guard_closed = repeated_steps(ids, guard)
    return {
        "entry_step": at + 1,
        "entry_watermarked": at + 1 in marked,
        "after_watermarked_share": sum(t + 1 in marked for t in after) / len(after),
        "after_guard_share": sum(bool(guard_closed[t]) for t in after) / len(after),
    }


def run(args: argparse.Namespace, load: Load = load_with_generator) -> None:
    """Generates the prompts not yet in ``--out`` and appends their records."""
    cfg = as_config(args.config)
    cfg = cfg.evolve(**key_values(args.set))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        done = {json.loads(line)["unit"] for line in out.open()}
    wm = load(cfg)
    prompts = prompt_pool(args.pool, wm.tokenizer)[args.start : args.start + args.count]
    todo = [p for p in prompts if p["unit"] not in done]
    for b in range(0, len(todo), args.batch):
        batch = todo[b : b + args.batch]
        seed = args.seed + batch[0]["unit"]
        gens = wm.generate(
            [p["prompt"] for p in batch],
            max_new_tokens=args.tokens,
            seed=seed,
            watermark=not args.unwatermarked,
            min_new_tokens=args.tokens,
        )
        with out.open("a") as f:
            for p, g in zip(batch, gens):
                ids = g.token_ids
                rec = {"unit": p["unit"], "seed": seed, "text": g.text, "ids": ids}
                rec.update(rep4=ngram_repetition(ids, 4), longest=longest_repeat(ids))
                if rec["rep4"] > 0.2 and not args.unwatermarked:
                    guard = cfg.scheme.context_guard
                    rec.update(entry_record(ids, g.watermarked_steps, guard))
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
    entries = [r for r in recs if "entry_step" in r]
    if entries:
        out["entries"] = len(entries)
        for key in ("after_watermarked_share", "after_guard_share"):
            out[key] = round(sum(r[key] for r in entries) / len(entries), 4)
        out["entry_watermarked_share"] = sum(r["entry_watermarked"] for r in entries) / len(entries)
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


def _parser() -> argparse.ArgumentParser:
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
    return parser


def main(argv: list[str] | None = None, load: Load = load_with_generator) -> None:
    """Generates, summarises or compares (``load``: how the config's watermark is loaded, with
    its generator)."""
    args = _parser().parse_args(argv)
    torch.set_num_threads(2)
    if args.compare:
        print(json.dumps(compare(args)))
        return
    if args.summary:
        units = set(range(args.start, args.start + args.count))
        print(json.dumps(summary(Path(args.out), units)))
        return
    run(args, load)


if __name__ == "__main__":
    main()
