"""Readers for the corpus files that `python -m data.build` writes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path


def load_corpus(path: str | Path) -> list[dict]:
    """Reads a gzip (or plain) JSONL corpus into a list of records.

    Raises:
        FileNotFoundError: If the file is missing (the fix: `python -m data.build`).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus {path} not found: build it with `python -m data.build`")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
