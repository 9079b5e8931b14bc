"""Detection time per text against its compute floor, measured in one run (a script, not a
timed test; prints one JSON object).

The floor is the models' own work on a text: the measurement model's forward (stage ``mm``),
the sentence embedder's forwards (stage ``embed``) and the mapper (stage ``map``), timed by
forward hooks (:class:`evaluation.stage_times.StageTimes`). Everything else (tokenizing,
decoding, reads, the tests, the per-token flags) is overhead. Texts are detected as
``python -m watermark detect`` does (batches of 8, the shipped default), best of ``--rounds``.

Example::

    python -m benchmarks.bench_detect_floor --texts 16 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from benchmarks.inputs import human_texts
from evaluation.stage_times import StageTimes
from watermark.api import Watermark


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    wm = Watermark.load()
    texts = human_texts(wm.core.tokenizer, args.texts, args.tokens)
    wm.detect(texts[:2])  # warm-up
    best = None
    for _ in range(args.rounds):
        with StageTimes(wm) as timed:
            start = time.perf_counter()
            wm.detect(texts)
            total = time.perf_counter() - start
        stages = timed.totals()
        row = {
            "mm_forward": stages.get("mm", 0.0),
            "se_forward": stages.get("embed", 0.0),
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
