"""Real rewrites of the held-out pools' candidates, the sentence layer's replay seed:
``python -m data.pool_rewrites``.

Any choice rule, weight rule or key of the sentence layer can be judged on what a real rewrite
leaves of the sentence it would keep, without generating texts, if every candidate it could keep
has been rewritten once. Here the first ``--candidates`` (default 8, the layer's N) candidates
of each of the 96 held-out pools (``data/sentence-key/pools.jsonl.gz``) are rewritten alone by
the 1.5B model under the evaluation's forced rewrite (:func:`data.sentence_rewrites.rewrite`,
sampled at temperature 1, names and numbers listed), once each.

The table ``data/sentence-key/pool_rewrites.jsonl.gz`` (one record per candidate: the pool's
``id``, ``candidate`` j, ``text``, ``rewrite``, ``None`` where the judge rejected it) is the
committed seed. A run keeps what the table and the model's cache
(``.cache/data/sentence-key/pool_llm.jsonl``) already hold and decodes only what is missing,
appending to the cache batch by batch, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import torch

from data.build import write_jsonl_gz
from data.sentence_rewrites import read_jsonl_gz, rewrite

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "data" / "sentence-key"
CACHE = ROOT / ".cache" / "data" / "sentence-key" / "pool_llm.jsonl"
TABLE = "pool_rewrites.jsonl.gz"


def wanted(pools: list[dict], candidates: int) -> list[dict]:
    """``{"id", "candidate", "text"}`` of the first ``candidates`` candidates of each held-out
    pool that ended a sentence."""
    out = []
    for pool in pools:
        if pool["split"] != "heldout":
            continue
        for j, text in enumerate(pool["candidates"][:candidates]):
            if text:
                out.append({"id": pool["id"], "candidate": j, "text": text})
    return out


def build(seeds: Path, cache: Path, candidates: int, batch_size: int) -> list[dict]:
    """The table: the seed's records where they are, the rest rewritten now."""
    done = {(r["id"], r["candidate"], r["text"]): r for r in read_jsonl_gz(seeds / TABLE)}
    rows = wanted(read_jsonl_gz(seeds / "pools.jsonl.gz"), candidates)
    todo = [r for r in rows if (r["id"], r["candidate"], r["text"]) not in done]
    if todo:
        found = rewrite("forced", [r["text"] for r in todo], cache, batch_size)
        for r, text in zip(todo, found):
            done[(r["id"], r["candidate"], r["text"])] = {**r, "rewrite": text}
    return [done[(r["id"], r["candidate"], r["text"])] for r in rows]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=Path, default=SEEDS)
    parser.add_argument("--candidates", type=int, default=8, help="per held-out pool")
    parser.add_argument("--batch-size", type=int, default=16, help="1.5B model batch")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    records = build(args.seeds, CACHE, args.candidates, args.batch_size)
    write_jsonl_gz(args.seeds / TABLE, records)
    kept = sum(r["rewrite"] is not None for r in records)
    logging.info(
        "%d candidates, %d rewritten, in %.0f s", len(records), kept, time.perf_counter() - start
    )


if __name__ == "__main__":
    main()
