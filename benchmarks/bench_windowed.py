"""Cost and power of the windowed test against the whole-text test, side by side in one run
(a script, not a timed test; prints one JSON line per text set).

Both tests run on the same texts with the same loaded models: the windowed config differs only in
``window_sizes`` (a shallow copy of the loaded core with that config). Each round times both, in
alternating order, after one warm-up pass; the line gives the median seconds per text of each,
their ratio, and how many texts each flags at the config's ``target_fpr``.

Example::

    python -m benchmarks.bench_windowed --texts runs/keys/human.jsonl \
        --texts runs/keys/watermarked.jsonl --limit 32 --windows 128,256
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.detect.detector import Detector


def timed(wm: Watermark | Detector, texts: list[str]) -> tuple[float, list]:
    """Seconds per text and the results of one detection pass."""
    start = time.perf_counter()
    results = wm.detect(texts)
    return (time.perf_counter() - start) / len(texts), results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--texts",
        type=Path,
        action="append",
        required=True,
        help="JSONL with a 'text' field (repeatable)",
    )
    parser.add_argument("--config", help="watermark config JSON (default: shipped)")
    parser.add_argument("--windows", default="128,256", help="window sizes of the windowed test")
    parser.add_argument("--limit", type=int, default=32, help="texts per file")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    cfg = as_config(args.config)
    sizes = [int(w) for w in args.windows.split(",") if w]
    whole = Watermark.load(cfg.evolve(window_sizes=[]))
    windowed = Detector(whole.core, window_sizes=sizes)  # the same models and core
    for path in args.texts:
        with path.open(encoding="utf-8") as f:
            texts = [json.loads(line)["text"] for line in f][: args.limit]
        timed(whole, texts[:2])  # warm-up
        seconds: dict[str, list[float]] = {"whole": [], "windowed": []}
        flagged = {}
        for r in range(args.rounds):
            order = [("whole", whole), ("windowed", windowed)]
            for name, wm in order if r % 2 == 0 else order[::-1]:
                sec, results = timed(wm, texts)
                seconds[name].append(sec)
                flagged[name] = sum(res.is_watermarked for res in results)
        whole_s, win_s = (statistics.median(seconds[k]) for k in ("whole", "windowed"))
        print(
            json.dumps(
                {
                    "texts": str(path),
                    "n": len(texts),
                    "windows": sizes,
                    "whole_s_per_text": round(whole_s, 4),
                    "windowed_s_per_text": round(win_s, 4),
                    "cost_ratio": round(win_s / whole_s, 3),
                    "flagged_whole": flagged["whole"],
                    "flagged_windowed": flagged["windowed"],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
