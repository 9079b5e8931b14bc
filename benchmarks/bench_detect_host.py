"""Detection's host work per text, the part an accelerator cannot take over (a script, not a
timed test; prints one JSON object).

On a GPU, detection of 200-token texts is bound by the host: the models' forwards are short
there, and what is left is Python and numpy per text (the windowed test, the reads of every
step, the token pieces, the embedder's tokenizer). This measures that work on any machine:

* ``host_ms_per_text``: detection wall time minus the time inside the MM's and the embedder's
  forwards, the mapper and the gate entropies (the work a GPU runs), per text, best of
  ``--rounds`` (with ``--batched``, of batched detection, the accelerator's path, timed here
  on the CPU; per text, the texts run side by side on the threads and the figure is low);
  ``parts_ms_per_text`` splits it (``embed_overhead``: the embedder's tokenizer
  and sentence-transformers around its forward).
* ``assembly_texts_per_s_by_workers``: the per-text assembly (:mod:`watermark.detect.assembly`) of
  the same texts, in this process (0) and in ``--workers`` worker processes.
* ``windowed_test``: the windowed test on the same texts' inputs, one draw per atom (the
  shipped :func:`watermark.core.stats.windowed_test`) against drawing every bit as 0.3.0 did,
  timed alternately in one run, with their ratio and the largest p-value difference (both are
  Monte Carlo estimates of the same p-value).

Example::

    python benchmarks/bench_detect_host.py --texts 24
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import watermark.core.measurement as measurement  # noqa: E402
import watermark.detect.assembly as assembly  # noqa: E402
import watermark.detect.detector as detector  # noqa: E402
from benchmarks.inputs import human_texts  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.config.watermark_config import as_config  # noqa: E402
from watermark.core.stats import tail_table, windowed_test  # noqa: E402
from watermark.models.loaders import load_lm  # noqa: E402

DEVICE_WORK = ("mm_forward", "se_forward", "mapper_forward", "entropy")


def windowed_test_per_bit(green, gammas, members, draws=2000, seed=0) -> float:
    """0.3.0's simulation: every bit drawn in every draw (its p-value only)."""
    bits = np.asarray(green, dtype=bool).reshape(len(green), -1)
    probs = np.clip(np.asarray(gammas, dtype=np.float64), 0.0, 1.0).reshape(bits.shape)
    tables = [tail_table(probs[list(m)].ravel()) for m in members]
    observed = [t[int(bits[list(m)].sum())] for t, m in zip(tables, members)]
    smallest = min(observed) * (1.0 + 1e-9)
    rng, extreme = np.random.default_rng(seed), 0
    for done in range(0, draws, 500):
        chunk = min(500, draws - done)
        counts = (rng.random((chunk, *probs.shape)) < probs).sum(axis=2)
        low = np.ones(chunk)
        for table, m in zip(tables, members):
            low = np.minimum(low, table[counts[:, list(m)].sum(axis=1)])
        extreme += int((low <= smallest).sum())
    p = (1 + extreme) / (draws + 1)
    return min(1.0, p if extreme else min(p, len(members) * min(observed)))


def timer_on(spent: collections.Counter, owner: object, name: str, label: str) -> None:
    """Adds the seconds of every call of ``owner.name`` to ``spent[label]``."""
    inner = getattr(owner, name)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start

    setattr(owner, name, timed)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=24, help="texts of 200 generator tokens")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--workers",
        type=int,
        nargs="*",
        default=[2],
        help="assembly worker processes to time against none",
    )
    parser.add_argument(
        "--batched",
        action="store_true",
        help="batched detection (fixed-shape forwards shared by the texts, as on an accelerator)",
    )
    return parser


def host_times(wm: Watermark, texts: list[str], rounds: int) -> tuple[dict, list, list]:
    """Milliseconds per text of each timed part (best of ``rounds``), and the first round's
    windowed-test inputs and assembly jobs."""
    spent: collections.Counter = collections.Counter()
    timer_on(spent, wm.core.measurement.model, "forward", "mm_forward")
    timer_on(spent, wm.core.semantic.embedder[0].auto_model, "forward", "se_forward")
    timer_on(spent, wm.core.semantic.mapper, "forward", "mapper_forward")
    timer_on(spent, measurement, "entropy_from_logits", "entropy")
    timer_on(spent, wm.core.semantic, "embed", "embed")
    for name in ("token_pieces", "windowed_test", "assemble"):
        timer_on(spent, assembly, name, name)
    inputs, jobs = [], []  # the first round's windowed-test inputs and assembly jobs
    shipped, keys = assembly.windowed_test, detector.assemble_keys

    def keep_inputs(*a, **kw):
        inputs.append(a)
        return shipped(*a, **kw)

    def keep_job(*a):
        jobs.append(a[2:])  # after the config and the tokenizer
        return keys(*a)

    wm.detect(texts[:2])  # warm-up
    best: dict[str, float] = {}
    for round_ in range(rounds):
        spent.clear()
        assembly.windowed_test = keep_inputs if round_ == 0 else shipped
        detector.assemble_keys = keep_job if round_ == 0 else keys
        start = time.perf_counter()
        wm.detect(texts, batch_size=len(texts))
        spent["total"] = time.perf_counter() - start
        spent["host"] = spent["total"] - sum(spent[k] for k in DEVICE_WORK)
        spent["embed_overhead"] = spent["embed"] - spent["se_forward"]
        for key, seconds in spent.items():
            best[key] = min(best.get(key, float("inf")), 1000 * seconds / len(texts))
    assembly.windowed_test, detector.assemble_keys = shipped, keys
    return best, inputs, jobs


def windowed_figures(inputs: list, rounds: int) -> dict:
    """The shipped windowed test against 0.3.0's per-bit draws on the same inputs: milliseconds
    per input of each (median of ``rounds`` runs), their ratio and the largest p difference."""
    atoms, per_bit = [], []
    for _ in range(rounds):
        for runs, fn in ((atoms, windowed_test), (per_bit, windowed_test_per_bit)):
            start = time.perf_counter()
            [fn(*a) for a in inputs]
            runs.append((time.perf_counter() - start) / len(inputs))
    p_atoms = [windowed_test(*a)[0] for a in inputs]
    p_bits = [windowed_test_per_bit(*a) for a in inputs]
    return {
        "atoms_ms": round(1000 * statistics.median(atoms), 2),
        "per_bit_ms": round(1000 * statistics.median(per_bit), 2),
        "speedup": round(statistics.median(per_bit) / statistics.median(atoms), 1),
        "max_p_difference": round(max(abs(a - b) for a, b in zip(p_atoms, p_bits)), 4),
    }


def assembly_rates(wm: Watermark, jobs: list, workers: list[int]) -> dict[int, float]:
    """Texts per second of the assembly jobs in this process (0) and in each worker count."""
    per_worker = {}
    start = time.perf_counter()
    [detector.assemble_keys(wm.config, wm.tokenizer, *job) for job in jobs]
    per_worker[0] = round(len(jobs) / (time.perf_counter() - start), 1)
    for count in workers:
        pool = assembly.AssemblyPool(count, wm.config, wm.tokenizer)
        [f.result() for f in [pool.submit(*job) for job in jobs]]  # warm-up
        start = time.perf_counter()
        [f.result() for f in [pool.submit(*job) for job in jobs]]
        per_worker[count] = round(len(jobs) / (time.perf_counter() - start), 1)
        pool.close()
    return per_worker


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    cfg = as_config(None)
    model, tokenizer = load_lm(cfg.models.generator)
    wm = Watermark.load(cfg, tokenizer=tokenizer, generator=model)
    wm.detector.batched = args.batched or None
    texts = human_texts(wm.tokenizer, args.texts, 200)
    best, inputs, jobs = host_times(wm, texts, args.rounds)
    parts = {
        k: round(best[k], 2)
        for k in ("assemble", "windowed_test", "token_pieces", "embed_overhead", "entropy", "total")
    }
    print(
        json.dumps(
            {
                "texts": len(texts),
                "threads": torch.get_num_threads(),
                "batched": wm.detector.fixed,
                "host_ms_per_text": round(best["host"], 2),
                "parts_ms_per_text": parts,
                "windowed_test": windowed_figures(inputs, args.rounds),
                "assembly_texts_per_s_by_workers": assembly_rates(wm, jobs, args.workers),
            }
        )
    )


if __name__ == "__main__":
    main()
