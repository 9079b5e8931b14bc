"""Peak memory of detecting one long text against its length (a script, not a timed test).

Each length is detected in a fresh process (the shipped default, CPU), which reports its own
peak resident set (``ru_maxrss``) when it is done: the models' own memory plus everything the
detection of that one text allocates. The texts are the held-out human passages joined and cut
to the length (repeated when the corpus runs out, as six copies of 40 passages make the
~40k-token text of the issue). One JSON line per length on stdout, then a summary: MB per 1k
tokens between the lengths, which stays flat or falls when memory grows no faster than
linearly.

Example::

    python -m benchmarks.bench_memory --lengths 5000 10000 20000 40000
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def long_text(tokens: int) -> str:
    """The held-out passages joined (again from the first when they run out), cut to
    ``tokens`` generator tokens."""
    from transformers import AutoTokenizer

    from watermark.core.text import decode_ids, encode_text
    from watermark.models.loaders import resolve_lm

    tokenizer = AutoTokenizer.from_pretrained(resolve_lm("smollm2-135m"))
    with gzip.open(ROOT / "data/corpus/heldout.jsonl.gz", "rt", encoding="utf-8") as f:
        passages = [json.loads(line)["text"] for line in f]
    ids: list[int] = []
    while len(ids) < tokens:
        for text in passages:
            ids += encode_text(tokenizer, " " + text)
            if len(ids) >= tokens:
                break
    return decode_ids(tokenizer, ids[:tokens])


def child(tokens: int, threads: int) -> None:
    """Detects one text of ``tokens`` tokens; prints its seconds and tested units."""
    import torch

    from watermark.api import Watermark

    torch.set_num_threads(threads)
    text = long_text(tokens)
    wm = Watermark.load()
    start = time.perf_counter()
    result = wm.detect([text])[0]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    seconds = round(time.perf_counter() - start, 1)
    row = {"peak_mb": round(peak / 1024), "seconds": seconds, "num_tokens": result.num_tokens}
    print(json.dumps({**row, "num_scored": result.num_scored}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[5000, 10000, 20000, 40000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.threads)
        return
    rows = []
    for tokens in args.lengths:
        cmd = [sys.executable, "-m", "benchmarks.bench_memory", "--child", str(tokens)]
        cmd += ["--threads", str(args.threads)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"error: {tokens} tokens failed:\n{done.stderr[-2000:]}")
        row = {"tokens": tokens, **json.loads(done.stdout.strip().splitlines()[-1])}
        rows.append(row)
        print(json.dumps(row), flush=True)
    growth = [
        round((b["peak_mb"] - a["peak_mb"]) / ((b["tokens"] - a["tokens"]) / 1000), 1)
        for a, b in zip(rows, rows[1:])
    ]
    print(json.dumps({"mb_per_1k_tokens_between_lengths": growth, "threads": args.threads}))


if __name__ == "__main__":
    main()
