"""Inputs of the published calibration table: held-out human passages and watermarked texts.

Writes ``human.jsonl`` (the first ``--human`` held-out passages of ~200 generator tokens after a
two-sentence prompt, as in ``python -m benchmarks.bench_watermark human``) and ``watermarked.jsonl``
(``--watermarked`` continuations of held-out prompts from the shipped default or ``--config``,
``--tokens`` long with EOS blocked) under ``--out``, for ``python -m watermark calibrate``.
Generation appends in batches, so an interrupted run resumes. ``--train-passages N`` also
writes ``human-train.jsonl``: N passages of 200 generator tokens from the train and val
documents of the sentence corpus (whole sentences of one document in order, at most five per
document, documents taken in turn), a second human set for :mod:`research.rotation_tail`.

Example::

    python -m research.calibration_texts --out runs/keys
    python -m watermark calibrate --human runs/keys/human.jsonl \\
        --watermarked runs/keys/watermarked.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

from evaluation.heldout import units
from research.common import ROOT, Load, load_with_generator
from watermark.config.watermark_config import as_config

HELDOUT = ROOT / "data/corpus/heldout.jsonl.gz"


def train_passages(tokenizer: object, count: int, tokens: int = 200, per_doc: int = 5) -> list:
    """Passages of ``tokens`` generator tokens from the corpus's train and val documents."""
    docs: dict[str, list[str]] = {}
    with gzip.open(ROOT / "data/corpus/sentences.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            docs.setdefault(row["doc"], []).append(row["text"])
    found: dict[str, list[str]] = {}
    for doc, sentences in docs.items():
        taken: list[str] = []
        for s in sentences:
            taken.append(s)
            ids = tokenizer(" " + " ".join(taken), add_special_tokens=False)["input_ids"]
            if len(ids) >= tokens:
                found.setdefault(doc, []).append(tokenizer.decode(ids[:tokens]))
                taken = []
            if len(found.get(doc, [])) == per_doc:
                break
    turns = [
        {"id": f"{d}-{r}", "text": found[d][r]}
        for r in range(per_doc)
        for d in sorted(found)
        if r < len(found[d])
    ]
    return turns[:count]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs/keys")
    parser.add_argument("--human", type=int, default=320)
    parser.add_argument("--watermarked", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--train-passages", type=int, default=0)
    parser.add_argument("--config", help="watermark config JSON (default: the shipped one)")
    return parser


def main(argv: list[str] | None = None, load: Load = load_with_generator) -> None:
    """Writes the files under ``--out`` (``load``: how the watermark of the config is loaded,
    with its generator)."""
    args = _parser().parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    wm = load(as_config(args.config))
    tokenizer = wm.tokenizer
    human = units(HELDOUT, tokenizer, None, 150, 200)[: args.human]
    with (args.out / "human.jsonl").open("w", encoding="utf-8") as f:
        for u in human:
            f.write(json.dumps({"id": u["id"], "text": u["human"]}) + "\n")
    print(f"{len(human)} human passages", file=sys.stderr)
    if args.train_passages:
        with (args.out / "human-train.jsonl").open("w", encoding="utf-8") as f:
            for row in train_passages(tokenizer, args.train_passages):
                f.write(json.dumps(row) + "\n")
    prompts = [u["prompt"] for u in units(HELDOUT, tokenizer, None, 0, 1)][: args.watermarked]
    path = args.out / "watermarked.jsonl"
    done = len(path.read_text().splitlines()) if path.exists() else 0
    start = time.time()
    for b in range(done, len(prompts), args.batch):
        outs = wm.generate(
            prompts[b : b + args.batch],
            max_new_tokens=args.tokens,
            seed=b,
            min_new_tokens=args.tokens,
        )
        with path.open("a", encoding="utf-8") as f:
            for o in outs:
                f.write(json.dumps({"text": o.text}) + "\n")
        print(f"generated {b + len(outs)} in {time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
