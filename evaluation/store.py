"""Resumable on-disk cache of the evaluation: append-only JSONL tables of keyed records.

Each table (generations, attacks, detections, perplexities, ...) is one JSONL file under
``<out_dir>/cache``. A record is written (and flushed) as soon as its batch finishes, so an
interrupted run loses at most one batch and a re-run only computes what is missing. A truncated
last line (a run killed mid-write) is ignored.

``runs/`` is not kept with the repository, so hours of CPU work (LLM rewrites, the sentence
layer's generations) would be lost with a checkout. A *seed* is a committed folder of the same
tables as ``<table>.jsonl.gz``: the store reads its seeds before its own files, and
:meth:`Store.save_seed` writes the run's tables (merged with an existing seed) into one.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)


def _read_lines(path: Path, records: dict[str, dict]) -> None:
    """Add the records of one JSONL (or ``.jsonl.gz``) file to ``records``; later lines win."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by an interrupted run
            if "key" not in rec:
                raise ValueError(f"{path}: a record without a key (not a table of this store)")
            records[rec["key"]] = rec


class Store:
    """JSONL tables of ``{"key": ..., ...}`` records under ``root``, after those of ``seeds``
    (read-only folders of ``<table>.jsonl.gz``)."""

    def __init__(self, root: Path, seeds: Iterable[Path] = ()) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.seeds = [Path(s) for s in seeds]
        self._tables: dict[str, dict[str, dict]] = {}

    def table(self, name: str) -> dict[str, dict]:
        """``{key: record}`` of a table (the seeds' first, then the run's; later records win)."""
        if name not in self._tables:
            records: dict[str, dict] = {}
            paths = [seed / f"{name}.jsonl.gz" for seed in self.seeds]
            paths.append(self.root / f"{name}.jsonl")
            for path in paths:
                if path.exists():
                    _read_lines(path, records)
            self._tables[name] = records
        return self._tables[name]

    def file(self, name: str) -> Path:
        """The run's own JSONL file of a table, for code that reads and appends it itself (the
        LLM rewrites of :mod:`data.llm_paraphrase`). The seeds' records that the file lacks are
        appended to it first, so that code sees them too; the table is read again on its next
        use."""
        path = self.root / f"{name}.jsonl"
        own: dict[str, dict] = {}
        if path.exists():
            _read_lines(path, own)
        missing = [rec for key, rec in self.table(name).items() if key not in own]
        if missing:
            with path.open("a", encoding="utf-8") as f:
                f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in missing))
        self._tables.pop(name, None)
        return path

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

    def save_seed(self, dest: Path) -> dict[str, int]:
        """Write every table of the run and of its seeds into ``dest`` as ``<table>.jsonl.gz``
        (records sorted by key, a fixed gzip time, so an unchanged table writes the same bytes).
        Returns ``{table: records}``."""
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        names = {p.name[: -len(".jsonl")] for p in self.root.glob("*.jsonl")}
        for seed in [*self.seeds, dest]:
            names |= {p.name[: -len(".jsonl.gz")] for p in seed.glob("*.jsonl.gz")}
        counts = {}
        for name in sorted(names):
            try:
                records = dict(self.table(name))
            except ValueError as err:  # e.g. the sentence paraphrases, keyed by id and mode
                logger.warning("not saved in the seed: %s", err)
                continue
            old = dest / f"{name}.jsonl.gz"
            if old.exists():  # a seed of its own is read again: the same records
                merged: dict[str, dict] = {}
                _read_lines(old, merged)
                records = {**merged, **records}
            body = "".join(
                json.dumps(records[k], ensure_ascii=False, sort_keys=True) + "\n"
                for k in sorted(records)
            )
            tmp = dest / f"{name}.jsonl.gz.tmp"
            with open(tmp, "wb") as raw, gzip.GzipFile("", "wb", fileobj=raw, mtime=0) as f:
                f.write(body.encode("utf-8"))
            tmp.replace(old)
            counts[name] = len(records)
        return counts
