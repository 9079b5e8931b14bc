"""Build the sentence mapper's training data: ``python -m data.sentence_key``.

Two tables, written as committed seeds under ``data/sentence-key/`` (gzip JSONL, fixed mtime):

* ``rewrites.jsonl.gz``: three-sentence passages of the train, val and held-out documents and
  their meaning-keeping rewrites by the 1.5B model, with the MPNet similarity and the facts kept
  of each (:mod:`data.sentence_rewrites`);
* ``pools.jsonl.gz``: prefixes of the train, val and held-out documents, each with the N next
  sentences the generator samples after it (:mod:`data.candidate_pools`).

The models' raw outputs are cached as they come (``.cache/data/sentence-key/``), so an
interrupted build resumes; the 1.5B model's cache is also committed (``llm_cache.jsonl.gz``), and
a fresh clone's build reads it and the pools' seed back instead of decoding. The held-out rows
are for measurement only: the training data module never reads them.
"""

from __future__ import annotations

import argparse
import gzip
import logging
import shutil
import time
from pathlib import Path

import torch

from data.build import write_jsonl_gz
from data.candidate_pools import build_pools, prefixes
from data.sentence_rewrites import PLAN, add_meaning_checks, build

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "data" / "sentence-key"
CACHE = ROOT / ".cache" / "data" / "sentence-key"
# (prefixes, candidates) per split: the training pools need only to show how a prefix's
# candidates split; the val and held-out pools are the layer's N = 32
POOLS = {"train": (640, 16), "val": (64, 32), "heldout": (96, 32)}


def restore_cache(cache: Path, seed: Path) -> None:
    """Starts a model's cache from its committed seed when there is none yet."""
    if not cache.is_file() and seed.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(seed, "rb") as src, cache.open("wb") as out:
            shutil.copyfileobj(src, out)


def save_llm_cache(cache: Path, seed: Path) -> None:
    """Commits the 1.5B model's raw outputs (every line the build read) as the seed."""
    lines = [line for line in cache.read_text(encoding="utf-8").splitlines() if line.strip()]
    seed.parent.mkdir(parents=True, exist_ok=True)
    with open(seed, "wb") as raw, gzip.GzipFile("", "wb", 9, raw, mtime=0) as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "data" / "corpus")
    parser.add_argument("--out", type=Path, default=SEEDS)
    parser.add_argument("--skip", choices=("rewrites", "pools"), action="append", default=[])
    parser.add_argument("--batch-size", type=int, default=16, help="1.5B model batch")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    if "rewrites" not in args.skip:
        llm, seed = CACHE / "llm.jsonl", args.out / "llm_cache.jsonl.gz"
        restore_cache(llm, seed)
        records = build(args.corpus, llm, PLAN, args.batch_size)
        add_meaning_checks(records)
        write_jsonl_gz(args.out / "rewrites.jsonl.gz", records)
        save_llm_cache(llm, seed)
        done = sum(bool(r["rewrite"]) for r in records)
        logging.info("rewrites: %d passages, %d rewritten", len(records), done)
    if "pools" not in args.skip:
        pools = []
        restore_cache(CACHE / "pools.jsonl", args.out / "pools.jsonl.gz")  # its lines are records
        for split, (count, candidates) in POOLS.items():
            wanted = [{**p, "split": split} for p in prefixes(args.corpus, split, count)]
            pools += build_pools(wanted, CACHE / "pools.jsonl", candidates)
        write_jsonl_gz(args.out / "pools.jsonl.gz", pools)
        logging.info("pools: %d prefixes", len(pools))
    logging.info("done in %.0f s", time.perf_counter() - start)


if __name__ == "__main__":
    main()
