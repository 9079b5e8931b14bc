"""Whether every committed evaluation cache cell of our method is still found (a script).

A cached generation or detection of our method is keyed by the watermark config fields it
depends on (:mod:`evaluation.cache_keys`). A change of the config's code must keep those keys,
or the committed seeds (``data/eval-cache/*/``) are silently recomputed. This builds every
config of our method that the evaluation YAMLs name (the run's config, its variants, ablation
values and frontier cells), computes their generation and detection keys, and counts the cached
records of our method in the seeds whose key is among them. It prints one JSON line per seed
table and a total; the exit code is 1 if any cell is not found.

    python -m research.cache_cells
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from evaluation.cache_keys import detection_key, generation_key
from evaluation.config import EvalConfig
from evaluation.config_fields import evolve
from watermark.config.watermark_config import WatermarkConfig

ROOT = Path(__file__).resolve().parents[1]


def our_configs(cfg: EvalConfig) -> list[WatermarkConfig]:
    """Every config of our method that an evaluation config runs: the run's own and each of its
    changes (:meth:`evaluation.config.EvalConfig.our_changes`)."""
    base = cfg.watermark_base()
    return [base] + [evolve(base, **change) for change in cfg.our_changes().values()]


def known_keys() -> set[str]:
    """The generation and detection keys of every config of our method the YAMLs name."""
    keys = set()
    for path in sorted((ROOT / "configs" / "evaluation").glob("*.yaml")):
        for quick in (False, True):
            for wm in our_configs(EvalConfig.load(path, quick=quick)):
                keys.update([generation_key(wm), detection_key(wm)])
    return keys


def main(argv: list[str] | None = None) -> int:
    """Prints the counts; returns 1 if any cached cell is not found."""
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args(argv)
    keys, missing, total = known_keys(), 0, 0
    for table in sorted((ROOT / "data" / "eval-cache").glob("*/*.jsonl.gz")):
        ours = []
        with gzip.open(table, "rt", encoding="utf-8") as f:
            for line in f:
                key = json.loads(line)["key"]
                if key.startswith("ours-"):
                    ours.append(key.split("|")[0])
        found = sum(k in keys for k in ours)
        total, missing = total + len(ours), missing + len(ours) - found
        if ours:
            row = {"table": str(table.relative_to(ROOT)), "cells": len(ours), "found": found}
            print(json.dumps(row))
    print(json.dumps({"cells": total, "found": total - missing, "keys_known": len(keys)}))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
