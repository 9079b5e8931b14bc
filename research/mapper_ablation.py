"""Train one mapper per variant of a plan (YAML) and print their metrics next to SimHash.

Usage: `python research/mapper_ablation.py --plan configs/mapper/ablation.yaml [--out
runs/ablation]`. Each variant trains with `python -m mapper.train` (own log and checkpoint folders
under --out), is exported, then scored by `mapper.compare` on the validation split. Prints a
Markdown table and writes `<out>/results.json`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

from mapper.compare import ROWS, evaluate


def train_variant(base: str, flags: list[str], out: Path) -> float:
    """Runs one training; returns its wall time in seconds."""
    override = out / "override.yaml"
    out.mkdir(parents=True, exist_ok=True)
    override.write_text(
        yaml.safe_dump(
            {
                "trainer": {
                    "enable_progress_bar": False,
                    "logger": {
                        "class_path": "lightning.pytorch.loggers.TensorBoardLogger",
                        "init_args": {"save_dir": str(out / "runs"), "name": "tb"},
                    },
                    "callbacks": [
                        {
                            "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                            "init_args": {"dirpath": str(out / "ckpt"), "save_last": True},
                        }
                    ],
                },
                "export_dir": str(out / "export"),
            }
        )
    )
    cmd = [sys.executable, "-m", "mapper.train", "fit", "--config", base, "--config", str(override)]
    start = time.perf_counter()
    subprocess.run(cmd + flags, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", default="configs/mapper/ablation.yaml")
    parser.add_argument("--out", default="runs/ablation")
    parser.add_argument("--only", nargs="*", help="run only these variants")
    args = parser.parse_args()
    plan = yaml.safe_load(Path(args.plan).read_text())
    results: dict[str, dict] = {}
    for name, flags in plan["variants"].items():
        if args.only and name not in args.only:
            continue
        out = Path(args.out) / name
        seconds = train_variant(plan["base_config"], list(flags), out)
        results[name] = evaluate(str(out / "export"))
        results[name]["seconds"] = seconds
        print(f"{name}: trained in {seconds:.0f}s", file=sys.stderr, flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "results.json").write_text(json.dumps(results, indent=1))
    names = list(results)
    print("| metric | SimHash | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    first = results[names[0]]["simhash"]
    for key, label, _ in ROWS:
        if key not in first:
            continue
        cells = [f"{results[n]['mapper'][key]:.3f}" for n in names]
        print(f"| {label} | {first[key]:.3f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
