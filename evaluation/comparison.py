"""How sure the curves' comparisons are: paired bootstrap intervals per cell.

For each method of the robustness curves against a baseline (both generated on the same prompts,
detected against the same human texts), each attack cell gets the ROC-AUC and TPR-at-1%-FPR
differences with their 95% intervals (:func:`evaluation.bootstrap.auc_difference`); each
method gets its quality against unwatermarked text on the same prompts, with intervals
(:func:`evaluation.bootstrap.quality_ratio`). A difference is *resolved* when its
interval excludes zero, else *within noise*.
"""

from __future__ import annotations

from evaluation.bootstrap import auc_difference, quality_ratio
from evaluation.metrics import TAIL_KEYS


def cell_differences(curves: dict, method: str, baseline: str) -> list[dict]:
    """Per attack: ``method`` minus ``baseline`` (ROC-AUC and TPR at 1% FPR, with intervals)."""
    rows = {(r["method"], r["attack"]): r for r in curves["rows"]}
    human = {m: rows[(m, "none")].get("human_z") for m in (method, baseline) if (m, "none") in rows}
    if len(human) < 2 or None in human.values():
        return []
    out = []
    for (name, attack), mine in rows.items():
        theirs = rows.get((baseline, attack))
        if name != method or theirs is None or "z" not in mine or "z" not in theirs:
            continue
        n = min(len(mine["z"]), len(theirs["z"]))  # the first n prompts are shared
        diff = auc_difference(mine["z"][:n], human[method], theirs["z"][:n], human[baseline])
        both = [
            i
            for i in range(n)
            if mine.get("rewritten_mask", [True] * n)[i]
            and theirs.get("rewritten_mask", [True] * n)[i]
        ]
        if 1 < len(both) < n:  # some texts left as they were: also the rewritten ones alone
            pick = [[z[i] for i in both] for z in (mine["z"], theirs["z"])]
            sub = auc_difference(pick[0], human[method], pick[1], human[baseline])
            diff["rewritten"] = {"texts": len(both), **sub}
        out.append(
            {
                "attack": attack,
                "words_kept": mine["words_kept"],
                "words_kept_baseline": theirs["words_kept"],
                "texts": n,
                "roc_auc": mine["roc_auc"],
                "roc_auc_baseline": theirs["roc_auc"],
                "tpr": mine["tpr@1%fpr"],
                "tpr_baseline": theirs["tpr@1%fpr"],
                **diff,
            }
        )
    return out


def quality_intervals(curves: dict) -> dict[str, dict]:
    """Per method with per-text quality: PPL and rep-4 ratios to unwatermarked, with intervals,
    on the prompts both have (the first ones: a method of fewer prompts than the reference's
    earlier run, ``curves.rows_from``)."""
    rows = {r["method"]: r for r in curves["rows"] if r["attack"] == "none"}
    ref = rows.get("unwatermarked")
    if ref is None or "ppl_texts" not in ref:
        return {}
    out = {}
    for name, r in rows.items():
        if name != "unwatermarked" and "ppl_texts" in r:
            n = min(len(r["ppl_texts"]), len(ref["ppl_texts"]))
            ppl, rep4 = r["ppl_texts"][:n], r["rep4_texts"][:n]
            out[name] = quality_ratio(ppl, rep4, ref["ppl_texts"][:n], ref["rep4_texts"][:n])
    return out


def _ci(values: list[float], digits: int = 3) -> str:
    return f"[{values[0]:+.{digits}f}, {values[1]:+.{digits}f}]"


def _verdict(diff: dict) -> str:
    if not diff["resolved"]:
        return "within noise"
    return "resolved, " + ("ahead" if diff["auc_diff"] > 0 else "behind")


def difference_table(curves: dict, method: str, baseline: str) -> list[str]:
    """Markdown: one row per attack cell, the differences and whether they are resolved."""
    cells = cell_differences(curves, method, baseline)
    if not cells:
        return []
    lines = [
        f"| attack (words kept) | ROC-AUC {method} / {baseline} | difference [95% CI] | "
        f"TPR@1%FPR {method} / {baseline} | difference [95% CI] | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for c in cells:
        verdict = _verdict(c)
        lines.append(
            f"| {c['attack']} ({c['words_kept']:.2f} / {c['words_kept_baseline']:.2f}) | "
            f"{c['roc_auc']:.3f} / {c['roc_auc_baseline']:.3f} | {c['auc_diff']:+.3f} "
            f"{_ci(c['auc_ci'])} | {c['tpr']:.3f} / {c['tpr_baseline']:.3f} | "
            f"{c['tpr_diff']:+.3f} {_ci(c['tpr_ci'])} | {verdict} (AUC) |"
        )
        sub = c.get("rewritten")
        if sub:  # the prompts whose rewrite happened for both methods
            lines.append(
                f"| {c['attack']}, rewritten for both ({sub['texts']} texts) | | "
                f"{sub['auc_diff']:+.3f} {_ci(sub['auc_ci'])} | | "
                f"{sub['tpr_diff']:+.3f} {_ci(sub['tpr_ci'])} | {_verdict(sub)} (AUC) |"
            )
    return lines


def quality_table(curves: dict) -> list[str]:
    """Markdown: each method's PPL and rep-4 ratios to unwatermarked text, with intervals."""
    found = quality_intervals(curves)
    if not found:
        return []
    lines = [
        "| method | PPL ratio [95% CI] | rep-4 ratio [95% CI] | share rep-4 > 0.2, minus "
        "unwatermarked [95% CI] | share rep-4 > 0.4, minus unwatermarked | prompts |",
        "|---|---|---|---|---|---|",
    ]
    for name, q in found.items():
        tail = [f"{q[k]['diff']:+.3f} {_ci(q[k]['ci'])}" if k in q else "-" for k in TAIL_KEYS]
        ppl = f"{q['ppl_ratio']:.3f} [{q['ppl_ci'][0]:.3f}, {q['ppl_ci'][1]:.3f}]"
        rep = f"{q['rep4_ratio']:.3f} [{q['rep4_ci'][0]:.3f}, {q['rep4_ci'][1]:.3f}]"
        lines.append(f"| {name} | {ppl} | {rep} | {tail[0]} | {tail[1]} | {q['prompts']} |")
    return lines
