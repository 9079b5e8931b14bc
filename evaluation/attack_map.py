"""The map of where each kind of key wins: every method's ROC-AUC against the share of words an
attack keeps, with the attacked cells of several evaluation runs on one plot.

Each run's ``results.json`` (written by ``python -m evaluation``) holds curve rows; a point is one
(method, attack) row of any of them, its x the words kept (:func:`evaluation.meaning.words_kept`'s
share of the original's distinct words) and its y the ROC-AUC against the run's human negatives.
The points of one method are joined in order of words kept, whatever run they come from, so the
line reads as "ROC-AUC as the rewrite changes more of the text". Unattacked rows are left out (they
all sit at 1.0, 1.0). Usage::

    python -m evaluation.attack_map docs/research/matched/results.json \
        docs/research/paraphrase-claim/results.json docs/research/rewrites/results.json \
        --out docs/research/rewrites/attack_map.png
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from evaluation.curve_report import LABELS
from watermark.config.paths import resolve_path

logger = logging.getLogger(__name__)

KINDS = {  # attack family (the label before '@') -> marker
    "paraphrase": "o",
    "paraphrase_synonym": "s",
    "llm_paraphrase": "^",
    "llm_paraphrase_synonym": "v",
    "llm_forced": "D",
    "llm_round_trip": "P",
    "synonym": "x",
    "deletion": "+",
    "copy_paste": "*",
    "truncate": "|",
}
METRICS = {"roc_auc": "ROC-AUC", "tpr@1%fpr": "TPR at 1% FPR"}


def attack_kind(label: str) -> str:
    """An attack label's family: ``llm_forced@t1+llm_paraphrase`` -> ``llm_forced``."""
    return label.split("@")[0].split("+")[0]


def map_points(results: list[dict]) -> list[dict]:
    """The attacked curve rows of several results dicts, each as {method, attack, words_kept,
    roc_auc, tpr@1%fpr}; a (method, attack) pair found twice keeps its last row."""
    points: dict[tuple[str, str], dict] = {}
    for res in results:
        for row in res.get("curves", {}).get("rows", []):
            if row.get("attack", "none") == "none" or "roc_auc" not in row:
                continue
            fields = ("method", "attack", "words_kept", *METRICS)
            points[row["method"], row["attack"]] = {k: row[k] for k in fields}
    return list(points.values())


def map_plot(points: list[dict], out: Path) -> Path:
    """One PNG: ROC-AUC and TPR at 1% FPR against words kept, a line per method, a marker per
    attack family; returns ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    methods = list(dict.fromkeys(p["method"] for p in points))
    colors = {m: f"C{i % 10}" for i, m in enumerate(methods)}
    for method in methods:
        mine = sorted((p for p in points if p["method"] == method), key=lambda p: -p["words_kept"])
        for ax, metric in zip(axes, METRICS):
            xs, ys = [p["words_kept"] for p in mine], [p[metric] for p in mine]
            ax.plot(xs, ys, color=colors[method], alpha=0.5, label=LABELS.get(method, method))
            for p, x, y in zip(mine, xs, ys):
                ax.scatter(
                    x, y, color=colors[method], marker=KINDS.get(attack_kind(p["attack"]), ".")
                )
    for ax, title in zip(axes, METRICS.values()):
        ax.set_xlabel("share of the original's distinct words kept")
        ax.set_title(title)
        ax.invert_xaxis()
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower left")
    kinds = sorted({attack_kind(p["attack"]) for p in points})
    for kind in kinds:  # the marker key, drawn once in grey
        axes[1].scatter([], [], color="grey", marker=KINDS.get(kind, "."), label=kind)
    axes[1].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def report_map(results: dict, out_dir: Path, others: Sequence[str]) -> str | None:
    """Draw ``attack_map.png`` into ``out_dir`` from the ``results.json`` of ``others`` (paths
    against the working directory or the repository; a missing one is skipped with a warning)
    and this run's ``results``, which win where both hold a cell; the PNG's name, or ``None``
    when no cell was attacked."""
    loaded = []
    for other in others:
        try:
            loaded.append(json.loads(Path(resolve_path(other)).read_text(encoding="utf-8")))
        except (OSError, ValueError) as err:
            logger.warning("attack map: %s left out (%s)", other, err)
    points = map_points([*loaded, results])
    if not points:
        return None
    return map_plot(points, out_dir / "attack_map.png").name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results.json of evaluation runs")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    args = parser.parse_args(argv)
    try:
        loaded = [json.loads(p.read_text(encoding="utf-8")) for p in args.results]
    except (OSError, json.JSONDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    points = map_points(loaded)
    if not points:
        print("error: no attacked curve rows in the given results", file=sys.stderr)
        return 2
    map_plot(points, args.out)
    print(json.dumps({"points": len(points), "out": str(args.out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
