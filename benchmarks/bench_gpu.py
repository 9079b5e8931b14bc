"""GPU benchmarks of the shipped watermark with SmolLM2-135M, measured side by side in one run.

Subcommands (each prints one JSON object on stdout; progress on stderr):

* ``generate``: tokens/s of plain ``generate`` against watermarked generation, fused and unfused,
  per batch size and dtype, on the same prompts and seed with EOS blocked (every run generates
  the same number of tokens); ratios are watermarked over plain.
* ``detect``: detection texts/s on texts of ~200 generator tokens (held-out human passages cut to
  that length) per detection batch size and embedder batch size; ``--texts-out`` also writes them
  as JSONL for ``python -m watermark detect-corpus``.
* ``agree``: bfloat16 against float32 on the same texts: the share of identical gates, green flags
  and detection decisions on human text, how far the p-values move, and the decisions on
  float32's watermarked texts read in each dtype.
* ``profile``: where a fused watermarked step spends its time at one batch size: per-stage seconds
  with the device synchronised at stage edges, the share of the step the GPU is busy (torch
  profiler), and the top Python functions (cProfile), written under ``--out``; then the same
  for detection of ``--texts`` texts (GPU busy share, ``detect_cprofile.txt``).

Examples::

    python -m benchmarks.bench_gpu generate --batches 1,16,64,256 --dtypes float32,bfloat16
    python -m benchmarks.bench_gpu detect --texts 512 --texts-out runs/gpu/texts.jsonl
    python -m benchmarks.bench_gpu profile --batch 64 --out runs/gpu
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

import torch

from benchmarks.inputs import human_texts, prompts
from evaluation.speed import timed_generate
from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.models.loaders import load_lm

ROOT = Path(__file__).resolve().parents[1]


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


def load(args: argparse.Namespace, dtype: str) -> tuple[Watermark, torch.nn.Module]:
    """The shipped watermark and its generator on the GPU in ``dtype``."""
    cfg = as_config(args.config)
    if args.embed_batch:
        cfg = cfg.evolve(embed_batch_size=args.embed_batch)
    model, tokenizer = load_lm(cfg.models.generator, dtype=getattr(torch, dtype))
    model = model.to(args.device)
    return Watermark.load(cfg, tokenizer=tokenizer, generator=model, dtype=dtype), model


def device_name() -> str:
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def cmd_generate(args: argparse.Namespace) -> dict:
    rows = []
    for dtype in args.dtypes.split(","):
        wm, model = load(args, dtype)
        timed_generate(wm, model, prompts(wm, 2), 8, True)  # warm-up: kernels, allocator
        timed_generate(wm, model, prompts(wm, 2), 8, False)
        for batch in map(int, args.batches.split(",")):
            batch_prompts = prompts(wm, batch)
            found = {}
            for name, marked, own in (
                ("plain", False, False),
                ("fused", True, False),
                ("unfused", True, True),  # the model's own generate with our processor
            ):
                if name not in args.modes.split(",") + ["plain", "fused"]:
                    continue
                sync()
                _, found[name] = timed_generate(
                    wm, model, batch_prompts, args.new_tokens, marked, own_generate=own
                )
            row = {"dtype": dtype, "batch": batch, "new_tokens": args.new_tokens}
            for name, res in found.items():
                row[f"{name}_tokens_per_s"] = round(res["tokens_per_s"], 1)
            row["fused_ratio"] = round(
                found["fused"]["tokens_per_s"] / found["plain"]["tokens_per_s"], 3
            )
            if "unfused" in found:
                row["unfused_ratio"] = round(
                    found["unfused"]["tokens_per_s"] / found["plain"]["tokens_per_s"], 3
                )
            log(json.dumps(row))
            rows.append(row)
        del wm, model
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return {"device": device_name(), "embed_batch": args.embed_batch, "rows": rows}


def cmd_detect(args: argparse.Namespace) -> dict:
    wm, _ = load(args, args.dtypes.split(",")[0])
    texts = human_texts(wm.tokenizer, args.texts, 200)
    if args.texts_out:
        extra = human_texts(wm.tokenizer, args.corpus_texts, 200) if args.corpus_texts else texts
        args.texts_out.parent.mkdir(parents=True, exist_ok=True)
        with args.texts_out.open("w", encoding="utf-8") as f:
            for n, text in enumerate(extra):
                f.write(json.dumps({"id": n, "text": text}) + "\n")
    rows = []
    for workers in map(int, args.workers.split(",")):
        wm.detect(texts[:8], workers=workers)  # warm-up, and starts the workers
        for embed_batch in map(int, args.embed_batches.split(",")):
            wm.core.semantic.batch_size = embed_batch
            for batch in map(int, args.detect_batches.split(",")):
                sync()
                start = time.perf_counter()
                found = wm.detect(texts, batch_size=batch, workers=workers)
                seconds = time.perf_counter() - start
                tokens = sum(r.num_tokens for r in found) / len(found)
                row = {
                    "detect_batch": batch,
                    "embed_batch": embed_batch,
                    "workers": workers,
                    "texts": len(texts),
                    "texts_per_s": round(len(texts) / seconds, 1),
                    "tokens_per_text": tokens,
                }
                log(json.dumps(row))
                rows.append(row)
        wm.detector.close()
    return {"device": device_name(), "dtype": wm.config.runtime.compute_dtype, "rows": rows}


def cmd_agree(args: argparse.Namespace) -> dict:
    found = {}
    texts = marked = None
    for dtype in ("float32", "bfloat16"):
        wm, model = load(args, dtype)
        texts = texts or human_texts(wm.tokenizer, args.texts, 200)
        found[dtype] = wm.detect(texts)
        outs = wm.generate(model, prompts(wm, args.texts), args.new_tokens, seed=0)
        found[dtype + "_gen"] = [o.token_ids for o in outs]
        marked = marked or [o.text for o in outs]  # float32's watermarked texts, read in both
        found[dtype + "_marked"] = wm.detect(marked)
        del wm, model
    marked_pairs = list(zip(found["float32_marked"], found["bfloat16_marked"]))
    pairs = list(zip(found["float32"], found["bfloat16"]))
    same_gate = same_green = total = 0
    for a, b in pairs:
        total += len(a.scored)
        same_gate += sum(x == y for x, y in zip(a.scored, b.scored))
        same_green += sum(
            x == y for x, y, s, t in zip(a.green, b.green, a.scored, b.scored) if s and t
        )
    both = sum(sum(s and t for s, t in zip(a.scored, b.scored)) for a, b in pairs)
    moved = sorted(abs(a.p_value - b.p_value) for a, b in pairs)
    return {
        "texts": len(pairs),
        "same_gate_share": same_gate / total,
        "same_green_share_where_both_scored": same_green / both,
        "same_decision_share": sum(a.is_watermarked == b.is_watermarked for a, b in pairs)
        / len(pairs),
        "p_value_equal_share": sum(m == 0 for m in moved) / len(moved),
        "p_value_abs_diff_median": moved[len(moved) // 2],
        "p_value_abs_diff_max": moved[-1],
        "watermarked_texts_flagged_float32": sum(a.is_watermarked for a, _ in marked_pairs),
        "watermarked_texts_flagged_bfloat16": sum(b.is_watermarked for _, b in marked_pairs),
        "same_decision_share_watermarked": sum(
            a.is_watermarked == b.is_watermarked for a, b in marked_pairs
        )
        / len(marked_pairs),
        "generation_identical_share": sum(
            x == y for x, y in zip(found["float32_gen"], found["bfloat16_gen"])
        )
        / args.texts,
    }


def cmd_profile(args: argparse.Namespace) -> dict:
    from torch.profiler import ProfilerActivity, profile

    wm, model = load(args, args.dtypes.split(",")[0])
    batch_prompts = prompts(wm, args.batch)
    timed_generate(wm, model, batch_prompts[:2], 8, True)
    _, plain = timed_generate(wm, model, batch_prompts, args.new_tokens, False)
    _, synced = timed_generate(wm, model, batch_prompts, args.new_tokens, True, sync=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        _, marked = timed_generate(wm, model, batch_prompts, args.new_tokens, True)
    events = prof.key_averages()
    gpu_us = sum(e.self_device_time_total for e in events)
    profiler = cProfile.Profile()
    profiler.enable()
    timed_generate(wm, model, batch_prompts, args.new_tokens, True)
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(40)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cprofile.txt").write_text(stream.getvalue())
    table = events.table(sort_by="self_cpu_time_total", row_limit=40)
    (args.out / "torch_profile.txt").write_text(table)
    steps = args.new_tokens
    stages = {k: v for k, v in synced.items() if k.endswith("_s") and k != "tokens_per_s"}
    found = {
        "batch": args.batch,
        "dtype": wm.config.runtime.compute_dtype,
        "steps": steps,
        "plain_ms_per_step": 1000 * plain["seconds"] / steps,
        "fused_ms_per_step_under_profiler": 1000 * marked["seconds"] / steps,
        "gpu_busy_share_fused": gpu_us / 1e6 / marked["seconds"],
        "synced_stage_ms_per_step": {k[:-2]: 1000 * v / steps for k, v in stages.items()},
        "synced_fused_ms_per_step": 1000 * synced["seconds"] / steps,
    }
    # the generation half on disk before detection starts: a step cut by its time limit keeps it
    (args.out / "profile_generate.json").write_text(json.dumps(found, indent=2))
    if not args.texts:
        return found
    texts = human_texts(wm.tokenizer, args.texts, 200)  # and the detector, the same way
    wm.detect(texts[:8], workers=args.profile_workers)
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        wm.detect(texts, workers=args.profile_workers)
    detect_s = time.perf_counter() - start
    detect_gpu_us = sum(e.self_device_time_total for e in prof.key_averages())
    profiler = cProfile.Profile()
    profiler.enable()
    wm.detect(texts, workers=args.profile_workers)
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(40)
    (args.out / "detect_cprofile.txt").write_text(stream.getvalue())
    wm.detector.close()
    return {
        **found,
        "detect_texts": len(texts),
        "detect_workers": args.profile_workers,
        "detect_texts_per_s_under_profiler": len(texts) / detect_s,
        "gpu_busy_share_detect": detect_gpu_us / 1e6 / detect_s,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["generate", "detect", "agree", "profile"])
    parser.add_argument("--config", help="watermark config JSON (default: shipped)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--batches", default="1,16,64,256")
    parser.add_argument(
        "--modes",
        default="plain,fused,unfused",
        help="generate: runs to time (plain and fused always run)",
    )
    parser.add_argument("--batch", type=int, default=64, help="profile: batch size")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--embed-batch", type=int, default=0, help="SE batch (0: the config's)")
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--detect-batches", default="64,256")
    parser.add_argument("--embed-batches", default="32,256")
    parser.add_argument("--workers", default="0", help="detect: assembly processes to try")
    parser.add_argument(
        "--profile-workers",
        type=int,
        default=0,
        help="profile: assembly processes of the profiled detection",
    )
    parser.add_argument("--texts-out", type=Path)
    parser.add_argument("--corpus-texts", type=int, default=0, help="detect: texts to write")
    parser.add_argument("--out", type=Path, default=ROOT / "runs/gpu")
    args = parser.parse_args(argv)
    command = globals()[f"cmd_{args.command}"]
    print(json.dumps(command(args), indent=2))


if __name__ == "__main__":
    main()
