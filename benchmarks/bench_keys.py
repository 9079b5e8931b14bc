"""Cost of key rotation: detection seconds per text with one key against several, side by side.

Both watermarks share the generator, the embedder and the mapper; the rotated one tries the
shipped key plus ``--keys - 1`` fresh ones. Prints one JSON object with the seconds per text of
each and their ratio, after checking that the shipped key's own p-values agree.

Example::

    python -m benchmarks.bench_keys --texts 24 --keys 3
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from evaluation.heldout import units
from watermark.api import Watermark
from watermark.config.keys import fresh_key
from watermark.config.watermark_config import as_config
from watermark.models.loaders import load_lm

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=24)
    parser.add_argument("--keys", type=int, default=3)
    args = parser.parse_args(argv)
    cfg = as_config(None)
    model, tokenizer = load_lm(cfg.models.generator)
    one = Watermark.load(cfg, tokenizer=tokenizer, generator=model)
    rotated_cfg = cfg.evolve(old_keys=[fresh_key() for _ in range(args.keys - 1)])
    rotated = Watermark.load(
        rotated_cfg, tokenizer=tokenizer, generator=model, embedder=one.embedder, mapper=one.mapper
    )
    found = units(ROOT / "data/corpus/heldout.jsonl.gz", tokenizer, None, 150, 200)
    texts = [u["human"] for u in found[: args.texts]]
    one.detect(texts[:2])  # warm-up
    seconds = {}
    for name, wm in (("one_key", one), ("rotated", rotated), ("one_key_again", one)):
        start = time.perf_counter()
        results = wm.detect(texts)
        seconds[name] = (time.perf_counter() - start) / len(texts)
        if name == "one_key":
            single = [r.p_value for r in results]
        if name == "rotated":
            agree = all(r.key_p_values[0] == p for r, p in zip(results, single))
    one_key = (seconds["one_key"] + seconds["one_key_again"]) / 2
    print(
        json.dumps(
            {
                "texts": len(texts),
                "keys": args.keys,
                "s_per_text": seconds,
                "ratio_rotated_to_one_key": seconds["rotated"] / one_key,
                "shipped_key_p_values_agree": agree,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
