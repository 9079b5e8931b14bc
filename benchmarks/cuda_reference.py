"""CUDA against a CPU reference computed beforehand (a script printing one JSON object).

Detection on CUDA must give the CPU's decisions and green counts. CPU detection is slow on a lent
GPU machine, whose minutes are few, so the CPU side is computed here once and committed:

* ``make`` (on a CPU): 40 held-out human passages and 40 texts watermarked on the CPU with the
  shipped config (prompts of 40 other held-out documents, 200 new tokens, seed 0), each detected
  on the CPU; written to ``benchmarks/cuda-reference.jsonl.gz`` (text, decision, p-value, tested
  and green-tested counts, per-token scored and green flags);
* ``check`` (on the GPU machine): the same 80 texts detected on CUDA (batched detection, the
  accelerator's default); prints how many decisions and green counts are the CPU's, the largest
  p-value difference and the share of identical per-token flags.

    python -m benchmarks.cuda_reference make
    python -m benchmarks.cuda_reference check --device cuda
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from evaluation.heldout import units
from watermark.api import Watermark
from watermark.models.loaders import load_lm

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "data/corpus/heldout.jsonl.gz"
REFERENCE = ROOT / "benchmarks/cuda-reference.jsonl.gz"
TEXTS = 40  # of each kind


def reference_texts(tokenizer: object) -> list[dict]:
    """``{"kind", "id", ...}``: the human passages, then the prompts to watermark."""
    found = units(HELDOUT, tokenizer, None, 150, 200)
    human = [{"kind": "human", "id": u["id"], "text": u["human"]} for u in found[:TEXTS]]
    marked = [{"kind": "watermarked", "id": u["id"], "prompt": u["prompt"]} for u in found[TEXTS:]]
    return human + marked[:TEXTS]


def summary(result: object) -> dict:
    """What the check compares of one detection result."""
    return {
        "is_watermarked": result.is_watermarked,
        "p_value": result.p_value,
        "num_tested": result.num_tested,
        "num_green_tested": result.num_green_tested,
        "scored": result.scored,
        "green": result.green,
    }


def make(args: argparse.Namespace) -> dict:
    model, tokenizer = load_lm("smollm2-135m")
    wm = Watermark.load(tokenizer=tokenizer, generator=model, device="cpu")
    rows = reference_texts(tokenizer)
    prompts = [r["prompt"] for r in rows if r["kind"] == "watermarked"]
    outs = []
    for at in range(0, len(prompts), args.batch):
        outs += wm.generate(prompts[at : at + args.batch], max_new_tokens=200, seed=at)
        print(f"generated {len(outs)} of {len(prompts)}", file=sys.stderr, flush=True)
    for row, out in zip([r for r in rows if r["kind"] == "watermarked"], outs):
        row["text"] = out.text
    for row, result in zip(rows, wm.detect([r["text"] for r in rows])):
        row.update(summary(result))
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    with open(REFERENCE, "wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as gz:
        gz.write("".join(json.dumps(r) + "\n" for r in rows).encode())
    return {
        kind: sum(r["is_watermarked"] for r in rows if r["kind"] == kind)
        for kind in ("human", "watermarked")
    }


def check(args: argparse.Namespace) -> dict:
    with gzip.open(REFERENCE, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    wm = Watermark.load(device=args.device)
    found = [summary(r) for r in wm.detect([r["text"] for r in rows])]
    same_flags = total_flags = 0
    for ref, got in zip(rows, found):
        for name in ("scored", "green"):
            same_flags += sum(a == b for a, b in zip(ref[name], got[name]))
            total_flags += len(ref[name])
    return {
        "device": str(wm.core.device),
        "batched": wm.detector.fixed,
        "texts": len(rows),
        "same_decisions": sum(
            a["is_watermarked"] == b["is_watermarked"] for a, b in zip(rows, found)
        ),
        "same_green_counts": sum(
            (a["num_tested"], a["num_green_tested"]) == (b["num_tested"], b["num_green_tested"])
            for a, b in zip(rows, found)
        ),
        "max_p_difference": max(abs(a["p_value"] - b["p_value"]) for a, b in zip(rows, found)),
        "same_flag_share": same_flags / total_flags,
        "flagged_cpu": {
            k: sum(r["is_watermarked"] for r in rows if r["kind"] == k)
            for k in ("human", "watermarked")
        },
        "flagged_here": {
            k: sum(f["is_watermarked"] for r, f in zip(rows, found) if r["kind"] == k)
            for k in ("human", "watermarked")
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["make", "check"])
    parser.add_argument("--device", default="cuda", help="check: where to detect")
    parser.add_argument("--batch", type=int, default=8, help="make: prompts per generate call")
    args = parser.parse_args(argv)
    print(json.dumps({"cuda_reference": args.command, **globals()[args.command](args)}))


if __name__ == "__main__":
    main()
