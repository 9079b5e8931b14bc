"""Detection time per text against its compute floor, measured in one run (a script, not a
timed test; prints one JSON object).

The floor is the models' own work on a text: the measurement model's forward (stage ``mm``),
the sentence embedder's forwards (the model call inside sentence-transformers, timed by wrapping
it) and the mapper (stage ``map``). Everything else (tokenizing, decoding, reads, the tests, the
per-token flags) is overhead. Texts are detected as ``python -m watermark detect`` does
(batches of 8, the shipped default), best of ``--rounds``.

Example::

    python benchmarks/bench_detect_floor.py --texts 16 --rounds 2
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

from benchmarks.bench_gpu import human_texts  # noqa: E402
from watermark.api import Watermark  # noqa: E402


class Timed:
    """Wraps a module's ``forward`` and adds its seconds to ``self.seconds``."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.seconds, self.inner = 0.0, module.forward
        module.forward = self

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.inner(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    wm = Watermark.load()
    texts = human_texts(wm.core.tokenizer, args.texts, args.tokens)
    wm.detect(texts[:2])  # warm-up
    se = Timed(wm.core.semantic.embedder)
    timer = wm.core.semantic.timer
    best = None
    for _ in range(args.rounds):
        timer.reset()
        se.seconds = 0.0
        start = time.perf_counter()
        wm.detect(texts)
        total = time.perf_counter() - start
        stages = timer.totals()
        row = {
            "mm_forward": stages.get("mm", 0.0),
            "se_forward": se.seconds,
            "mapper": stages.get("map", 0.0),
        }
        row = {k: v / len(texts) for k, v in row.items()}
        row["floor"] = sum(row.values())
        row["per_text"] = total / len(texts)
        if best is None or row["per_text"] < best["per_text"]:
            best = row
    out = {k: round(v, 3) for k, v in best.items()}
    out.update(
        ratio_to_floor=round(best["per_text"] / best["floor"], 3),
        texts=args.texts,
        tokens=args.tokens,
        threads=args.threads,
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
