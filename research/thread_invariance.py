"""Detection's answer at every thread count, batch size and process count, and what it costs.

Detects held-out human passages and cached watermarked texts with ``--config`` through the API
at 1, 2 and 4 threads (batches of 8), in batches of 1 and 16, and through ``detect-corpus`` on
``--processes`` processes (0: not), and counts the JSON lines (per-token flags included) equal
to the one-thread run. Then times detection per text on this machine's threads (texts side by
side, each at one intra-op thread: :mod:`watermark.core.threads`), in batches of 8 and of 1.
With ``--generate`` it also checks that the default and the robust config draw the same tokens
at 1 and 2 threads. Prints one JSON object.

Until 0.10 it also timed detection as 0.8 ran it (each text's products split over the threads),
by patching the runtime's thread helpers for the run; the guide's comparison of the two was
measured that way at commit ``08b92ef``.

Example::

    python -m research.thread_invariance --human 48 --watermarked 16 --generate 8
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.inputs import human_texts
from research.common import ROOT, Load, load_with_generator
from watermark.api import Watermark
from watermark.config.shipped import shipped_path

CACHED = ROOT / "data/eval-cache/sentence-rewrites/generations.jsonl.gz"
PROMPTS = [
    "Heavy rain flooded the north. Crews worked overnight.",
    "The council met on Tuesday to discuss the new budget.",
    "Scientists have found a new species of frog in the rainforest.",
    "The match ended in a draw after extra time.",
    "A new bridge opened across the river this spring.",
    "The museum will show the paintings for the first time.",
    "Farmers said the dry summer cut their harvest by half.",
    "The company announced it would open two new stores.",
]


def lines(results: list) -> list[str]:
    return [json.dumps(r.to_dict(per_token=True)) for r in results]


@contextlib.contextmanager
def threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def corpus_lines(texts: list[str], config: str | None, processes: int = 2) -> list[str]:
    """The JSON lines of ``python -m watermark detect-corpus`` on ``processes`` processes."""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
        argv = [
            sys.executable,
            "-m",
            "watermark",
            "detect-corpus",
            "--input",
            str(src),
            "--output",
            str(out),
            "--devices",
            str(processes),
            "--accelerator",
            "cpu",
            "--per-token",
        ]
        argv += ["--config", config] if config else []
        subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
        return [json.dumps(json.loads(line)) for line in out.read_text().splitlines()]


def seconds_per_text(wm: Watermark, texts: list[str], batch_size: int) -> float:
    start = time.perf_counter()
    wm.detect(texts, batch_size=batch_size)
    return (time.perf_counter() - start) / len(texts)


def same_tokens(wm: Watermark, prompts: list[str], tokens: int) -> dict:
    """How many prompts draw the same tokens at 1 and 2 threads."""
    found = []
    for n in (1, 2):
        with threads(n):
            found.append([o.token_ids for o in wm.generate(prompts, seed=0, max_new_tokens=tokens)])
    return {"prompts": len(prompts), "tokens": tokens, "same": sum(a == b for a, b in zip(*found))}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="watermark config (default: the shipped one)")
    parser.add_argument("--human", type=int, default=48, help="human passages (200 tokens)")
    parser.add_argument("--watermarked", type=int, default=16, help="cached watermarked texts")
    parser.add_argument("--processes", type=int, default=2, help="detect-corpus's (0: not run)")
    parser.add_argument("--generate", type=int, default=0, help="prompts for the token check")
    parser.add_argument("--tokens", type=int, default=48, help="new tokens per prompt there")
    return parser


def identical_runs(wm: Watermark, texts: list[str], args: argparse.Namespace) -> dict:
    """Per way of running detection, the results equal to the one-thread run's."""
    runs = {}
    for n in (1, 2, 4):
        with threads(n):
            runs[f"api, {n} threads"] = lines(wm.detect(texts))
    runs["api, batches of 1"] = lines(wm.detect(texts, batch_size=1))
    runs["api, batches of 16"] = lines(wm.detect(texts, batch_size=16))
    if args.processes:
        name = f"detect-corpus, {args.processes} processes"
        runs[name] = corpus_lines(texts, args.config, args.processes)
    reference = runs["api, 1 threads"]
    return {n: sum(a == b for a, b in zip(run, reference)) for n, run in runs.items()}


def main(argv: list[str] | None = None, load: Load | None = None) -> None:
    """Prints one JSON object (``load``: how a config's watermark is loaded; by default
    ``Watermark.load`` for detection and, for ``--generate``, with its generator)."""
    args = _parser().parse_args(argv)
    wm = (load or Watermark.load)(args.config)
    with gzip.open(CACHED, "rt", encoding="utf-8") as f:
        marked = [json.loads(line)["text"] for line in f][: args.watermarked]
    texts = human_texts(wm.tokenizer, args.human, 200) + marked
    out = {"texts": len(texts), "threads": torch.get_num_threads()}
    out["identical"] = identical_runs(wm, texts, args)
    out["seconds_per_text"] = {
        f"batches of {batch}": round(seconds_per_text(wm, texts, batch), 3) for batch in (8, 1)
    }
    if args.generate:
        prompts = PROMPTS[: args.generate]
        robust = shipped_path("robust")
        out["generation"] = {
            "default": same_tokens((load or load_with_generator)(None), prompts, args.tokens),
            "robust": same_tokens((load or load_with_generator)(robust), prompts, 24),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
