"""One method's robustness curves in two evaluation runs, cell by cell, with paired intervals.

For a change to a method (a new default against the old one), two runs of the same curves config
give each method's per-prompt z of every attacked cell and the z of the same human texts. This
sets the new run's method against the old run's, per attack cell: ROC-AUC and TPR at 1% FPR
differences with paired bootstrap intervals (:func:`evaluation.comparison.difference_table`).
Pairing needs the same prompts, attacks and human texts: the runs' prompt settings must be equal,
and the human texts' z must be too, up to float noise (the detector is the same, so equal z
means equal humans).

    python -m research.compare_runs runs/eval/matched/results.json \\
        docs/research/matched/results.json --method ours-loops --old-method ours --names 0.7,0.4

Prints the markdown table and one JSON line per cell.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evaluation.comparison import cell_differences, difference_table
from evaluation.config_files import sections_of

Z_TOLERANCE = 1e-3  # float noise between runs (embedding batches differ); another text differs more
SAME = (
    ("texts", "heldout"),
    ("texts", "sources"),
    ("texts", "seed"),
    ("texts", "unit_pool"),
    ("curves", "prompts"),
    ("curves", "attacked"),
    ("curves", "offset"),
)


def merged(
    new: dict, old: dict, method: str, names: tuple[str, str], old_method: str | None = None
) -> dict:
    """One curves dict holding ``method``'s rows of the new run and ``old_method``'s (default:
    the same name) of the old one, renamed to ``names``."""
    configs = [sections_of(run["config"]) for run in (new, old)]
    for section, key in SAME:
        if len({repr(c.get(section, {}).get(key)) for c in configs}) > 1:
            raise SystemExit(f"error: the runs differ in {section}.{key}; cells cannot be paired")
    rows = []
    for run, name, which in zip((new, old), names, (method, old_method or method)):
        mine = [dict(r, method=name) for r in run["curves"]["rows"] if r["method"] == which]
        if not mine:
            raise SystemExit(f"error: no curves of {which!r} in one of the runs")
        rows += mine
    humans = [r.get("human_z") for r in rows if r["attack"] == "none"]
    if len(humans) != 2 or None in humans or len(humans[0]) != len(humans[1]):
        raise SystemExit("error: the runs did not test the same number of human texts")
    if max(abs(a - b) for a, b in zip(*humans)) > Z_TOLERANCE:
        raise SystemExit("error: the human texts' z differ; the runs did not test the same texts")
    return {"rows": rows}


def main(argv: list[str] | None = None) -> None:
    """Prints the difference table and one JSON line per cell."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("new", type=Path, help="results.json of the run with the change")
    parser.add_argument("old", type=Path, help="results.json of the run before it")
    parser.add_argument("--method", default="ours")
    parser.add_argument("--old-method", help="its name in the old run (default: --method)")
    parser.add_argument("--names", default="new,old", help="labels of the two runs")
    args = parser.parse_args(argv)
    names = tuple(args.names.split(","))
    if len(names) != 2:
        raise SystemExit("error: --names takes two labels, e.g. 0.7,0.4")
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in (args.new, args.old)]
    curves = merged(*runs, args.method, names, args.old_method)
    print("\n".join(difference_table(curves, *names)))
    for cell in cell_differences(curves, *names):
        print(json.dumps(cell))


if __name__ == "__main__":
    main()
