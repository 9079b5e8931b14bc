"""The robustness curves in the report: the table of every row, each family at matched quality,
the plots against words and against meaning kept, the paired comparisons, and the section of
``report.md`` that holds them (:func:`curve_section`). The rows come from
:func:`evaluation.curves.run_curves`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evaluation.comparison import difference_table, quality_table
from evaluation.config_files import sections_of
from evaluation.curves import PPL_LIMIT, REP4_LIMIT, matched_quality, reference
from evaluation.frontier import BASELINE_LABELS, fmt
from evaluation.meaning import draws_table

LABELS = {
    **BASELINE_LABELS,
    "ours": "Ours",
    "ours-simhash": "Ours, SimHash signs",
    "ours-mpnet": "Ours, MPNet mapper",
}


def curve_section(results: dict, out_dir: Path) -> tuple[list[str], list[str]]:
    """The curve plots (written into ``out_dir``) and the report's lines on the curves: every
    row, the earlier runs' rows, the meaning checks draw by draw, matched quality and the
    comparisons; nothing without curves."""
    curves = results.get("curves")
    if not curves:
        return [], []
    images = [curve_plot(curves, out_dir), curve_plot(curves, out_dir, "meaning")]
    title = (
        f"### Against attack strength ({curves['prompts']} texts per method, "
        f"{curves['attacked']} per attack)"
    )
    lines = [title, "", *curve_table(curves), ""]
    earlier: dict[str, list[str]] = {}
    for row in curves["rows"]:
        if row.get("from") and row["method"] not in earlier.setdefault(row["from"], []):
            earlier[row["from"]].append(row["method"])
    for path, names in earlier.items():  # rows of an earlier run (curves.rows_from)
        lines += [f"Rows of {', '.join(names)}: from `{path}`, same texts.", ""]
    draws = draws_table(curves["rows"])
    if draws:  # the sampled rewrites: what each meaning check rejected, draw by draw
        lines += ["**The meaning checks, draw by draw**", "", *draws, ""]
    matched = matched_table(curves)
    if matched:
        lines += [
            "**At matched quality** (each family's strongest setting with "
            f"median PPL <= {PPL_LIMIT:.2f}x and rep-4 <= {REP4_LIMIT:.2f}x "
            "unwatermarked; ROC-AUC / TPR at 1% FPR (words kept))",
            "",
            *matched,
            "",
        ]
    named = sections_of(results["config"]).get("curves", {})
    lines += comparison_lines(curves, named.get("baseline"), named.get("also_against", ()))
    return images, lines


def comparison_lines(
    curves: dict, baseline: str | None = None, also: Sequence[str] = ()
) -> list[str]:
    """Quality with intervals, each attacked curve method against ``baseline`` (default: the
    KGW-1 setting within the quality limits on these prompts), ours first, then each of ours
    against every method of ``also``."""
    lines = []
    quality = quality_table(curves)
    if quality:
        lines += [
            "**Quality against unwatermarked text on the same prompts** (median PPL and "
            "mean rep-4 ratios; paired bootstrap over prompts, 95% intervals)",
            "",
            *quality,
            "",
        ]
    baseline = baseline or matched_quality(curves).get("kgw1")
    attacked = {r["method"] for r in curves["rows"] if r["attack"] != "none"}
    methods = list(dict.fromkeys(r["method"] for r in curves["rows"]))
    family = {r["method"]: r["family"] for r in curves["rows"]}
    pairs = [(m, baseline) for m in sorted(methods, key=lambda m: family[m] != "ours")]
    pairs += [(m, other) for other in also for m in methods if family[m] == "ours"]
    pairs = list(dict.fromkeys(pairs))  # the baseline may be named in ``also`` too: once each
    for method, against in pairs:  # sorted is stable: ours first, then the others in order
        if against is None or method == against or {method, against} - attacked:
            continue
        table = difference_table(curves, method, against)
        if table:
            lines += [
                f"**{method} against {against}** (same prompts and human texts; paired "
                "bootstrap, 2,000 draws, 95% intervals)",
                "",
                *table,
                "",
            ]
    return lines


def matched_table(curves: dict) -> list[str]:
    """Markdown: each family at its strongest setting within the quality limits, per attack."""
    chosen = matched_quality(curves)
    if not chosen:
        return []
    attacks = list(dict.fromkeys(r["attack"] for r in curves["rows"] if "roc_auc" in r))
    lines = [
        "| family (setting) | PPL / rep-4 vs unwatermarked | " + " | ".join(attacks) + " |",
        "|" + "---|" * (len(attacks) + 2),
    ]
    ref = reference(curves["rows"])
    for family, method in chosen.items():
        mine = {r["attack"]: r for r in curves["rows"] if r["method"] == method}
        none = mine["none"]
        ratios = none["ppl_median"] / ref["ppl_median"], none["rep4"] / ref["rep4"]
        cells = [f"{family} ({method})", f"{ratios[0]:.3f}x / {ratios[1]:.3f}x"]
        for a in attacks:
            r = mine.get(a)
            cells.append(
                "-"
                if r is None
                else f"{r['roc_auc']:.3f} / {r['tpr@1%fpr']:.3f} ({r['words_kept']:.2f})"
            )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def curve_table(curves: dict) -> list[str]:
    """Markdown table, one row per method and attack."""
    header = [
        "method",
        "attack",
        "words kept",
        "similarity (meaning)",
        "5-grams kept",
        "meaning checks pass",
        "ROC-AUC",
        "TPR@1%FPR",
        "rewritten only: ROC-AUC / TPR",
        "p<0.01: TPR / FPR",
        "texts (attacked / human)",
        "PPL (median)",
        "rep-4",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in curves["rows"]:
        quality = [fmt(r.get("ppl_median"), 2), fmt(r.get("rep4"))]
        if "roc_auc" not in r:  # the unwatermarked quality reference
            cells = [LABELS.get(r["method"], r["method"]), *["-"] * 10, *quality]
        else:
            cells = [
                LABELS.get(r["method"], r["method"]),
                r["attack"],
                f"{r['words_kept']:.3f}",
                f"{r['similarity']:.3f}",
                fmt(r.get("ngrams5_kept")),
                fmt(r.get("meaning_pass")),
                f"{r['roc_auc']:.3f}",
                f"{r['tpr@1%fpr']:.3f}",
                f"{fmt(r.get('roc_auc_rewritten'))} / {fmt(r.get('tpr_rewritten'))}"
                if "roc_auc_rewritten" in r
                else "=",
                f"{fmt(r.get('tpr@p<0.01'))} / {fmt(r.get('fpr@p<0.01'))}",
                f"{r['positives']} / {r['negatives']}",
                *quality,
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


AXES = {  # x-axis of a curve plot: (row field, label, PNG name)
    "words": ("words_kept", "share of the original's distinct words kept", "robustness_curves.png"),
    "meaning": (
        "similarity",
        "meaning kept: cosine similarity to the original",
        "robustness_meaning.png",
    ),
}


def curve_plot(curves: dict, out_dir: Path, axis: str = "words") -> str:
    """ROC-AUC and TPR at 1% FPR against words kept (``axis="words"``) or meaning kept
    (``"meaning"``), one line per method; the PNG's name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key, label, name = AXES[axis]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for method in dict.fromkeys(r["method"] for r in curves["rows"] if "roc_auc" in r):
        rows = sorted((r for r in curves["rows"] if r["method"] == method), key=lambda r: -r[key])
        for ax, metric in zip(axes, ("roc_auc", "tpr@1%fpr")):
            ax.plot(
                [r[key] for r in rows],
                [r[metric] for r in rows],
                marker="o",
                label=LABELS.get(method, method),
            )
    for ax, title in zip(axes, ("ROC-AUC", "TPR at 1% FPR")):
        ax.set_xlabel(label)
        ax.set_title(title)
        ax.invert_xaxis()
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name
