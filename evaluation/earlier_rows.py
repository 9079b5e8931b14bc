"""Curve rows of an earlier, committed run that join this run's comparisons.

The caches of a run live under ``runs/`` and do not outlive a checkout, but its
``results.json`` keeps every curve row with its per-text z-scores (``z``, in prompt order) and
the human texts' (``human_z``). A run that adds a method on the same prompts, human texts and
attacks (``curves.rows_from``) can so be compared, paired text by text, with methods it does not
make again. The settings that decide which texts are compared must agree; a row pairs with this
run's rows of the same attack label only. One method name may gather cells from several files,
where they made the same texts (equal unattacked and human z-scores).
"""

from __future__ import annotations

import json
from pathlib import Path

from evaluation.config_files import sections_of
from evaluation.config_stages import SECTIONS

# The fields that fix the prompts, the human texts and the attacks of the curves.
SAME_TEXTS = (
    ("models", "generator"),
    ("models", "llm_paraphraser"),
    ("models", "similarity_embedder"),
    ("texts", "heldout"),
    ("texts", "sources"),
    ("texts", "human_tokens"),
    ("texts", "new_tokens"),
    ("texts", "min_new_tokens"),
    ("texts", "seed"),
    ("texts", "unit_pool"),
    ("curves", "offset"),
    ("curves", "negatives"),
)


def _unattacked(rows: list[dict]) -> tuple:
    """The z-scores of a method's unattacked texts and of the human texts: equal where two runs
    made and detected the same texts."""
    none = next((r for r in rows if r["attack"] == "none"), {})
    return tuple(none.get("z", ())), tuple(none.get("human_z", ()))


def _differ(theirs: dict, cfg) -> list[str]:
    """The settings of :data:`SAME_TEXTS` in which an earlier run's config (in sections, a field
    it does not name at its default) is not ``cfg``."""
    found = []
    for section, name in SAME_TEXTS:
        mine = getattr(getattr(cfg, section), name)
        there = theirs.get(section, {}).get(name, getattr(SECTIONS[section](), name))
        if there != mine:
            found.append(f"{section}.{name}: {there!r} there, {mine!r} here")
    return found


def earlier_rows(cfg) -> list[dict]:
    """Rows of ``curves.rows_from`` results whose methods this run does not make, each with
    ``from`` naming its file. A method of several files takes the cells of the later ones that
    the earlier lack where its unattacked and human z-scores are the same. Raises
    ``ValueError`` where a file's texts are not this run's."""
    curves = cfg.curves
    mine = set(curves.methods)
    rows: list[dict] = []
    for name in curves.rows_from:
        path = Path(cfg.resolve(name))
        results = json.loads(path.read_text(encoding="utf-8"))
        differ = _differ(sections_of(results["config"]), cfg)
        if differ:
            raise ValueError(f"curves.rows_from {name}: other texts ({'; '.join(differ)})")
        found = results.get("curves", {}).get("rows", [])
        for method in dict.fromkeys(r["method"] for r in found if r["method"] not in mine):
            theirs_rows = [r for r in found if r["method"] == method]
            have = [r for r in rows if r["method"] == method]
            if have and _unattacked(have) != _unattacked(theirs_rows):
                continue  # another method under the same name (other texts): the first one's
            cells = {r["attack"] for r in have}
            rows += [{**r, "from": name} for r in theirs_rows if r["attack"] not in cells]
    named = {curves.baseline, *curves.also_against} - {""}
    missing = sorted(named - mine - {r["method"] for r in rows})
    if missing:
        raise ValueError(f"{missing} are neither curve methods nor in curves.rows_from")
    return rows
