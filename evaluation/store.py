"""Resumable on-disk cache of the evaluation: append-only JSONL tables of keyed records.

Each table (generations, attacks, detections, perplexities, ...) is one JSONL file under
``<out_dir>/cache``. A record is written (and flushed) as soon as its batch finishes, so an
interrupted run loses at most one batch and a re-run only computes what is missing. A truncated
last line (a run killed mid-write) is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


class Store:
    """JSONL tables of ``{"key": ..., ...}`` records under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._tables: dict[str, dict[str, dict]] = {}

    def table(self, name: str) -> dict[str, dict]:
        """``{key: record}`` of a table (later records win)."""
        if name not in self._tables:
            records: dict[str, dict] = {}
            path = self.root / f"{name}.jsonl"
            if path.exists():
                for line in path.read_text(encoding="utf-8").splitlines():
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short by an interrupted run
                    records[rec["key"]] = rec
            self._tables[name] = records
        return self._tables[name]

    def put(self, name: str, records: Iterable[dict]) -> None:
        """Append records (each with a ``key``) to a table and flush."""
        table = self.table(name)
        lines = []
        for rec in records:
            table[rec["key"]] = rec
            lines.append(json.dumps(rec, ensure_ascii=False) + "\n")
        path = self.root / f"{name}.jsonl"
        with path.open("a", encoding="utf-8") as f:
            f.write("".join(lines))
            f.flush()
