"""The quality / power frontier: our strength rules next to the baselines, and its report section.

Every cell (a set of our watermark config fields, ``frontier.cells`` of the config) and every
baseline generates continuations of the same ``frontier.prompts`` held-out prompts with the
same seeds. Per row: detection rate at p < 0.01 and at the score threshold that keeps 1% of the
human texts of the same documents (the way SynthID-Text is thresholded), the false-positive rate
at p < 0.01 on those human texts, median z, oracle perplexity of the continuation, 1-4-gram
repetition, corpus-level distinct-2 and mean length. Everything goes through the evaluation's
cache, so the stage resumes and shares generations with the main table (same units, seeds and
lengths).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluation.config_stages import expand_cells
from evaluation.detection import share_flagged
from evaluation.metrics import QUALITY_COLUMNS, TAIL_KEYS, median, tpr_at
from watermark.config.schemes import scheme_class

SHORT = {
    "scaling": "",
    "delta": "delta",
    "bias": "bias",
    "layers": "layers",
    "alpha": "alpha",
    "filter_first": "filter first",
    "context_guard": "guard",
    "fresh_only": "fresh only",
    "embed_window": "local",
    "opening_steps": "M",
}  # fmt: skip (label order)
BASELINE_LABELS = {
    "unwatermarked": "Unwatermarked",
    "kgw0": "KGW-0",
    "kgw1": "KGW-1",
    "kgw2": "KGW-2",
    "synthid": "SynthID-Text",
}


def cell_label(cell: dict) -> str:
    """A short name such as ``additive bias=2.0, guard=4, filter first``."""
    parts = []
    order = list(SHORT) + sorted(set(cell) - set(SHORT))
    for key in [k for k in order if k in cell]:
        name, value = SHORT.get(key, key), cell[key]
        if not name:  # the rule: its value alone
            parts.append(str(value))
        elif value is True:
            parts.append(name)
        elif value is False or (value == 0 and key in ("context_guard", "embed_window")):
            continue  # switches that are off are left out
        else:
            parts.append(f"{name}={value}")
    return ", ".join(parts)


def rule_label(wm: dict) -> str:
    """The strength-rule settings of a watermark config dict as a cell label."""
    keys = (
        "scaling",
        scheme_class(wm["scaling"]).strength_field,
        "filter_first",
        "context_guard",
        "fresh_only",
        "embed_window",
    )
    return cell_label({k: wm[k] for k in keys if k in wm})


def distinct_n(token_lists: list[list[int]], n: int = 2) -> float:
    """Distinct n-grams over all texts / all n-grams (diversity across and within texts)."""
    grams = [tuple(ids[i : i + n]) for ids in token_lists for i in range(len(ids) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


def frontier_row(ev, method, units: list[dict], label: str, cell: dict | None) -> dict:
    """Quality and detection of one method (or cell) on the frontier units."""
    gens = ev.generations(method, units)
    quality = ev.quality(units, gens)
    row = {
        "label": label,
        "method": method.name,
        "cell": cell,
        "ppl_median": median(quality["ppl"]),
        **{f"rep{n}": quality[f"rep{n}"] for n in (1, 2, 3, 4)},
        **{k: quality.get(k) for k in (*TAIL_KEYS, "longest_max")},
        "distinct2": distinct_n([g["ids"] for g in gens]),
        "tokens_mean": quality["tokens_mean"],
        "seconds_per_text": sum(g["seconds"] for g in gens) / len(gens),
    }
    if method.name == "unwatermarked":
        return row
    pos = ev.detections(method, [g["text"] for g in gens])
    neg = ev.detections(method, [u["human"] for u in units])
    key = "score" if method.name == "synthid" else "z_score"
    scores = [np.array([[getattr(d, key) for d in found]]) for found in (pos, neg)]
    row.update(
        {
            "detected@p<0.01": share_flagged(pos),
            "detected@1%human": float(tpr_at(*scores, 0.01)[0]),
            "fpr@p<0.01": share_flagged(neg),
            "z_median": median([d.z_score for d in pos]),
            "awr": sum(d.awr for d in pos) / len(pos),
        }
    )
    return row


def run_frontier(ev) -> dict:
    """All frontier rows (baselines first, then our cells)."""
    cfg = ev.cfg.frontier
    units = ev.all_units[: cfg.prompts]
    rows = [
        frontier_row(ev, ev.method(name), units, BASELINE_LABELS[name], None)
        for name in cfg.baselines
    ]
    for cell in expand_cells(cfg.cells):
        rows.append(frontier_row(ev, ev.ours_variant(**cell), units, cell_label(cell), cell))
    return {"prompts": len(units), "rows": rows}


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for a table (``-`` for None or NaN)."""
    return "-" if x is None or x != x else f"{x:.{digits}f}"


def frontier_table(frontier: dict) -> list[str]:
    """Markdown table of the frontier rows."""
    header = [
        "method / cell",
        "detected p<0.01",
        "detected @1% human",
        "human FPR p<0.01",
        "median z",
        *QUALITY_COLUMNS,
        "distinct-2",
        "tokens",
        "AWR",
        "s / text",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in frontier["rows"]:
        cells = [
            r["label"],
            fmt(r.get("detected@p<0.01")),
            fmt(r.get("detected@1%human")),
            fmt(r.get("fpr@p<0.01")),
            fmt(r.get("z_median"), 2),
            fmt(r["ppl_median"], 2),
            *(fmt(r[f"rep{n}"]) for n in (1, 2, 3, 4)),
            *(fmt(r.get(k)) for k in TAIL_KEYS),
            fmt(r.get("longest_max"), 0),
            fmt(r["distinct2"]),
            fmt(r["tokens_mean"], 0),
            fmt(r.get("awr"), 2),
            fmt(r["seconds_per_text"], 1),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def frontier_plots(frontier: dict, out_dir: Path) -> list[str]:
    """Detection rate and median z against perplexity and against 4-gram repetition.

    Each point is numbered; the legend maps numbers to rows. Returns the file names.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = frontier["rows"]
    plain = next((r for r in rows if r["method"] == "unwatermarked"), None)
    marked = [r for r in rows if r["method"] != "unwatermarked"]
    names = []
    for metric, xlabel in (
        ("ppl_median", "oracle perplexity (median)"),
        ("rep4", "4-gram repetition"),
    ):
        fig, axes = plt.subplots(1, 2, figsize=(12, 5.5))
        for ax, ylabel in zip(axes, ("detected", "median z")):
            for i, r in enumerate(marked, 1):
                rate = r["detected@1%human" if r["method"] == "synthid" else "detected@p<0.01"]
                y = rate if ylabel == "detected" else r.get("z_median")
                ours = r["method"] == "ours"
                ax.scatter(
                    r[metric],
                    y,
                    marker="o" if ours else "s",
                    s=30 if ours else 50,
                    color=plt.cm.tab20(i % 20),
                    label=f"{i}: {r['label']}",
                )
                ax.annotate(
                    str(i), (r[metric], y), fontsize=7, xytext=(3, 3), textcoords="offset points"
                )
            if plain is not None:
                bound = plain[metric] * (1.15 if metric == "ppl_median" else 1.25)
                ax.axvline(plain[metric], color="grey", ls=":", label="unwatermarked")
                ax.axvline(bound, color="green", ls="--", lw=0.8, label="target bound")
            if ylabel == "detected":
                ax.axhline(0.95, color="red", ls="--", lw=0.8, label="detection 0.95")
                ax.set_ylabel("detected at p < 0.01 (SynthID: at 1% human FPR)")
            else:
                ax.set_ylabel("median z of watermarked texts")
            ax.set_xlabel(xlabel)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=7, loc="center right")
        fig.suptitle(
            f"Quality / power frontier, {frontier['prompts']} prompts (squares: baselines)"
        )
        fig.tight_layout(rect=(0, 0, 0.7, 1))
        names.append(f"frontier_{'ppl' if metric == 'ppl_median' else 'rep4'}.png")
        fig.savefig(out_dir / names[-1], dpi=120)
        plt.close(fig)
    return names
