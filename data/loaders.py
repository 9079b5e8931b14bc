"""An optional online corpus loader, and the writer of corpus files.

Training reads corpus files with :func:`mapper.corpus.load_corpus` (it ships with the library);
this module is a repository tool:

* :func:`load_sentence_compression` maps the paper's training set,
  ``embedding-data/sentence-compression`` on the Hugging Face hub, to the same record schema. It
  needs network access (or a warm ``datasets`` cache) and is never used by the tests. Online users
  write it as a corpus with ``python -m data.loaders OUT.jsonl.gz [--limit N]`` and train on it
  with ``--data.corpus OUT.jsonl.gz``.
* :func:`write_corpus` writes records as a gzip JSONL corpus.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from pathlib import Path

from mapper.corpus import AUGMENTATION_KINDS


def _hash_fraction(text: str) -> float:
    """A stable number in [0, 1) derived from ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def load_sentence_compression(
    val_fraction: float = 0.1,
    limit: int | None = None,
    dataset: str = "embedding-data/sentence-compression",
) -> list[dict]:
    """Load the paper's sentence-compression pairs as corpus records (needs network access).

    Each pair becomes one record with ``text`` = the long sentence and ``shortened`` = [the
    compressed one]; the other augmentation lists are empty. The split is decided by a hash of the
    text, so it is stable across runs and machines.

    Args:
        val_fraction: Fraction of records that go to ``val``.
        limit: Keep only the first ``limit`` pairs (None: all, about 180k).
        dataset: The hub dataset id.

    Returns:
        Records with the same schema as ``data/corpus/sentences.jsonl.gz``.
    """
    from datasets import load_dataset

    rows = load_dataset(dataset, split="train")
    records = []
    for index, row in enumerate(rows):
        if limit is not None and index >= limit:
            break
        long_text, short_text = row["set"][0], row["set"][1]
        key = hashlib.sha256(long_text.encode("utf-8")).hexdigest()[:12]
        record = {
            "id": f"sc-{key}",
            "doc": f"sc-{key}",
            "source": "sentence-compression",
            "split": "val" if _hash_fraction(long_text) < val_fraction else "train",
            "text": long_text,
        }
        record.update({kind: [] for kind in AUGMENTATION_KINDS})
        if short_text and short_text != long_text:
            record["shortened"] = [short_text]
        records.append(record)
    return records


def write_corpus(records: list[dict], path: str | Path) -> Path:
    """Write records as a gzip JSONL corpus that :func:`mapper.corpus.load_corpus` reads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the sentence-compression set as a corpus.")
    parser.add_argument("out", help="output .jsonl.gz")
    parser.add_argument("--limit", type=int, default=None, help="keep the first N pairs")
    parser.add_argument("--val-fraction", type=float, default=0.1)
    args = parser.parse_args(argv)
    records = load_sentence_compression(args.val_fraction, args.limit)
    out = write_corpus(records, args.out)
    print(json.dumps({"records": len(records), "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
