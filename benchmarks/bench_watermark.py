"""Watermark benchmarks and evaluation on held-out text (a script, not a timed test).

Subcommands (all print a JSON summary on stdout; progress on stderr):

* ``speed``: on the same texts, detection seconds per ~200-token text for the fast path vs the
  reference implementation, and generation tokens/s at batch 8 with and without the watermark,
  with the extra time split into measurement model, embedder and mapper.
* ``human``: detect held-out human passages (prompt = first two sentences, human text = the next
  ~200 generator tokens) and write per-token results as JSONL (``--start``/``--limit`` split runs).
* ``generate``: watermarked continuations of held-out news prompts, detected, written as JSONL
  (also records re-tokenization mismatches).
* ``report``: FPR on the human JSONL and TPR on the generated JSONL, recomputed from the stored
  per-token flags for the null models ``vocab`` / ``mm`` with and without counting each token
  once. With several green lists per step (tournament layers) only ``vocab`` is recomputed, with
  the first list's green fraction for every layer (the lists' fractions differ by at most D / V).

Text quality against the strength rule is measured by the evaluation's frontier stage
(``python -m watermark.evaluate``), not here.

Examples::

    python benchmarks/bench_watermark.py speed
    python benchmarks/bench_watermark.py human --limit 150 --out runs/wm/human.jsonl
    python benchmarks/bench_watermark.py generate --limit 50 --out runs/wm/gen.jsonl
    python benchmarks/bench_watermark.py report --human runs/wm/human.jsonl --wm runs/wm/gen.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from data.packaged_models import load_lm  # noqa: E402
from watermark import reference  # noqa: E402
from watermark.config import as_config  # noqa: E402
from watermark.evaluate.heldout import units  # noqa: E402
from watermark.stats import green_test  # noqa: E402
from watermark.watermark import Watermark  # noqa: E402


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


def load(args: argparse.Namespace, **overrides: object) -> tuple[Watermark, torch.nn.Module]:
    """Config (+ overrides), generator and watermark."""
    cfg = as_config(args.config)
    if args.generator:
        cfg.generator, cfg.vocab_size = args.generator, None
    if args.mm:
        cfg.measurement_model = args.mm
    for key, value in overrides.items():
        setattr(cfg, key, value)
    mapper_note = f"mapper {cfg.mapper_dir()}"
    log(f"mapper: {mapper_note}; generator {cfg.generator}; MM {cfg.measurement_model}")
    model, tokenizer = load_lm(cfg.resolve_path(cfg.generator))
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model)
    wm.mapper_note = mapper_note
    return wm, model


def per_token(result, cfg) -> dict:
    keep = ("token_ids", "scored", "tested", "green", "green_bits", "gamma", "vocab_green")
    return {
        **result.to_dict(),
        **{k: getattr(result, k) for k in keep},
        "layers": cfg.layers,
        "fresh_only": cfg.fresh_only,
    }


def timed_generate(wm, model, prompts, n_new, watermark, seed=0):
    core = wm.core
    core.measurement.seconds, core.semantic.timings = 0.0, {"embed": 0.0, "map": 0.0}
    start = time.perf_counter()
    outs = wm.generate(model, prompts, max_new_tokens=n_new, seed=seed, watermark=watermark)
    total = time.perf_counter() - start
    tokens = sum(len(o.token_ids) for o in outs)
    parts = {
        "mm_s": core.measurement.seconds,
        **{f"{k}_s": v for k, v in core.semantic.timings.items()},
    }
    return outs, {"seconds": total, "tokens": tokens, "tokens_per_s": tokens / total, **parts}


def cmd_speed(args: argparse.Namespace) -> dict:
    wm, model = load(args)
    prompts = [u["prompt"] for u in units(args.heldout, wm.tokenizer, "news", 50, 200)][
        : args.batch
    ]
    outs, with_wm = timed_generate(wm, model, prompts, args.new_tokens, True)
    _, without = timed_generate(wm, model, prompts, args.new_tokens, False)
    texts = [o.text for o in outs]
    core = wm.core
    core.measurement.seconds, core.semantic.timings = 0.0, {"embed": 0.0, "map": 0.0}
    start = time.perf_counter()
    fast = wm.detect(texts)
    fast_s = (time.perf_counter() - start) / len(texts)
    fast_parts = {"mm_s": core.measurement.seconds / len(texts)}
    fast_parts.update({f"{k}_s": v / len(texts) for k, v in core.semantic.timings.items()})
    start = time.perf_counter()
    refs = [reference.detect(wm, t) for t in texts[: args.ref_texts]]
    ref_s = (time.perf_counter() - start) / len(refs)
    agree = all(r.scored == f.scored and r.green == f.green for r, f in zip(refs, fast))
    return {
        "mapper": wm.mapper_note,
        "threads": torch.get_num_threads(),
        "detect_tokens_per_text": sum(r.num_tokens for r in fast) / len(fast),
        "detect_fast_s_per_text": fast_s,
        "detect_fast_breakdown_per_text": fast_parts,
        "detect_reference_s_per_text": ref_s,
        "detect_speedup": ref_s / fast_s,
        "reference_agrees": agree,
        "generate_batch": len(prompts),
        "generate_with_watermark": with_wm,
        "generate_without_watermark": without,
        "generate_slowdown": with_wm["seconds"] / without["seconds"],
    }


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")


def cmd_human(args: argparse.Namespace) -> dict:
    wm, _ = load(args)
    if wm.core.measurement.same_tokenizer:  # keep both nulls' gammas; report recomputes variants
        wm.config.null_model = "mm"
    items = units(args.heldout, wm.tokenizer, None, args.min_tokens, args.new_tokens)
    items = items[args.start : args.start + args.limit]
    start = time.perf_counter()
    results = wm.detect([u["human"] for u in items], progress=True)
    _write(
        args.out,
        [{"id": u["id"], **per_token(r, wm.config)} for u, r in zip(items, results)],
    )
    return {"texts": len(items), "seconds": time.perf_counter() - start, "out": str(args.out)}


def cmd_generate(args: argparse.Namespace) -> dict:
    wm, model = load(args)
    prompts = units(args.heldout, wm.tokenizer, "news", 0, 1)[args.start : args.start + args.limit]
    start = time.perf_counter()
    outs = []
    for b in range(0, len(prompts), args.batch):
        batch = [u["prompt"] for u in prompts[b : b + args.batch]]
        outs += wm.generate(model, batch, args.new_tokens, seed=args.start + b)
        log(f"generated {len(outs)}/{len(prompts)}")
    gen_s = time.perf_counter() - start
    if wm.core.measurement.same_tokenizer:
        wm.config.null_model = "mm"
    results = wm.detect([o.text for o in outs], progress=True)
    records = []
    for u, o, r in zip(prompts, outs, results):
        same = r.token_ids == o.token_ids
        records.append(
            {
                "id": u["id"],
                "prompt": u["prompt"],
                "text": o.text,
                "retokenization_matches": same,
                "positions_match": same and r.scored_steps() == o.watermarked_steps,
                **per_token(r, wm.config),
            }
        )
    _write(args.out, records)
    return {"texts": len(outs), "generate_s": gen_s, "total_s": time.perf_counter() - start}


def _variant(rec: dict, null: str, unique: bool) -> float:
    """p-value of a stored text under a null, over its tested tokens (unique) or all scored."""
    green, gammas, layers = [], [], rec.get("layers", 1)
    use = rec["tested"] if unique else rec["scored"]
    for s, bits, gm, gv in zip(use, rec["green_bits"], rec["gamma"], rec["vocab_green"]):
        if not s:
            continue
        green += [True] * bits + [False] * (layers - bits)
        gammas += [gm if null == "mm" else gv] * layers
    return green_test(green, gammas)[1]


def cmd_report(args: argparse.Namespace) -> dict:
    human = [json.loads(x) for x in args.human.read_text().splitlines() if x.strip()]
    marked = (
        [json.loads(x) for x in args.wm.read_text().splitlines() if x.strip()] if args.wm else []
    )
    out = {"human_texts": len(human), "watermarked_texts": len(marked)}
    if marked:
        out["retokenization_match_rate"] = sum(r["retokenization_matches"] for r in marked) / len(
            marked
        )
        out["positions_match_rate"] = sum(r["positions_match"] for r in marked) / len(marked)
        out["awr_mean"] = sum(r["awr"] for r in marked) / len(marked)
        out["green_fraction_mean"] = sum(r["green_fraction"] for r in marked) / len(marked)
    for null in ("vocab", "mm"):
        if null == "mm" and any(
            r.get("layers", 1) > 1 or any(g is None for g, s in zip(r["gamma"], r["scored"]) if s)
            for r in human
        ):
            continue
        for unique in (True, False) if not human[0].get("fresh_only") else (True,):
            hp = sorted(_variant(r, null, unique) for r in human)
            row = {
                "human_texts": len(hp),
                "fpr@p<0.01": sum(p < 0.01 for p in hp) / len(hp),
                "fpr@p<0.05": sum(p < 0.05 for p in hp) / len(hp),
            }
            if marked:
                wp = [_variant(r, null, unique) for r in marked]
                cut = hp[max(0, int(0.01 * len(hp)) - 1)]  # empirical 1% FPR threshold
                row["tpr@p<0.01"] = sum(p < 0.01 for p in wp) / len(wp)
                row["tpr@1%fpr_empirical"] = sum(p < cut for p in wp) / len(wp)
            out[f"{null}/{'unique' if unique else 'all'}"] = row
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["speed", "human", "generate", "report"])
    parser.add_argument("--config", help="watermark config JSON (default: shipped)")
    parser.add_argument("--generator", help="override the generator (e.g. gemma3-270m)")
    parser.add_argument("--mm", help="override the measurement model")
    parser.add_argument("--heldout", type=Path, default=ROOT / "data/corpus/heldout.jsonl.gz")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=200)
    parser.add_argument("--min-tokens", type=int, default=150, help="human texts: minimum tokens")
    parser.add_argument("--ref-texts", type=int, default=1, help="speed: texts for the reference")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--limit", type=int, default=16)
    parser.add_argument("--out", type=Path, default=ROOT / "runs/wm/out.jsonl")
    parser.add_argument("--human", type=Path)
    parser.add_argument("--wm", type=Path)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    command = globals()[f"cmd_{args.command}"]
    print(json.dumps(command(args), indent=2))


if __name__ == "__main__":
    main()
