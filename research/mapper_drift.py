"""How far two training runs of the default mapper drift apart (a script; prints JSON lines).

Trains the default config (``configs/mapper/default.yaml``) once per entry of ``--threads`` (e.g.
``2,2,1``: two runs with 2 threads, one with 1), each into ``--out/run<i>-t<threads>``, then
prints, for every pair of runs and for each run against the shipped mapper, the share of
(sentence, dimension) signs they agree on over the held-out validation sentences (1.0: the same
key; 0.5: unrelated keys), and whether their tensors are bit-identical.

Example::

    python research/mapper_drift.py --threads 2,2,1 --out runs/drift
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def train(folder: Path, threads: int, epochs: int | None) -> None:
    """One training run of the default config into ``folder``; prints its wall time."""
    command = [
        sys.executable,
        "-m",
        "mapper.train",
        "fit",
        "--config",
        str(ROOT / "configs/mapper/default.yaml"),
        f"--threads={threads}",
        f"--export_dir={folder}",
        "--trainer.enable_progress_bar=false",
    ]
    if epochs:
        command.append(f"--trainer.max_epochs={epochs}")
    start = time.perf_counter()
    subprocess.run(
        command,
        cwd=ROOT,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seconds = round(time.perf_counter() - start, 1)
    print(
        json.dumps({"trained": str(folder), "threads": threads, "seconds": seconds}),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="2,2,1", help="one training run per entry")
    parser.add_argument("--out", default="runs/drift")
    parser.add_argument("--epochs", type=int, default=None, help="default: the config's")
    args = parser.parse_args()
    out = Path(args.out)
    runs = []
    for n, threads in enumerate(int(t) for t in args.threads.split(",")):
        folder = out / f"run{n}-t{threads}"
        if not (folder / "model.safetensors").is_file():
            train(folder, threads, args.epochs)
        runs.append((folder.name, folder))

    from mapper.compare import sign_agreement, validation_set
    from watermark.config.paths import DEFAULT_MAPPER, PACKAGE_DIR
    from watermark.core.identity import tensor_digest
    from watermark.models.semantic_mapper import SemanticMapper

    shipped = SemanticMapper.from_pretrained(PACKAGE_DIR / DEFAULT_MAPPER)
    emb = validation_set(shipped, None).emb
    mappers = {name: SemanticMapper.from_pretrained(folder) for name, folder in runs}
    mappers["shipped"] = shipped
    for a, b in itertools.combinations(mappers, 2):
        print(
            json.dumps(
                {
                    "a": a,
                    "b": b,
                    "sentences": int(emb.shape[0]),
                    "sign_agreement": round(sign_agreement(mappers[a], mappers[b], emb), 4),
                    "identical": tensor_digest(mappers[a]) == tensor_digest(mappers[b]),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
