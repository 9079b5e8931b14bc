"""Detection's host work per text, the part an accelerator cannot take over (a script, not a
timed test; prints one JSON object).

On a GPU, detection of 200-token texts is bound by the host: the models' forwards are short
there, and what is left is Python and numpy per text (the windowed test, the reads of every
step, the token pieces, the embedder's tokenizer). This measures that work on any machine,
from outside the runtime (nothing in it is replaced or wrapped):

* ``host_ms_per_text``: detection wall time minus the time inside the MM's, the embedder's and
  the mapper's forwards (forward hooks, :class:`~evaluation.stage_times.StageTimes`) and the
  gate entropies, per text, best of ``--rounds`` (with ``--batched``, of batched detection, the
  accelerator's path, timed here on the CPU; per text, the texts run side by side on the
  threads and the figure is low);
* ``parts_ms_per_text``: the host's parts (the assembly, the windowed test, the token pieces,
  the entropies, and the embedder's tokenizer and sentence-transformers around its forward,
  ``embed_overhead``) from one more round under :mod:`cProfile` at one thread (the profiler
  sees the calling thread only), whose overhead inflates the Python-heavy parts: compare them
  with each other and across versions, not with the total;
* ``detect_texts_per_s_by_workers``: detection of the same texts with the results assembled in
  this process (0) and in ``--workers`` worker processes.

Until 0.10 it timed the parts by replacing the runtime's functions for the run, and it also
timed the windowed test against 0.3.0's per-bit draws (5.7x, at commit ``295d2d5``) and the
assembly alone in worker processes (at commit ``99846af``).

Example::

    python -m benchmarks.bench_detect_host --texts 24
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time

import torch

from benchmarks.inputs import human_texts
from evaluation.stage_times import StageTimes
from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.models.loaders import load_lm

# the host's parts: (module file, function) -> name, read from the profile
PARTS = {
    ("assembly.py", "assemble"): "assemble",
    ("stats.py", "windowed_test"): "windowed_test",
    ("assembly.py", "token_pieces"): "token_pieces",
    ("measurement.py", "entropy_from_logits"): "entropy",
    ("semantic.py", "embed"): "embed",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=24, help="texts of 200 generator tokens")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--workers",
        type=int,
        nargs="*",
        default=[2],
        help="assembly worker processes to time against none",
    )
    parser.add_argument(
        "--batched",
        action="store_true",
        help="batched detection (fixed-shape forwards shared by the texts, as on an accelerator)",
    )
    return parser


def profiled_parts(wm: Watermark, texts: list[str]) -> dict[str, float]:
    """Milliseconds per text of each of :data:`PARTS` (cumulative, under cProfile, every text
    in this thread)."""
    profile, threads = cProfile.Profile(), torch.get_num_threads()
    torch.set_num_threads(1)  # detection then runs its texts in this thread
    try:
        profile.runcall(wm.detect, texts, batch_size=len(texts))
    finally:
        torch.set_num_threads(threads)
    found = dict.fromkeys(PARTS.values(), 0.0)
    for (path, _, function), row in pstats.Stats(profile).stats.items():
        name = PARTS.get((path.rsplit("/", 1)[-1], function))
        if name is not None:
            found[name] += 1000 * row[3] / len(texts)  # cumulative seconds
    return found


def host_times(wm: Watermark, texts: list[str], rounds: int) -> dict[str, float]:
    """Milliseconds per text of the whole detection and of the models' forwards (best of
    ``rounds``), the host's share and its parts."""
    wm.detect(texts[:2])  # warm-up
    best: dict[str, float] = {}
    for _ in range(rounds):
        with StageTimes(wm) as stages:
            start = time.perf_counter()
            wm.detect(texts, batch_size=len(texts))
            total = time.perf_counter() - start
        spent = {"total": total, **stages.totals()}
        for key, seconds in spent.items():
            best[key] = min(best.get(key, float("inf")), 1000 * seconds / len(texts))
    parts = profiled_parts(wm, texts)
    device = sum(best.get(k, 0.0) for k in ("mm", "embed", "map"))
    best["host"] = best["total"] - device - parts["entropy"]
    parts["embed_overhead"] = max(0.0, parts.pop("embed") - best.get("embed", 0.0))
    return {**best, "parts": parts}


def worker_rates(wm: Watermark, texts: list[str], workers: list[int]) -> dict[int, float]:
    """Texts per second of detection with the results assembled in this process (0) and in
    each number of worker processes."""
    rates = {}
    for count in [0, *workers]:
        wm.detect(texts[:2], workers=count)  # warm-up, and starts the workers
        start = time.perf_counter()
        wm.detect(texts, workers=count)
        rates[count] = round(len(texts) / (time.perf_counter() - start), 1)
    wm.detector.close()
    return rates


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    cfg = as_config(None)
    model, tokenizer = load_lm(cfg.models.generator)
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model)
    wm.detector.batched = args.batched or None
    texts = human_texts(wm.tokenizer, args.texts, 200)
    best = host_times(wm, texts, args.rounds)
    parts = {k: round(v, 2) for k, v in best["parts"].items()}
    print(
        json.dumps(
            {
                "texts": len(texts),
                "threads": torch.get_num_threads(),
                "batched": wm.detector.fixed,
                "host_ms_per_text": round(best["host"], 2),
                "total_ms_per_text": round(best["total"], 2),
                "parts_ms_per_text": parts,
                "detect_texts_per_s_by_workers": worker_rates(wm, texts, args.workers),
            }
        )
    )


if __name__ == "__main__":
    main()
