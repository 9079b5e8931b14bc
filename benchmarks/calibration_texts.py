"""Inputs of the published calibration table: held-out human passages and watermarked texts.

Writes ``human.jsonl`` (the first ``--human`` held-out passages of ~200 generator tokens after a
two-sentence prompt, as in ``bench_watermark.py human``) and ``watermarked.jsonl``
(``--watermarked`` continuations of held-out prompts from the shipped default, ``--tokens`` long
with EOS blocked) under ``--out``, for ``python -m watermark calibrate``. Generation appends in
batches, so an interrupted run resumes.

Example::

    python benchmarks/calibration_texts.py --out runs/keys
    python -m watermark calibrate --human runs/keys/human.jsonl \\
        --watermarked runs/keys/watermarked.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from watermark.api import Watermark  # noqa: E402
from watermark.config import as_config  # noqa: E402
from watermark.evaluate.heldout import units  # noqa: E402
from watermark.models import load_lm  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs/keys")
    parser.add_argument("--human", type=int, default=320)
    parser.add_argument("--watermarked", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cfg = as_config(None)
    model, tokenizer = load_lm(cfg.generator)
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model)
    heldout = ROOT / "data/corpus/heldout.jsonl.gz"
    human = units(heldout, tokenizer, None, 150, 200)[: args.human]
    with (args.out / "human.jsonl").open("w", encoding="utf-8") as f:
        for u in human:
            f.write(json.dumps({"id": u["id"], "text": u["human"]}) + "\n")
    print(f"{len(human)} human passages", file=sys.stderr)
    prompts = [u["prompt"] for u in units(heldout, tokenizer, None, 0, 1)][: args.watermarked]
    path = args.out / "watermarked.jsonl"
    done = len(path.read_text().splitlines()) if path.exists() else 0
    start = time.time()
    for b in range(done, len(prompts), args.batch):
        outs = wm.generate(model, prompts[b : b + args.batch], args.tokens, seed=b,
                           min_new_tokens=args.tokens)  # fmt: skip
        with path.open("a", encoding="utf-8") as f:
            for o in outs:
                f.write(json.dumps({"text": o.text}) + "\n")
        print(f"generated {b + len(outs)} in {time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
