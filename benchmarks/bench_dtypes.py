"""Why one dtype's plain ``generate`` is slower than another's (issue 87: plain bfloat16 was
4.2x slower than plain float32 for SmolLM2-135M on the H200 and the H100, where bfloat16
forwards alone are 3x faster).

Per dtype, plain generation (``Watermark.generate(..., watermark=False)``, transformers' own
``model.generate``) of ``--batch`` prompts runs once timed and once under the torch profiler;
one JSON line gives its ms per step, the share of the run the GPU is busy, the model's
attention implementation, and the kernels and host operators that take the most time, per step.

    python -m benchmarks.bench_dtypes --batch 64 --new-tokens 32
"""

from __future__ import annotations

import argparse
import json

import torch

from benchmarks.bench_gpu import device_name, load, log
from benchmarks.inputs import prompts
from evaluation.speed import timed_generate


def top_events(events: list, attr: str, steps: int, count: int = 8) -> list[list]:
    """The ``count`` profiler events with the most ``attr`` (microseconds): name, ms per step."""
    ranked = sorted(events, key=lambda e: -getattr(e, attr))[:count]
    return [[e.key[:90], round(getattr(e, attr) / 1000 / steps, 3)] for e in ranked]


def profile_dtype(args: argparse.Namespace, dtype: str) -> dict:
    """One dtype's row: plain generation timed, then profiled."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    wm, model = load(args, dtype)
    batch_prompts = prompts(wm, args.batch)
    timed_generate(wm, model, batch_prompts[:2], 8, False)  # warm-up: kernels, allocator
    _, plain = timed_generate(wm, model, batch_prompts, args.new_tokens, False)
    with profile(activities=activities) as prof:
        _, profiled = timed_generate(wm, model, batch_prompts, args.new_tokens, False)
    events, steps = prof.key_averages(), args.new_tokens
    device_us = sum(e.self_device_time_total for e in events)
    row = {
        "dtype": dtype,
        "attention": getattr(model.config, "_attn_implementation", None),
        "plain_ms_per_step": round(1000 * plain["seconds"] / steps, 2),
        "profiled_ms_per_step": round(1000 * profiled["seconds"] / steps, 2),
        "gpu_busy_share": round(device_us / 1e6 / profiled["seconds"], 3),
        "top_kernels_ms_per_step": top_events(events, "self_device_time_total", steps),
        "top_host_ops_ms_per_step": top_events(events, "self_cpu_time_total", steps),
    }
    del wm, model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="watermark config JSON (default: shipped)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--embed-batch", type=int, default=0, help="SE batch (0: the config's)")
    args = parser.parse_args(argv)
    rows = []
    for dtype in args.dtypes.split(","):
        rows.append(profile_dtype(args, dtype))
        log(json.dumps(rows[-1]))
    answer = {"bench": "dtypes", "device": device_name(), "batch": args.batch}
    print(json.dumps({**answer, "new_tokens": args.new_tokens, "rows": rows}))


if __name__ == "__main__":
    main()
