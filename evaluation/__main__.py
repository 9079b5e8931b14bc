"""Command line: ``python -m evaluation --config YAML [--quick] [--set KEY=VALUE ...] [--out DIR]``.

Prints a JSON summary (paths and wall time) on stdout; progress bars and logs go to stderr.
``--generate-only`` makes the generations and stops (:func:`evaluation.experiment.generate_only`);
``--save-cache-seed DIR`` saves the run's cache for committing (:mod:`evaluation.store`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import yaml

from evaluation.config import EvalConfig
from evaluation.experiment import generate_only, run_experiment
from evaluation.report import write_report
from evaluation.store import Store
from watermark.base import UserError
from watermark.config.watermark_config import secret_fields


def _clean(obj):
    """NaN -> None so results.json is strict JSON."""
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def _run(cfg: EvalConfig, progress: bool, stage=run_experiment) -> dict:
    """The experiment (or another ``stage``); without ``progress``, transformers' model-loading
    bars are off too."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    if not progress:
        hf_logging.disable_progress_bar()
    try:
        return stage(cfg, progress=progress)
    finally:
        if shown:
            hf_logging.enable_progress_bar()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evaluation", description=__doc__)
    parser.add_argument(
        "--config", required=True, help="experiment YAML (see configs/evaluation/eval.yaml)"
    )
    parser.add_argument("--quick", action="store_true", help="apply the YAML's quick overrides")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one field of the YAML, the value read as YAML (repeatable), e.g. "
        "--set 'curves.methods=[ours, kgw1]'",
    )
    parser.add_argument("--out", help="output folder (default: the YAML's out_dir)")
    parser.add_argument("--report-dir", help="write report.md and PNGs here (default: out dir)")
    parser.add_argument(
        "--report-only", action="store_true", help="re-write the report from results.json"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.add_argument(
        "--generate-only",
        action="store_true",
        help="only make the main and curve methods' generations (e.g. on a GPU, device: cuda)",
    )
    parser.add_argument(
        "--save-cache-seed",
        metavar="DIR",
        help="write the run's cache (with its cache_seeds) into DIR as <table>.jsonl.gz, to "
        "commit and name in cache_seeds, and stop",
    )
    return parser


def _write_results(results: dict, out: Path, report_dir: Path, command: str) -> dict:
    """results.json in both folders and the report; the summary printed on stdout."""
    for folder in {out, report_dir}:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    report = write_report(results, report_dir, results.get("command", command))
    return {
        "results": str(out / "results.json"),
        "report": str(report),
        "minutes": results["seconds"]["total"] / 60,
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        cfg = EvalConfig.load(args.config, quick=args.quick, overrides=args.set)
    except (OSError, ValueError, TypeError, yaml.YAMLError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.out:
        cfg = replace(cfg, out_dir=args.out)
    out, report_dir = Path(cfg.out_dir), Path(args.report_dir or cfg.out_dir)
    words = argv if argv is not None else sys.argv[1:]
    command = "python -m evaluation " + " ".join(shlex.quote(a) for a in words)
    if args.save_cache_seed:
        seeds = [cfg.resolve(s) for s in cfg.cache_seeds]
        counts = Store(out / "cache", seeds).save_seed(Path(args.save_cache_seed))
        print(json.dumps({"seed": args.save_cache_seed, "records": counts}))
        return 0
    if args.generate_only:
        try:
            print(json.dumps(_run(cfg, not args.no_progress, generate_only)))
        except UserError as err:  # e.g. device: cuda where there is none
            print(f"error: {err}", file=sys.stderr)
            return 2
        return 0
    if args.report_only:
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        for secret in secret_fields():  # results written before the secrets were left out
            results["watermark_config"].pop(secret, None)
    else:
        results = _clean(_run(cfg, progress=not args.no_progress))
        results["command"] = command
    print(json.dumps(_write_results(results, out, report_dir, command)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
