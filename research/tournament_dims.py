"""Diagnostic: does counting each mapper dimension once per text calibrate the tournament's test?

A tournament over L green lists tests about L bits per token; with D mapper outputs, many bits of
one text read the same output, and two reads of one output in nearby contexts tend to agree, so
the bits are not independent and the whole-text p-value is too small on human text. This script
detects texts under a config (windowed test off) and recomputes, for each text, the whole-text
p-value twice: as shipped (every tested bit) and keeping only the first tested bit of each
output. It does not change the detector: it wraps two of its functions for the run so that each
tested bit carries its output index (``2 * output + bit``), then splits them again.

Prints one JSON line per text set: texts, bits per text, and the share below 0.01 / 0.05 (human
texts: the FPR) with both tests, and their median z.

Example::

    python research/tournament_dims.py --layers 6 --temperature 1.02 --context-guard 4 \\
        --repeats bigram --human 320 --watermarked runs/eval/choose
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import watermark.detect.assembly as assembly  # noqa: E402
from evaluation.heldout import units  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.config.schemes import Tournament  # noqa: E402
from watermark.config.watermark_config import as_config  # noqa: E402
from watermark.core.green_lists import GreenLists  # noqa: E402
from watermark.core.stats import green_test  # noqa: E402
from watermark.core.units import first_reads  # noqa: E402
from watermark.models.loaders import load_lm  # noqa: E402

RECORDS: list[dict] = []


# the detector's own lookups, each bit coded with the output it read
_DIMS, _REPEAT_DIMS = GreenLists.dims, GreenLists.repeat_dims


def _contains(self: GreenLists, token_ids: torch.Tensor) -> torch.Tensor:
    dims = _DIMS(self, token_ids)
    return 2 * dims + self.signs.gather(1, dims).long()


def _contains_repeat(self: GreenLists, token_ids: torch.Tensor, previous: torch.Tensor):
    dims = _REPEAT_DIMS(self, token_ids, previous)
    return 2 * dims + self.signs.gather(1, dims).long()


def _green_test(coded: list[int], gammas: list[float]) -> tuple[float, float]:
    bits = [c & 1 for c in coded]
    z, p = green_test(bits, gammas)
    keep = first_reads([[c >> 1] for c in coded], range(len(coded)), once=True)
    z1, p1 = green_test([bits[i] for i in keep], [gammas[i] for i in keep])
    RECORDS.append(
        {"z": z, "p": p, "z_once": z1, "p_once": p1, "bits": len(bits), "bits_once": len(keep)}
    )
    return z, p


def summary(name: str, rows: list[dict]) -> dict:
    out = {
        "texts": name,
        "n": len(rows),
        "bits": float(np.mean([r["bits"] for r in rows])),
        "bits_once": float(np.mean([r["bits_once"] for r in rows])),
    }
    for kind in ("p", "p_once"):
        ps = np.array([r[kind] for r in rows])
        out[f"{kind}<0.01"] = int((ps < 0.01).sum())
        out[f"{kind}<0.05"] = int((ps < 0.05).sum())
    out["z_median"] = float(np.median([r["z"] for r in rows]))
    out["z_once_median"] = float(np.median([r["z_once"] for r in rows]))
    out["z_sd"] = float(np.std([r["z"] for r in rows]))
    out["z_once_sd"] = float(np.std([r["z_once"] for r in rows]))
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--temperature", type=float, default=1.02)
    parser.add_argument("--context-guard", type=int, default=4)
    parser.add_argument("--repeats", default="bigram")
    parser.add_argument("--human", type=int, default=320)
    parser.add_argument("--watermarked", type=Path, help="JSONL with a 'text' field")
    parser.add_argument(
        "--keys",
        help="comma-separated keys to detect the human texts under, "
        "each on its own line (default: the shipped key)",
    )
    args = parser.parse_args()
    cfg = as_config(None).evolve(
        scaling="tournament",
        layers=args.layers,
        temperature=args.temperature,
        context_guard=args.context_guard,
        repeats=args.repeats,
        window_sizes=[],
    )
    model, tokenizer = load_lm(cfg.models.generator)
    GreenLists.contains, GreenLists.contains_repeat = _contains, _contains_repeat
    assembly.green_test = _green_test
    Tournament.score = lambda self, green: 0.0
    heldout = units(ROOT / "data/corpus/heldout.jsonl.gz", tokenizer, None, 150, 200)
    human = [u["human"] for u in heldout[: args.human]]
    for key in args.keys.split(",") if args.keys else [cfg.keys.key]:
        wm = Watermark.load(cfg.evolve(key=key), tokenizer=tokenizer, generator=model)
        sets = [("human", human)]
        if args.watermarked and key == cfg.keys.key:
            lines = args.watermarked.read_text().splitlines()
            sets.append(("watermarked", [json.loads(x)["text"] for x in lines]))
        for name, texts in sets:
            RECORDS.clear()
            wm.detect(texts, progress=True)
            print(json.dumps({"key": key, **summary(name, list(RECORDS))}), flush=True)


if __name__ == "__main__":
    main()
