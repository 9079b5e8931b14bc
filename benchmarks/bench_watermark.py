"""Watermark benchmarks on held-out text: a thin entry over ``evaluation`` stages.

The work is done by :mod:`evaluation.speed` and :mod:`evaluation.calibration`;
this script only loads the watermark, picks the held-out units and writes / prints the results.

Subcommands (all print a JSON summary on stdout; progress on stderr):

* ``speed``: detection seconds per ~200-token text of the generated texts, and generation
  tokens/s at batch 8 with and without the watermark, with the extra time split into
  measurement model, embedder and mapper.
* ``human``: detect held-out human passages (prompt = first two sentences, human text = the next
  ~200 generator tokens) and write per-token results as JSONL (``--start``/``--limit`` split runs).
* ``generate``: watermarked continuations of held-out news prompts, detected, written as JSONL
  (also records re-tokenization mismatches).
* ``report``: FPR on the human JSONL and TPR on the generated JSONL, recomputed from the stored
  per-token flags, with and without counting each token once
  (:func:`evaluation.calibration.calibration_report`).

Text quality against the strength rule is measured by the evaluation's frontier stage
(``python -m evaluation``), not here.

Examples::

    python -m benchmarks.bench_watermark speed
    python -m benchmarks.bench_watermark speed --variant loop_penalty=0  # its cost, same run
    python -m benchmarks.bench_watermark human --limit 150 --out runs/wm/human.jsonl
    python -m benchmarks.bench_watermark generate --limit 50 --out runs/wm/gen.jsonl
    python -m benchmarks.bench_watermark report --human runs/wm/human.jsonl --wm runs/wm/gen.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from evaluation.calibration import calibration_report, record
from evaluation.config_files import key_values
from evaluation.heldout import units
from evaluation.speed import speed
from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.core.text import decode_ids, encode_text
from watermark.models.loaders import load_lm

ROOT = Path(__file__).resolve().parents[1]


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


def load(args: argparse.Namespace) -> tuple[Watermark, torch.nn.Module]:
    """Config (with the generator / MM overrides), generator and watermark."""
    cfg = as_config(args.config)
    if args.generator:
        cfg = cfg.evolve(generator=args.generator, vocab_size=None)
    if args.mm:
        cfg = cfg.evolve(measurement_model=args.mm)
    log(
        f"mapper {cfg.models.mapper}; generator {cfg.models.generator}; "
        f"MM {cfg.models.measurement_model}"
    )
    model, tokenizer = load_lm(cfg.models.generator)
    return Watermark.load(cfg, tokenizer=tokenizer, generator=model), model


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec) + "\n")


def _read(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def cmd_speed(args: argparse.Namespace) -> dict:
    wm, model = load(args)
    found = units(args.heldout, wm.tokenizer, "news", 50, 200)[: args.batch]
    changes = key_values(args.variant)
    variant = None
    if changes:
        variant = Watermark.load(
            wm.config.evolve(**changes), tokenizer=wm.tokenizer, generator=model
        )
    prompts = [u["prompt"] for u in found]
    return {
        "mapper": wm.config.models.mapper,
        **({"variant": changes} if changes else {}),
        **speed(wm, model, prompts, args.new_tokens, variant),
    }


def cmd_human(args: argparse.Namespace) -> dict:
    wm, _ = load(args)
    items = units(args.heldout, wm.tokenizer, None, args.min_tokens, args.new_tokens)
    if args.join_tokens:  # longer texts: consecutive passages joined, cut at join_tokens
        joined, ids, first = [], [], None
        for u in items:
            ids, first = ids + encode_text(wm.tokenizer, u["human"]), first or u["id"]
            if len(ids) >= args.join_tokens:
                joined.append(
                    {"id": first, "human": decode_ids(wm.tokenizer, ids[: args.join_tokens])}
                )
                ids, first = [], None
        items = joined
    items = items[args.start : args.start + args.limit]
    start = time.perf_counter()
    results = wm.detect([u["human"] for u in items], progress=True)
    _write(args.out, [{"id": u["id"], **record(r, wm.config)} for u, r in zip(items, results)])
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
                "positions_match": same
                and [i + 1 for i, s in enumerate(r.scored) if s] == o.watermarked_steps,
                **record(r, wm.config),
            }
        )
    _write(args.out, records)
    return {"texts": len(outs), "generate_s": gen_s, "total_s": time.perf_counter() - start}


def cmd_report(args: argparse.Namespace) -> dict:
    sizes = [int(w) for w in args.windows.split(",")] if args.windows else []
    return calibration_report(_read(args.human), _read(args.wm) if args.wm else [], sizes)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("command", choices=["speed", "human", "generate", "report"])
    parser.add_argument("--config", help="watermark config JSON (default: shipped)")
    parser.add_argument("--generator", help="override the generator (e.g. gemma3-270m)")
    parser.add_argument("--mm", help="override the measurement model")
    parser.add_argument("--heldout", type=Path, default=ROOT / "data/corpus/heldout.jsonl.gz")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=200)
    parser.add_argument("--min-tokens", type=int, default=150, help="human texts: minimum tokens")
    parser.add_argument(
        "--join-tokens",
        type=int,
        default=0,
        help="human: join consecutive passages into texts of this many tokens",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="speed: also time the watermark with FIELD=VALUE changed (repeatable), same run",
    )
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--limit", type=int, default=16)
    parser.add_argument("--out", type=Path, default=ROOT / "runs/wm/out.jsonl")
    parser.add_argument("--human", type=Path)
    parser.add_argument("--wm", type=Path)
    parser.add_argument("--windows", help="report: also the windowed test, e.g. 128,256")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    command = globals()[f"cmd_{args.command}"]
    print(json.dumps(command(args), indent=2))


if __name__ == "__main__":
    main()
