"""Tests for reading training corpus files (mapper.corpus)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mapper.corpus import load_corpus


def test_load_corpus_missing_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="python -m data.build"):
        load_corpus(tmp_path / "nope.jsonl.gz")


def test_load_corpus_reads_gzip_and_plain_jsonl_in_order(tmp_path: Path) -> None:
    records = [{"id": "a", "text": "First."}, {"id": "b", "text": "Second."}]
    lines = "".join(json.dumps(r) + "\n" for r in records) + "\n"  # a trailing blank line
    (tmp_path / "c.jsonl").write_text(lines, encoding="utf-8")
    with gzip.open(tmp_path / "c.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(lines)
    assert load_corpus(tmp_path / "c.jsonl") == records
    assert load_corpus(tmp_path / "c.jsonl.gz") == records
