"""Detection from text alone: scored set W, the paper's score, and a calibrated p-value.

For each text: tokenize with the generator tokenizer (no special tokens), run the measurement
model once to get every step's gate (:meth:`WatermarkCore.text_gate`), embed the prefixes of all
scored steps in batches (:meth:`WatermarkCore.green_lists`), and read whether each scored
token is green under its v_hat.

* ``score`` is the paper's ``sum_{t in W} strength * v_hat_t[s_t] / |W|`` with the strength of
  the configured rule (``delta`` for ``paper`` / ``floor``, ``bias`` for ``additive``). The
  tournament has no logit scale (its strength, ``layers``, is a count of green lists): its score
  is the mean green bit over its ``layers`` lists, SynthID-Text's mean g-value, in [0, 1]
  (:func:`paper_score`). ``green_fraction`` is the share of scored tokens green in the first
  list; ``awr`` = |W| / T.
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
  quarter stride) is also tested as a text of its own (:func:`tested_indices`: a passage pasted
  after text that used its words keeps them), and the best span's p-value is corrected for
  their number (``window_p_value``).
* With ``repeats="bigram"`` a token that already occurs in the text (or span) reads its bits at
  its shifted outputs (:meth:`GreenLists.contains_repeat`, null probability the share of
  positive outputs), and a repeat is tested at the first occurrence of its (previous token,
  token) pair, if that step is scored (:func:`watermark.core.units.repeat_indices`), besides the
  first occurrences.

Texts that cannot be scored (empty, whitespace, no letters, another script, no tokens) get
``num_scored = 0``, ``p_value = 1``, ``is_watermarked = False`` and a ``reason``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import torch

from watermark.core.green_lists import GreenLists
from watermark.core.scoring import TextGate, WatermarkCore
from watermark.core.stats import green_test, window_spans, windowed_test
from watermark.core.text import decode_ids, encode_text, unsupported_reason
from watermark.core.units import first_reads, repeat_indices, tested_indices
from watermark.detection_result import DetectionResult

LONG_TEXT = 4096  # tokens in a chunk of texts from which detection shows progress within texts


def paper_score(rule: str, strength: float, green: torch.Tensor) -> float:
    """The score of the scored tokens' green bits ``green`` (N, L): ``strength`` times the share
    green in the first list, or under the tournament the share of all N * L bits that are green
    (0 when N = 0)."""
    if green.shape[0] == 0:
        return 0.0
    if rule == "tournament":
        return int(green.sum()) / green.numel()
    return strength * int(green[:, 0].sum()) / green.shape[0]


def token_pieces(tokenizer: object, ids: Sequence[int], context: int = 16) -> list[str]:
    """Text piece of each token: the text it adds after the ``context`` tokens before it.

    Decoding a short window instead of the whole prefix keeps this linear in the text length;
    the pieces concatenate to ``decode_ids(ids)`` except where a multi-byte character is split
    across tokens (that token is then shown on its own).
    """
    pieces = []
    for t in range(1, len(ids) + 1):
        start = max(0, t - 1 - context)
        previous = decode_ids(tokenizer, ids[start : t - 1])
        text = decode_ids(tokenizer, ids[start:t])
        if text.startswith(previous):
            pieces.append(text[len(previous) :])
        else:  # a partial multi-byte character resolved: show the token on its own
            pieces.append(decode_ids(tokenizer, ids[t - 1 : t]))
    return pieces


class Detector:
    """Batched detector over a :class:`WatermarkCore`."""

    def __init__(self, core: WatermarkCore, window_sizes: Sequence[int] | None = None) -> None:
        """``window_sizes``: the windowed test's span sizes, if not the core config's."""
        self.core = core
        self.config = core.config
        if window_sizes is not None:
            self.config = replace(core.config, window_sizes=list(window_sizes))

    @property
    def default_chunk_size(self) -> int:
        """Texts per batch when none is given: 8 on a CPU, 64 on an accelerator."""
        return 8 if self.core.measurement.device.type == "cpu" else 64

    def detect(
        self, texts: Sequence[str], progress: bool = False, chunk_size: int | None = None
    ) -> list[DetectionResult]:
        """Detects the watermark in each text (results in input order); see :meth:`detect_ids`."""
        ids_list: list[list[int] | None] = []
        reasons: list[str | None] = []
        for text in texts:
            reason = unsupported_reason(text, self.config.allowed_scripts)
            ids = [] if reason else encode_text(self.core.tokenizer, text)
            if reason is None and not ids:
                reason = "no tokens"
            ids_list.append(ids)
            reasons.append(reason)
        return self.detect_ids(ids_list, reasons, progress=progress, chunk_size=chunk_size)

    def detect_ids(
        self,
        ids_list: Sequence[Sequence[int]],
        reasons: Sequence[str | None] | None = None,
        progress: bool = False,
        chunk_size: int | None = None,
    ) -> list[DetectionResult]:
        """Detects the watermark in texts given as generator token ids.

        ``chunk_size`` texts are scored together (default: 8 on a CPU, 64 on an accelerator).
        On a CPU each text's MM forwards and SE batches are its own, so its result does not
        depend on the chunk size or on the other texts. On an accelerator the chunk's texts
        share padded MM forwards and SE batches (faster there), and a result may differ from a
        lone text's in the last float bits of an entropy or an embedding.
        """
        from tqdm.auto import tqdm

        if chunk_size is None:
            chunk_size = self.default_chunk_size

        reasons = list(reasons) if reasons is not None else [None] * len(ids_list)
        results: list[DetectionResult] = []
        bar = tqdm(total=len(ids_list), desc="detect", unit="text", disable=not progress)
        for start in range(0, len(ids_list), chunk_size):
            chunk = range(start, min(start + chunk_size, len(ids_list)))
            results.extend(
                self._chunk(
                    [list(ids_list[i]) for i in chunk], [reasons[i] for i in chunk], progress
                )
            )
            bar.update(len(chunk))
        bar.close()
        made_by = self.core.fingerprint
        for result in results:
            result.fingerprint = made_by
        return results

    def _chunk(
        self, ids_list: list[list[int]], reasons: list[str | None], progress: bool
    ) -> list[DetectionResult]:
        core = self.core
        long = progress and sum(map(len, ids_list)) >= LONG_TEXT  # show progress within texts
        todo = [n for n, ids in enumerate(ids_list) if reasons[n] is None and ids]
        if long:  # progress within each text
            gates = {n: core.text_gate(ids_list[n], progress=True) for n in todo}
        else:
            gates = dict(zip(todo, core.text_gates([ids_list[n] for n in todo])))
        steps = {n: torch.nonzero(gates[n].gated).flatten().add(1).tolist() for n in todo}
        lists = {}
        # Texts that share padded MM forwards (an accelerator) share SE batches too; otherwise
        # each text's spans are embedded alone, so its bits cannot depend on its batch-mates.
        groups = [todo] if core.measurement.logit_budget > 0 else [[n] for n in todo]
        for group in groups:
            found = core.green_lists(
                [t for n in group for t in steps[n]],
                [ids_list[n] for n in group for _ in steps[n]],
                progress=long,
            )
            at = 0
            for n in group:
                lists[n] = found.select(list(range(at, at + len(steps[n]))))
                at += len(steps[n])
        results = []
        for n, ids in enumerate(ids_list):
            if n not in gates:
                window_p = 1.0 if self.config.window_sizes else None
                results.append(
                    DetectionResult(
                        reason=reasons[n] or "no tokens", token_ids=ids, window_p_value=window_p
                    )
                )
                continue
            pieces = token_pieces(core.tokenizer, ids)
            per_key = [
                self._assemble(ids, gates[n], core.semantic.from_signs(lists[n].signs, key),
                               steps[n], pieces)
                for key in range(core.semantic.num_keys)
            ]  # fmt: skip
            results.append(self._best_key(per_key))
        return results

    def _best_key(self, per_key: list[DetectionResult]) -> DetectionResult:
        """The result under the best-matching key, its p-values corrected for the keys tried."""
        key_p = [r.verdict_p_value for r in per_key]
        best = min(range(len(per_key)), key=key_p.__getitem__)
        found, k = per_key[best], len(per_key)
        p = min(1.0, k * found.p_value)
        window_p = None if found.window_p_value is None else min(1.0, k * found.window_p_value)
        watermarked = (p if window_p is None else window_p) < self.config.target_fpr
        return replace(found, p_value=p, window_p_value=window_p, is_watermarked=watermarked,
                       key_index=best, key_p_values=key_p)  # fmt: skip

    def _assemble(
        self, ids: list[int], gate: TextGate, lists: GreenLists, steps: list[int], pieces: list[str]
    ) -> DetectionResult:
        core, cfg = self.core, self.config
        T = len(ids)
        tokens = torch.tensor([ids[t - 1] for t in steps], dtype=torch.long)
        green_scored = lists.contains(tokens).cpu()  # (N, L)
        vocab = lists.vocab_fraction().cpu()  # (N, L)
        gammas = vocab
        if cfg.null_model == "mm" and steps:
            gammas = core.null_green_mass(ids, steps, lists).cpu()
        bigram = cfg.fresh_only and cfg.repeats == "bigram"
        rule = (cfg.unique_tokens, cfg.fresh_only)
        # candidate units: each scored step as a first occurrence (row i), and with "bigram"
        # as a repeat too (steps t >= 2), in the order (step, repeat) of the reference
        rows = {(i, False): i for i in range(len(steps))}
        unit_bits, unit_gammas, unit_dims = green_scored, gammas, lists.dims(tokens).cpu()
        shown_bits, shown_gammas, shown_vocab = green_scored, gammas, vocab
        if bigram and steps:
            prev = torch.tensor([ids[t - 2] if t >= 2 else 0 for t in steps], dtype=torch.long)
            again_bits = lists.contains_repeat(tokens, prev).cpu()
            again_gammas = lists.repeat_fraction().cpu()
            order = sorted([(i, False) for i in range(len(steps))]
                           + [(i, True) for i, t in enumerate(steps) if t >= 2])  # fmt: skip
            rows = {u: r for r, u in enumerate(order)}
            pick = torch.tensor([i for i, _ in order])
            again = torch.tensor([a for _, a in order])[:, None]
            unit_bits = torch.where(again, again_bits[pick], green_scored[pick])
            unit_gammas = torch.where(again, again_gammas[pick], gammas[pick])
            unit_dims = torch.where(again, lists.repeat_dims(tokens, prev).cpu()[pick],
                                    unit_dims[pick])  # fmt: skip
            seen = torch.tensor([ids[t - 1] in ids[: t - 1] for t in steps])[:, None]
            shown_bits = torch.where(seen, again_bits, green_scored)
            shown_gammas = shown_vocab = torch.where(seen, again_gammas, vocab)  # vocab null

        def units(span: tuple[int, int]) -> list[int]:
            found = [(i, False) for i in tested_indices(ids, steps, span, *rule)]
            if bigram:
                found += [(i, True) for i in repeat_indices(ids, steps, span)]
            return [rows[u] for u in sorted(found)]

        scored = [False] * T
        green = [False] * T
        green_bits = [0] * T
        tested = [False] * T
        gamma: list[float | None] = [None] * T
        vocab_green: list[float | None] = [None] * T
        for i, t in enumerate(steps):
            scored[t - 1] = True
            green[t - 1] = bool(shown_bits[i, 0])
            green_bits[t - 1] = int(shown_bits[i].sum())
            gamma[t - 1] = float(shown_gammas[i, 0])
            vocab_green[t - 1] = float(shown_vocab[i, 0])
        chosen = units((0, T))
        step_of = {r: i for (i, _), r in rows.items()}
        dims = unit_dims.tolist()
        flat_bits, flat_gammas = unit_bits.reshape(-1, 1), unit_gammas.reshape(-1, 1)
        width = unit_bits.shape[1]  # L
        bits = first_reads(dims, chosen, cfg.outputs_once)  # flat indices row * L + list
        for r in {b // width for b in bits}:
            tested[steps[step_of[r]] - 1] = True
        test_green = flat_bits[bits].flatten().tolist()
        test_gamma = flat_gammas[bits].flatten().tolist()
        z, p = green_test(test_green, test_gamma)
        window_p, window = None, None
        if cfg.window_sizes:
            spans = window_spans(T, cfg.window_sizes)[1:]  # after the whole text, done above
            members = [bits] + [first_reads(dims, units(span), cfg.outputs_once) for span in spans]
            window_p, best = windowed_test(flat_bits.tolist(), flat_gammas.tolist(), members)
            if members[best]:
                first, last = members[best][0] // width, members[best][-1] // width
                window = [steps[step_of[first]], steps[step_of[last]]]
        num_scored = len(steps)
        num_green = int(shown_bits[:, 0].sum()) if steps else 0
        entropy = [None if math.isnan(h) else float(h) for h in gate.entropy.tolist()]
        return DetectionResult(
            score=paper_score(cfg.scaling, cfg.strength, shown_bits),
            green_fraction=num_green / num_scored if num_scored else 0.0,
            num_scored=num_scored,
            num_tokens=T,
            awr=num_scored / T if T else 0.0,
            num_tested=sum(tested),
            num_green_tested=int(sum(test_green)),
            expected_green=float(sum(test_gamma)),
            z_score=z,
            p_value=p,
            is_watermarked=bool((p if window_p is None else window_p) < cfg.target_fpr),
            window_p_value=window_p,
            window=window,
            reason=None if num_scored else "no scored tokens",
            token_ids=list(ids),
            tokens=pieces,
            scored=scored,
            green=green,
            green_bits=green_bits,
            tested=tested,
            entropy=entropy,
            gamma=gamma,
            vocab_green=vocab_green,
        )
