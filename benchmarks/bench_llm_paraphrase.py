"""Whole-text paraphraser speed by batch size (a script, not a timed test; one JSON line each).

For each batch size, times one ``generate`` call that only fills the prompt (prefill) and one
that also decodes ``--steps`` tokens, on the first held-out texts cut to ``--tokens`` tokens and
wrapped in the paraphrase prompt. It prints the prefill and per-step seconds and what a
paraphrase costs per text at that batch size (an output of 1.25x the source's tokens, all rows
ending together), which is what the evaluation's ``llm_paraphrase_batch`` trades.

Example::

    python -m benchmarks.bench_llm_paraphrase --batches 8 16 32
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import torch

from data.llm_paraphrase import TextParaphraser

ROOT = Path(__file__).resolve().parents[1]


def timed_generate(paraphraser: TextParaphraser, batch: dict, steps: int) -> float:
    """Seconds of one greedy ``generate`` call of exactly ``steps`` new tokens."""
    start = time.perf_counter()
    with torch.inference_mode():
        paraphraser.model.generate(
            **batch,
            do_sample=False,
            min_new_tokens=steps,
            max_new_tokens=steps,
            pad_token_id=paraphraser.tokenizer.pad_token_id,
        )
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--heldout", default=str(ROOT / "data/corpus/heldout.jsonl.gz"))
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--tokens", type=int, default=200, help="tokens of each source text")
    parser.add_argument("--steps", type=int, default=25, help="decoded tokens timed")
    args = parser.parse_args(argv)

    paraphraser = TextParaphraser(args.model)
    tok = paraphraser.tokenizer
    with gzip.open(args.heldout, "rt", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for _, line in zip(range(max(args.batches)), handle)]
    texts = [tok.decode(tok(t).input_ids[: args.tokens]) for t in texts]
    warm = tok([paraphraser.prompt(texts[0])], return_tensors="pt").to(paraphraser.model.device)
    timed_generate(paraphraser, warm, 2)  # first-call set-up stays out of the timings
    for size in args.batches:
        prompts = [paraphraser.prompt(t) for t in texts[:size]]
        batch = tok(prompts, return_tensors="pt", padding=True).to(paraphraser.model.device)
        prefill = timed_generate(paraphraser, batch, 1)
        step = (timed_generate(paraphraser, batch, args.steps) - prefill) / (args.steps - 1)
        per_text = (prefill + args.tokens * 1.25 * step) / size
        print(
            json.dumps(
                {
                    "batch": size,
                    "prompt_tokens": batch.input_ids.shape[1],
                    "prefill_s": round(prefill, 2),
                    "step_s": round(step, 3),
                    "per_text_s": round(per_text, 1),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
