"""Detection from text alone: scored set W, the paper's score, and a calibrated p-value.

For each text: tokenize with the generator tokenizer (no special tokens), run the measurement
model once to get every step's gate (:meth:`WatermarkCore.text_gate`), embed the prefixes of all
scored steps in batches (:meth:`WatermarkCore.green_lists`), and read whether each scored
token is green under its v_hat (:meth:`GreenLists.read`). The tests and per-token flags below
are then assembled from those reads on the CPU (:mod:`watermark.detect.assembly`), in this
process or in worker processes (``workers``).

* ``score`` is the paper's ``sum_{t in W} strength * v_hat_t[s_t] / |W|`` with the strength of
  the configured rule (``delta`` for ``paper`` / ``floor``, ``bias`` for ``additive``). The
  tournament has no logit scale (its strength, ``layers``, is a count of green lists): its score
  is the mean green bit over its ``layers`` lists, SynthID-Text's mean g-value, in [0, 1]
  (:meth:`watermark.config.schemes.Scheme.score`). ``green_fraction`` is the share of scored tokens
  green in the first list; ``awr`` = |W| / T.
* The z-test uses the scored tokens' green bits (one per green list: L = ``layers`` bits per
  token for the tournament, else 1), each token id counted once (its first scored occurrence)
  when ``unique_tokens`` is set: consecutive prefixes have nearly the same embedding, hence
  nearly the same green list, so repeats of a token are not independent evidence (the first M
  steps even share one green list). With ``fresh_only`` a token is tested at its first
  occurrence in the text only, and only if that step is scored: generation leaves tokens that
  are already in the text neutral. gamma_t is the vocabulary's green fraction under v_hat_t
  (``vocab``) or the MM's probability mass on green tokens (``mm``). See
  :mod:`watermark.core.stats`.
* With ``window_sizes``, every span of the text (the whole text, and spans of each size at a
  quarter stride) is also tested as a text of its own
  (:func:`watermark.core.units.tested_indices`: a passage pasted after text that used its words
  keeps them), and the best span's p-value is corrected for their number (``window_p_value``).
* With ``repeats="bigram"`` a token that already occurs in the text (or span) reads its bits at
  its shifted outputs (:meth:`GreenLists.contains_repeat`, null probability the share of
  positive outputs), and a repeat is tested at the first occurrence of its (previous token,
  token) pair, if that step is scored (:func:`watermark.core.units.repeat_indices`), besides the
  first occurrences.

Texts that cannot be scored (empty, whitespace, no letters, another script, no tokens) get
``num_scored = 0``, ``p_value = 1``, ``is_watermarked = False`` and a ``reason``.

:meth:`Detector.detect_per_key` gives each text's token-level result under every key the config
tests, the results the verdict picks from (:mod:`watermark.detect.verdict`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future

import torch

from watermark.core.scoring import WatermarkCore
from watermark.core.text import decode_many, encode_text, unsupported_reason
from watermark.core.threads import one_thread, spread
from watermark.detect.assembly import AssemblyPool, assemble_keys
from watermark.detect.result import DetectionResult
from watermark.detect.verdict import best_key, with_sentences
from watermark.sentences.significance import SentenceTest

LONG_TEXT = 4096  # tokens in a chunk of texts from which detection shows progress within texts


class Detector:
    """Batched detector over a :class:`WatermarkCore` and, where the config has one, the
    sentence tests of each text (they join the verdict, :mod:`watermark.detect.verdict`)."""

    def __init__(
        self,
        core: WatermarkCore,
        window_sizes: Sequence[int] | None = None,
        sentence_tests: Callable[[str], list[SentenceTest]] | None = None,
        fingerprint: str | None = None,
        batched: bool | None = None,
    ) -> None:
        """``window_sizes``: the windowed test's span sizes, if not the core config's;
        ``sentence_tests``: a text's sentence test under each key, in the core's key order
        (the sentence layer's :meth:`~watermark.sentences.layer.SentenceLayer.tests`;
        ``None``: token level only); ``fingerprint``: what the results name, if not the
        core's (a watermark with the sentence layer's own mapper names that too);
        ``batched``: see :attr:`batched`."""
        self.core = core
        self.batched = batched
        self.config = core.config
        if window_sizes is not None:
            self.config = core.config.evolve(window_sizes=list(window_sizes))
        self._pool: AssemblyPool | None = None
        self.sentence_tests = sentence_tests
        self.fingerprint = fingerprint or core.fingerprint()

    def _workers(self, workers: int) -> AssemblyPool:
        """The pool of ``workers`` assembly processes, started on first use and kept."""
        if self._pool is None or self._pool.workers != workers:
            self.close()
            self._pool = AssemblyPool(workers, self.config, self.core.tokenizer)
        return self._pool

    def close(self) -> None:
        """Stops the assembly workers, if any were started."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @property
    def fixed(self) -> bool:
        """Whether the texts of a chunk share the models' forwards in fixed shapes
        (:mod:`watermark.core.fixed_shapes`): :attr:`batched` where it is set (``True`` /
        ``False``), else on an accelerator and not on a CPU, where each text is computed alone
        on a thread of its own (:mod:`watermark.core.threads`)."""
        return self.core.fixed_shapes if self.batched is None else bool(self.batched)

    @property
    def default_chunk_size(self) -> int:
        """Texts per batch when none is given: 8 on a CPU, 256 on an accelerator."""
        return 8 if self.core.device.type == "cpu" else 256

    def detect(
        self,
        texts: Sequence[str],
        progress: bool = False,
        chunk_size: int | None = None,
        workers: int = 0,
    ) -> list[DetectionResult]:
        """Detects the watermark in each text (results in input order); see :meth:`detect_ids`."""
        return self.detect_ids(*self._encode(texts), progress, chunk_size, workers)

    def detect_per_key(
        self, texts: Sequence[str], progress: bool = False, chunk_size: int | None = None
    ) -> list[list[DetectionResult]]:
        """Each text's token-level results under every key the config tests, in the config's
        order (its ``key``, then its ``old_keys``), before the verdict picks one
        (:func:`~watermark.detect.verdict.best_key`; no sentence test): what a key's own
        false-positive rate is measured on. The results are the ones :meth:`detect` chooses
        from, computed the same way; a text that cannot be scored gets one result, with its
        ``reason``."""
        ids_list, reasons = self._encode(texts)
        found = self._results(ids_list, reasons, progress, chunk_size, None, None)
        found = [[item] if isinstance(item, DetectionResult) else item for item in found]
        for result in (r for per_key in found for r in per_key):
            result.fingerprint = self.fingerprint
        return found

    def _encode(self, texts: Sequence[str]) -> tuple[list[list[int]], list[str | None]]:
        """Each text's generator token ids and the reason it cannot be scored (or ``None``)."""
        ids_list: list[list[int]] = []
        reasons: list[str | None] = []
        for text in texts:
            reason = unsupported_reason(text, self.config.detection.allowed_scripts)
            ids = [] if reason else encode_text(self.core.tokenizer, text)
            if reason is None and not ids:
                reason = "no tokens"
            ids_list.append(ids)
            reasons.append(reason)
        return ids_list, reasons

    def detect_ids(
        self,
        ids_list: Sequence[Sequence[int]],
        reasons: Sequence[str | None] | None = None,
        progress: bool = False,
        chunk_size: int | None = None,
        workers: int = 0,
    ) -> list[DetectionResult]:
        """Detects the watermark in texts given as generator token ids.

        With ``workers`` > 0, each text's result is assembled from its reads (the tests and
        the per-token flags, :mod:`watermark.detect.assembly`) in that many worker processes
        while this one goes on with the next chunk's models: on an accelerator that work, not
        the GPU, bounds the throughput. The results are the same; the workers start on the
        first call (a few seconds) and stay until :meth:`close`.

        ``chunk_size`` texts are scored together (default: 8 on a CPU, 256 on an accelerator).
        A result is a function of the text and the config alone, bit for bit: it does not
        depend on the chunk size, the other texts, the number of threads or workers, or the
        command that ran it. On a CPU each text's MM forwards and SE batches are its own, at
        one intra-op thread, texts side by side on the process's threads
        (:mod:`watermark.core.threads`); batched (:attr:`fixed`, on an accelerator) the texts
        of a chunk share the MM's and the SE's forwards, each forward in a shape that the
        text's own length chooses (:mod:`watermark.core.fixed_shapes`). The mapper always runs
        on blocks of a fixed shape (:mod:`watermark.core.semantic`).
        """
        reasons = list(reasons) if reasons is not None else [None] * len(ids_list)
        texts = [None] * len(ids_list)
        if self.sentence_tests is not None:  # the sentence test reads the text the ids spell
            texts = decode_many(self.core.tokenizer, [list(ids) for ids in ids_list])
        pool = self._workers(workers) if workers > 0 else None
        results = self._results(ids_list, reasons, progress, chunk_size, pool, texts)
        on_cpu = self.core.device.type == "cpu"
        with one_thread(on_cpu):  # the sentence tests of texts assembled in worker processes
            results = [self._finish(item, text) for item, text in zip(results, texts)]
        for result in results:
            result.fingerprint = self.fingerprint
        return results

    def _results(
        self,
        ids_list: Sequence[Sequence[int]],
        reasons: list[str | None],
        progress: bool,
        chunk_size: int | None,
        pool: AssemblyPool | None,
        texts: list[str | None] | None,
    ) -> list:
        """Per text, its result where it was finished here (:meth:`_finish` with its text of
        ``texts``), else its results per key or a future of them; with ``texts`` ``None``,
        every text's results per key (or its one unscored result), none finished."""
        from tqdm.auto import tqdm

        if chunk_size is None:
            chunk_size = self.default_chunk_size
        on_cpu = self.core.device.type == "cpu"

        def run(chunk: range) -> list:  # per text: a result, or a future of its results per key
            ids, why = [list(ids_list[i]) for i in chunk], [reasons[i] for i in chunk]
            found = self._chunk(ids, why, progress, pool)
            if texts is None:  # every key's results, no verdict
                return found
            return [self._finish(item, texts[i], wait=False) for i, item in zip(chunk, found)]

        results: list = []
        bar = tqdm(total=len(ids_list), desc="detect", unit="text", disable=not progress)
        for start in range(0, len(ids_list), chunk_size):
            chunk = range(start, min(start + chunk_size, len(ids_list)))
            # each text on its own thread at one intra-op thread (watermark.core.threads),
            # unless the chunk's texts share fixed-shape forwards
            jobs = [chunk] if self.fixed else [range(i, i + 1) for i in chunk]
            results.extend(item for done in spread(run, jobs, on_cpu) for item in done)
            bar.update(len(chunk))
        bar.close()
        return results

    def _finish(
        self, item: DetectionResult | list | Future, text: str | None, wait: bool = True
    ) -> DetectionResult | Future:
        """A text's result from what :meth:`_chunk` left for it: one verdict over its keys,
        with the sentence test of ``text`` where the layer is on and the text was scored (a
        future of them is returned as it is unless ``wait``)."""
        if isinstance(item, DetectionResult) or (isinstance(item, Future) and not wait):
            return item
        per_key = item.result() if isinstance(item, Future) else item
        target_fpr = self.config.detection.target_fpr
        if self.sentence_tests is None or per_key[0].reason is not None:
            return best_key(per_key, target_fpr)
        return with_sentences(per_key, self.sentence_tests(text), target_fpr)

    def _chunk(
        self,
        ids_list: list[list[int]],
        reasons: list[str | None],
        progress: bool,
        pool: AssemblyPool | None = None,
    ) -> list[DetectionResult | list[DetectionResult] | Future]:
        core = self.core
        fixed = self.fixed
        long = progress and sum(map(len, ids_list)) >= LONG_TEXT  # show progress within texts
        todo = [n for n, ids in enumerate(ids_list) if reasons[n] is None and ids]
        if long and not fixed:  # progress within each text
            gates = {n: core.text_gate(ids_list[n], progress=True) for n in todo}
        else:
            gates = dict(zip(todo, core.text_gates([ids_list[n] for n in todo], fixed)))
        steps = {n: torch.nonzero(gates[n].gated).flatten().add(1).tolist() for n in todo}
        reads = {}  # per text: its steps' reads per key
        # Batched, the chunk's spans share fixed-shape SE forwards; otherwise each text's spans
        # are embedded alone: either way its bits cannot depend on the other texts.
        groups = [todo] if fixed else [[n] for n in todo]
        for group in groups:
            found = core.green_lists(
                [t for n in group for t in steps[n]],
                [ids_list[n] for n in group for _ in steps[n]],
                progress=long and not fixed,
                fixed=fixed,
            )
            drawn = [
                (ids_list[n][t - 1], ids_list[n][t - 2] if t >= 2 else 0)
                for n in group
                for t in steps[n]
            ]
            tokens, previous = torch.tensor(drawn, dtype=torch.long).reshape(-1, 2).T
            per_key = core.reads(found, tokens, previous)
            at = 0
            for n in group:
                rows = slice(at, at + len(steps[n]))
                reads[n] = [key_reads.select(rows) for key_reads in per_key]
                at += len(steps[n])
        results = []
        for n, ids in enumerate(ids_list):
            if n not in gates:
                window_p = 1.0 if self.config.detection.window_sizes else None
                results.append(
                    DetectionResult(
                        reason=reasons[n] or "no tokens", token_ids=ids, window_p_value=window_p
                    )
                )
                continue
            job = (ids, gates[n].entropy, steps[n], reads[n])
            if pool is not None:
                results.append(pool.submit(*job))
            else:
                results.append(assemble_keys(self.config, core.tokenizer, *job))
        return results
