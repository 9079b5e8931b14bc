"""Curve rows of an earlier, committed run that join this run's comparisons.

The caches of a run live under ``runs/`` and do not outlive a checkout, but its
``results.json`` keeps every curve row with its per-text z-scores (``z``, in prompt order) and
the human texts' (``human_z``). A run that adds a method on the same prompts, human texts and
attacks (``curve_rows_from``) can so be compared, paired text by text, with methods it does not
make again. The settings that decide which texts are compared must agree; a row pairs with this
run's rows of the same attack label only.
"""

from __future__ import annotations

import json
from pathlib import Path

# The fields that fix the prompts, the human texts and the attacks of the curves.
SAME_TEXTS = (
    "generator",
    "heldout",
    "sources",
    "human_tokens",
    "new_tokens",
    "min_new_tokens",
    "seed",
    "unit_pool",
    "curve_offset",
    "curve_negatives",
    "llm_paraphraser",
    "similarity_embedder",
)


def earlier_rows(cfg) -> list[dict]:
    """Rows of ``cfg.curve_rows_from`` results whose methods this run does not make, each with
    ``from`` naming its file. Raises ``ValueError`` where a file's texts are not this run's."""
    mine = set(cfg.curve_methods)
    rows: list[dict] = []
    for name in cfg.curve_rows_from:
        path = Path(cfg.resolve(name))
        results = json.loads(path.read_text(encoding="utf-8"))
        theirs = results["config"]
        differ = [
            f"{key}: {theirs.get(key)!r} there, {getattr(cfg, key)!r} here"
            for key in SAME_TEXTS
            if theirs.get(key, getattr(type(cfg), key, None)) != getattr(cfg, key)
        ]
        if differ:
            raise ValueError(f"curve_rows_from {name}: other texts ({'; '.join(differ)})")
        known = {r["method"] for r in rows}
        for row in results.get("curves", {}).get("rows", []):
            if row["method"] not in mine and row["method"] not in known:
                rows.append({**row, "from": name})
    named = {cfg.curve_baseline, *cfg.curve_also_against} - {""}
    missing = sorted(named - mine - {r["method"] for r in rows})
    if missing:
        raise ValueError(f"{missing} are neither curve methods nor in curve_rows_from")
    return rows
