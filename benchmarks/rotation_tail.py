"""Diagnostic of the key-rotation FPR: each key's p-values on human text, and with one tested
token per mapper dimension.

Detects the human passages once with a rotation config, keeps every key's own result, and
recomputes each key's p-value over its tested tokens as they are, and keeping only the first
tested token of each mapper dimension (layer 0). It prints how many passages fall below each
cut-off per key, for both rules, and the mean tested tokens per text.

Example::

    python benchmarks/rotation_tail.py --human runs/keys/human.jsonl --config runs/keys/rot.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import watermark.detector as detector  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.config import WatermarkConfig  # noqa: E402
from watermark.models import load_lm  # noqa: E402
from watermark.stats import green_test  # noqa: E402

CUTOFFS = (0.001, 1 / 300, 0.01, 0.05)


def key_p_values(result: object, dims: object) -> dict:
    """p-value over the tested tokens, and over the first tested token of each dimension."""
    seen, kept, every = set(), ([], []), ([], [])
    for i, tested in enumerate(result.tested):
        if not tested:
            continue
        every[0].append(result.green[i])
        every[1].append(result.gamma[i])
        dim = int(dims[result.token_ids[i]])
        if dim not in seen:
            seen.add(dim)
            kept[0].append(result.green[i])
            kept[1].append(result.gamma[i])
    return {"p": green_test(*every)[1], "p_one_per_dim": green_test(*kept)[1],
            "tested": len(every[0]), "tested_one_per_dim": len(kept[0])}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--human", type=Path, required=True, help="JSONL with a 'text' field")
    parser.add_argument("--config", type=Path, required=True, help="config with old_keys")
    args = parser.parse_args(argv)
    per_text = []
    best_key = detector.Detector._best_key

    def keep(self, per_key):  # every key's own result, before the best is picked
        per_text.append(per_key)
        return best_key(self, per_key)

    detector.Detector._best_key = keep
    cfg = WatermarkConfig.load(args.config)
    model, tokenizer = load_lm(cfg.generator)
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model)
    texts = [json.loads(x)["text"] for x in args.human.read_text().splitlines() if x.strip()]
    wm.detect(texts, progress=True)
    maps = [m[0][0] for m in wm.core.semantic.key_maps]  # layer 0 of each key
    rows = [[key_p_values(r, maps[k]) for k, r in enumerate(found)] for found in per_text]
    out = {"texts": len(rows), "keys": len(maps)}
    for name in ("p", "p_one_per_dim"):
        for c in CUTOFFS:
            out[f"{name}<{c:.4g}"] = [
                sum(row[k][name] < c for row in rows) for k in range(len(maps))
            ]
    for name in ("tested", "tested_one_per_dim"):
        out[name + "_per_text"] = sum(row[0][name] for row in rows) / len(rows)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
