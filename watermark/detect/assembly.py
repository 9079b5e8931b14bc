"""One text's detection result from the reads of its scored steps: which units enter the
tests, the z-test and the windowed test, and the per-token flags of :class:`DetectionResult`.

These are plain functions of the config and of CPU values, so the detector can run them in
worker processes (:class:`watermark.detect.detector.Detector`, ``workers``) while it keeps the
models.
See :mod:`watermark.detect.detector` for what the tests are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import torch

from watermark.config.watermark_config import WatermarkConfig
from watermark.core.green_lists import TokenReads
from watermark.core.text import decode_ids, decode_many
from watermark.detect.result import DetectionResult, verdict_p_value
from watermark.detect.stats import green_test, window_spans, windowed_test
from watermark.detect.units import first_reads, repeat_indices, tested_indices


def token_pieces(tokenizer: object, ids: Sequence[int], context: int = 16) -> list[str]:
    """Text piece of each token: the text it adds after the ``context`` tokens before it.

    Decoding a short window instead of the whole prefix keeps this linear in the text length;
    the pieces concatenate to ``decode_ids(ids)`` except where a multi-byte character is split
    across tokens (that token is then shown on its own).
    """
    spans = [(max(0, t - 1 - context), t) for t in range(1, len(ids) + 1)]  # token t's window
    with_token = [ids[a:b] for a, b in spans]
    texts = decode_many(tokenizer, with_token + [ids[a : b - 1] for a, b in spans])
    pieces = []
    for t in range(1, len(ids) + 1):
        text, previous = texts[t - 1], texts[len(spans) + t - 1]
        if text.startswith(previous):
            pieces.append(text[len(previous) :])
        else:  # a partial multi-byte character resolved: show the token on its own
            pieces.append(decode_ids(tokenizer, ids[t - 1 : t]))
    return pieces


@dataclass
class Units:
    """The candidate test units of one text: each scored step as a first occurrence, and under
    the bigram repeat policy each step t >= 2 as a repeat too, in the (step, repeat) order of
    the reference. ``bits``, ``gammas`` and ``dims`` are (U, L); the ``shown_*`` values (N, L)
    are each scored step's own read, the one the per-token flags show (at the shifted outputs
    where its token is already in the text, under the bigram policy)."""

    rows: dict[tuple[int, bool], int]
    bits: torch.Tensor
    gammas: torch.Tensor
    dims: torch.Tensor
    shown_bits: torch.Tensor
    shown_gammas: torch.Tensor

    @classmethod
    def of(
        cls,
        cfg: WatermarkConfig,
        ids: list[int],
        reads: TokenReads,
        steps: list[int],
    ) -> Units:
        """The units of a text's reads."""
        green, gammas = reads.green, reads.vocab
        rows = {(i, False): i for i in range(len(steps))}
        if not (cfg.repeat_policy.bigram and steps):
            return cls(rows, green, gammas, reads.dims, green, gammas)
        again_bits, again_gammas = reads.repeat_green, reads.repeat_null
        order = sorted(
            [(i, False) for i in range(len(steps))]
            + [(i, True) for i, t in enumerate(steps) if t >= 2]
        )
        pick = torch.tensor([i for i, _ in order])
        again = torch.tensor([a for _, a in order])[:, None]
        first_at: dict[int, int] = {}  # token id -> its first position
        for pos, token in enumerate(ids):
            first_at.setdefault(token, pos)
        seen = torch.tensor([first_at[ids[t - 1]] < t - 1 for t in steps])[:, None]
        return cls(
            rows={u: r for r, u in enumerate(order)},
            bits=torch.where(again, again_bits[pick], green[pick]),
            gammas=torch.where(again, again_gammas[pick], gammas[pick]),
            dims=torch.where(again, reads.repeat_dims[pick], reads.dims[pick]),
            shown_bits=torch.where(seen, again_bits, green),
            shown_gammas=torch.where(seen, again_gammas, gammas),
        )

    def tested(
        self, cfg: WatermarkConfig, ids: list[int], steps: list[int], span: tuple[int, int]
    ) -> list[int]:
        """Rows of the units the test counts within ``span`` (0-based, end excluded)."""
        policy = cfg.repeat_policy
        rule = (policy.unique_tokens, policy.fresh_only)
        found = [(i, False) for i in tested_indices(ids, steps, span, *rule)]
        if policy.bigram:
            found += [(i, True) for i in repeat_indices(ids, steps, span)]
        return [self.rows[u] for u in sorted(found)]


def token_flags(length: int, steps: list[int], units: Units) -> dict[str, list]:
    """The per-token lists of a result: scored, green, green_bits, gamma and vocab_green (the
    same null as gamma)."""
    flags: dict[str, list] = {
        "scored": [False] * length,
        "green": [False] * length,
        "green_bits": [0] * length,
        "gamma": [None] * length,
        "vocab_green": [None] * length,
    }
    shown = zip(
        steps,
        units.shown_bits.sum(1).tolist(),
        units.shown_bits[:, 0].tolist(),
        units.shown_gammas[:, 0].tolist(),
    )
    for t, count, first_bit, step_gamma in shown:
        flags["scored"][t - 1] = True
        flags["green"][t - 1] = bool(first_bit)
        flags["green_bits"][t - 1] = int(count)
        flags["gamma"][t - 1] = float(step_gamma)
        flags["vocab_green"][t - 1] = float(step_gamma)
    return flags


def run_tests(cfg: WatermarkConfig, ids: list[int], steps: list[int], units: Units) -> dict:
    """The whole-text test and, with ``window_sizes``, the windowed one: the result's test
    fields and its ``tested`` flags."""
    T = len(ids)
    step_of = {r: i for (i, _), r in units.rows.items()}
    dims = units.dims.numpy()
    flat_bits, flat_gammas = units.bits.reshape(-1, 1), units.gammas.reshape(-1, 1)
    width = units.bits.shape[1]  # L
    bits = first_reads(dims, units.tested(cfg, ids, steps, (0, T)), cfg.detection.outputs_once)
    tested = [False] * T
    for r in {b // width for b in bits}:  # bits: flat indices row * L + list
        tested[steps[step_of[r]] - 1] = True
    test_green = flat_bits[bits].flatten().tolist()
    test_gamma = flat_gammas[bits].flatten().tolist()
    z, p = green_test(test_green, test_gamma)
    window_p, window = None, None
    if cfg.detection.window_sizes:
        spans = window_spans(T, cfg.detection.window_sizes)[1:]  # after the whole text, done above
        members = [bits] + [
            first_reads(dims, units.tested(cfg, ids, steps, span), cfg.detection.outputs_once)
            for span in spans
        ]
        window_p, best = windowed_test(flat_bits.numpy(), flat_gammas.numpy(), members)
        if members[best]:
            first, last = members[best][0] // width, members[best][-1] // width
            window = [steps[step_of[first]], steps[step_of[last]]]
    return {
        "num_tested": sum(tested),
        "num_green_tested": int(sum(test_green)),
        "expected_green": float(sum(test_gamma)),
        "z_score": z,
        "p_value": p,
        "is_watermarked": bool(verdict_p_value(p, window_p) < cfg.detection.target_fpr),
        "window_p_value": window_p,
        "window": window,
        "tested": tested,
    }


def assemble(
    cfg: WatermarkConfig,
    ids: list[int],
    entropy: torch.Tensor,
    reads: TokenReads,
    steps: list[int],
    pieces: list[str],
) -> DetectionResult:
    """One text's result under one key, from the reads of its scored steps.

    Args:
        cfg: The detection config.
        ids: The text's generator token ids s_1..s_T.
        entropy: Float (T,): the gate entropy of each step (NaN where not computed).
        reads: The reads of its scored steps (:meth:`GreenLists.read`).
        steps: Its scored steps (1-based, increasing).
        pieces: The text piece of each token (:func:`token_pieces`).
    """
    T, num_scored = len(ids), len(steps)
    units = Units.of(cfg, ids, reads, steps)
    num_green = int(units.shown_bits[:, 0].sum()) if steps else 0
    return DetectionResult(
        score=cfg.scheme.score(units.shown_bits),
        green_fraction=num_green / num_scored if num_scored else 0.0,
        num_scored=num_scored,
        num_tokens=T,
        awr=num_scored / T if T else 0.0,
        reason=None if num_scored else "no scored tokens",
        token_ids=list(ids),
        tokens=pieces,
        entropy=[None if math.isnan(h) else float(h) for h in entropy.tolist()],
        **run_tests(cfg, ids, steps, units),
        **token_flags(T, steps, units),
    )


def assemble_keys(
    cfg: WatermarkConfig,
    tokenizer: object,
    ids: list[int],
    entropy: torch.Tensor,
    steps: list[int],
    reads: Sequence[TokenReads],
) -> list[DetectionResult]:
    """One text's result under each key (:func:`assemble` per key, one set of token pieces)."""
    pieces = token_pieces(tokenizer, ids)
    return [assemble(cfg, ids, entropy, r, steps, pieces) for r in reads]


_WORKER: dict = {}  # a worker process's config and tokenizer


def _start_worker(cfg: WatermarkConfig, tokenizer: object) -> None:
    torch.set_num_threads(1)  # one core per worker
    _WORKER.update(cfg=cfg, tokenizer=tokenizer)


def _arrays(value: object, to_numpy: bool) -> object:
    """A job's tensors as numpy arrays (or back): plain bytes through the pipe, not the shared
    memory segments torch would make for each tensor."""
    if isinstance(value, TokenReads):
        return value.map(lambda field: _arrays(field, to_numpy))
    if isinstance(value, (list, tuple)):
        return type(value)(_arrays(v, to_numpy) for v in value)
    if to_numpy and isinstance(value, torch.Tensor):
        return value.numpy()
    if not to_numpy and isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    return value


def _assemble_job(job: tuple) -> list[DetectionResult]:
    return assemble_keys(_WORKER["cfg"], _WORKER["tokenizer"], *_arrays(job, to_numpy=False))


class AssemblyPool:
    """Worker processes that run :func:`assemble_keys` while the caller keeps the models busy.

    Args:
        workers: Worker processes (spawned, one thread each).
        cfg: The detection config.
        tokenizer: The generator tokenizer (for the token pieces).
    """

    def __init__(self, workers: int, cfg: WatermarkConfig, tokenizer: object) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.workers = workers
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(cfg, tokenizer),
        )

    def submit(self, *job: object) -> Future:
        """A future of ``assemble_keys(cfg, tokenizer, *job)``."""
        return self._pool.submit(_assemble_job, _arrays(job, to_numpy=True))

    def close(self) -> None:
        """Stops the workers."""
        self._pool.shutdown(cancel_futures=True)
