"""Detection from text alone: the scored set W, the paper's score, calibrated p-values and one
verdict per text.

:class:`Detector` reads texts chunk by chunk. Each text is tokenized with the generator tokenizer
(no special tokens); the measurement model runs once to get every step's gate
(:meth:`WatermarkCore.text_gate`), the prefixes of all scored steps are embedded in batches
(:meth:`WatermarkCore.green_lists`), and each scored token is read green or not under its v_hat,
under every key the config tests (:mod:`watermark.detect.reading`). Each key's result is assembled
from those reads on the CPU (:mod:`watermark.detect.assembly`), in this process or in worker
processes (``workers``). Once every chunk is read, one verdict step per text picks its key and,
where the watermark has the sentence layer, joins the text's sentence tests
(:mod:`watermark.detect.verdict`).

* ``score`` is the paper's ``sum_{t in W} strength * v_hat_t[s_t] / |W|`` with the strength of
  the configured rule (``delta`` for ``paper``, ``bias`` for ``additive``). The tournament has no
  logit scale (its strength, ``layers``, is a count of green lists): its score is the mean green
  bit over its ``layers`` lists, SynthID-Text's mean g-value, in [0, 1]
  (:meth:`watermark.config.schemes.Scheme.score`). ``green_fraction`` is the share of scored
  tokens green in the first list; ``awr`` = |W| / T.
* The z-test uses the scored tokens' green bits (one per green list: L = ``layers`` bits per
  token for the tournament, else 1), each token id counted once (its first scored occurrence)
  when ``unique_tokens`` is set: consecutive prefixes have nearly the same embedding, hence
  nearly the same green list, so repeats of a token are not independent evidence (the first M
  steps even share one green list). With ``fresh_only`` a token is tested at its first
  occurrence in the text only, and only if that step is scored: generation leaves tokens that
  are already in the text neutral. gamma_t, a bit's null probability, is the vocabulary's green
  fraction under v_hat_t. See :mod:`watermark.detect.stats`.
* With ``window_sizes``, every span of the text (the whole text, and spans of each size at a
  quarter stride) is also tested as a text of its own
  (:func:`watermark.detect.units.tested_indices`: a passage pasted after text that used its words
  keeps them), and the best span's p-value is corrected for their number (``window_p_value``).
* With ``repeats="bigram"`` a token that already occurs in the text (or span) reads its bits at
  its shifted outputs (:meth:`GreenLists.contains_repeat`, null probability the share of
  positive outputs), and a repeat is tested at the first occurrence of its (previous token,
  token) pair, if that step is scored (:func:`watermark.detect.units.repeat_indices`), besides
  the first occurrences.

Texts that cannot be read (empty, whitespace, no letters, another script, no tokens) have no
keys to choose among: their result, without a verdict step, has ``num_scored = 0``,
``p_value = 1``, ``is_watermarked = False`` and a ``reason``.

:meth:`Detector.detect_per_key` gives each text's token-level results under every key the config
tests, the results the verdict picks from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future

from watermark.config.keys import key_id
from watermark.core.scoring import WatermarkCore
from watermark.core.text import decode_many, encode_text, unsupported_reason
from watermark.core.threads import spread
from watermark.detect.assembly import AssemblyPool, assemble_keys
from watermark.detect.reading import TextReads, read_texts
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
        self.key_ids = [key_id(k) for k in core.config.secret_keys()]  # public, in key order

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
        """Detects the watermark in each text (results in input order); see :meth:`detect_ids`.
        The sentence test, where the layer is on, reads each text as given."""
        ids_list, reasons = self._encode(texts)
        return self._detect(ids_list, reasons, list(texts), progress, chunk_size, workers)

    def detect_ids(
        self,
        ids_list: Sequence[Sequence[int]],
        reasons: Sequence[str | None] | None = None,
        progress: bool = False,
        chunk_size: int | None = None,
        workers: int = 0,
    ) -> list[DetectionResult]:
        """Detects the watermark in texts given as generator token ids (``reasons``: why a text
        cannot be read, or ``None``); the sentence test reads the text the ids spell.

        With ``workers`` > 0, each text's results are assembled from its reads (the tests and
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
        ids_list = [list(ids) for ids in ids_list]
        reasons = list(reasons) if reasons is not None else [None] * len(ids_list)
        texts = None
        if self.sentence_tests is not None:
            texts = decode_many(self.core.tokenizer, ids_list)
        return self._detect(ids_list, reasons, texts, progress, chunk_size, workers)

    def detect_per_key(
        self, texts: Sequence[str], progress: bool = False, chunk_size: int | None = None
    ) -> list[list[DetectionResult]]:
        """Each text's token-level results under every key the config tests, in the config's
        order (its ``key``, then its ``old_keys``), before the verdict picks one
        (:func:`~watermark.detect.verdict.best_key`; no sentence test): what a key's own
        false-positive rate is measured on. The results are the ones :meth:`detect` chooses
        from, computed the same way; a text that cannot be read gets one result, with its
        ``reason``."""
        ids_list, reasons = self._encode(texts)
        found = self._read(ids_list, reasons, progress, chunk_size, None)
        per_key = [
            found[n] if n in found else [self._unread(ids_list[n], reasons[n])]
            for n in range(len(ids_list))
        ]
        for results in per_key:
            for k, result in enumerate(results):
                result.key_index = k  # the key each was tested under
        self._label([r for results in per_key for r in results])
        return per_key

    def _encode(self, texts: Sequence[str]) -> tuple[list[list[int]], list[str | None]]:
        """Each text's generator token ids and the reason it cannot be read (or ``None``)."""
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

    def _detect(
        self,
        ids_list: list[list[int]],
        reasons: list[str | None],
        texts: list[str] | None,
        progress: bool,
        chunk_size: int | None,
        workers: int,
    ) -> list[DetectionResult]:
        """Reads every text (:meth:`_read`), then runs the verdict step once per text that was
        read (:meth:`_verdict`), texts side by side on a CPU. ``texts``: what the sentence
        test reads (``None`` where the watermark has no sentence layer)."""
        pool = self._workers(workers) if workers > 0 else None
        found = self._read(ids_list, reasons, progress, chunk_size, pool)

        def verdict(n: int) -> DetectionResult:
            if n not in found:
                return self._unread(ids_list[n], reasons[n])
            return self._verdict(found[n], None if texts is None else texts[n])

        results = spread(verdict, range(len(ids_list)), self.core.device.type == "cpu")
        self._label(results)
        return results

    def _label(self, results: list[DetectionResult]) -> None:
        """Names in each result what it was tested under: the fingerprint and the public id
        of its key (``key_index``)."""
        for result in results:
            result.fingerprint = self.fingerprint
            result.key_id = self.key_ids[result.key_index]

    def _verdict(self, per_key: list[DetectionResult], text: str | None) -> DetectionResult:
        """The verdict step of a text read under every key: the best key's result
        (:func:`~watermark.detect.verdict.best_key`), or, where the sentence layer is on and
        the text has scored tokens, the verdict joined with the sentence tests of ``text``
        (:func:`~watermark.detect.verdict.with_sentences`)."""
        target_fpr = self.config.detection.target_fpr
        if self.sentence_tests is None or per_key[0].reason is not None:
            return best_key(per_key, target_fpr)
        return with_sentences(per_key, self.sentence_tests(text), target_fpr)

    def _unread(self, ids: list[int], reason: str | None) -> DetectionResult:
        """The result of a text that is not read (``reason``, or no tokens)."""
        window_p = 1.0 if self.config.detection.window_sizes else None
        return DetectionResult(reason=reason or "no tokens", token_ids=ids, window_p_value=window_p)

    def _read(
        self,
        ids_list: list[list[int]],
        reasons: list[str | None],
        progress: bool,
        chunk_size: int | None,
        pool: AssemblyPool | None,
    ) -> dict[int, list[DetectionResult]]:
        """The results under every key of each text that can be read (no reason, some tokens),
        by its index: ``chunk_size`` texts at a time, read with the models
        (:func:`~watermark.detect.reading.read_texts`, with progress within texts where a chunk
        is long), each key's result assembled from the reads, in ``pool``'s worker processes
        while the next chunk is read where it is given."""
        from tqdm.auto import tqdm

        if chunk_size is None:
            chunk_size = self.default_chunk_size
        on_cpu = self.core.device.type == "cpu"

        def assemble(text: TextReads) -> list[DetectionResult] | Future:
            job = (text.ids, text.entropy, text.steps, text.reads)
            if pool is not None:
                return pool.submit(*job)
            return assemble_keys(self.config, self.core.tokenizer, *job)

        def run(chunk: range) -> dict[int, list[DetectionResult] | Future]:
            todo = [n for n in chunk if reasons[n] is None and ids_list[n]]
            long = progress and sum(len(ids_list[n]) for n in chunk) >= LONG_TEXT
            read = read_texts(self.core, [ids_list[n] for n in todo], self.fixed, long)
            return dict(zip(todo, map(assemble, read)))

        found: dict[int, list[DetectionResult] | Future] = {}
        bar = tqdm(total=len(ids_list), desc="detect", unit="text", disable=not progress)
        for start in range(0, len(ids_list), chunk_size):
            chunk = range(start, min(start + chunk_size, len(ids_list)))
            # each text on its own thread at one intra-op thread (watermark.core.threads),
            # unless the chunk's texts share fixed-shape forwards
            jobs = [chunk] if self.fixed else [range(i, i + 1) for i in chunk]
            for done in spread(run, jobs, on_cpu):
                found.update(done)
            bar.update(len(chunk))
        bar.close()
        return {n: r.result() if isinstance(r, Future) else r for n, r in found.items()}
