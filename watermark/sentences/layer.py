"""The sentence layer of a loaded watermark: which candidate sentence generation keeps, and the
sentence test detection adds (the rules are in :mod:`watermark.core.sentences`).

Both read a sentence the same way: the continuation is cut by
:func:`~watermark.core.sentences.sentence_spans`, a sentence is embedded alone by the layer's SE
and mapped by its SM, and its group comes from its own outputs or from the sentence before it in
the same text (group 0 for the first). So the sentence a candidate ends is scored in generation
exactly as detection will test it, as long as the text after it starts with whitespace.

The layer has one :class:`~watermark.core.sentences.SentenceKey` per key of the config:
generation keeps candidates under the first (the config's ``key``), and detection tests every
key that the token level tests (:meth:`SentenceLayer.verdict`), so key rotation covers both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from watermark.core.config import WatermarkConfig
from watermark.core.config_sections import Sentences
from watermark.core.sentences import (
    SentenceKey,
    SentenceTest,
    fisher,
    sentence_spans,
    test_sentences,
)
from watermark.detect.result import DetectionResult


class SentenceLayer:
    """The sentence keys of a config's keys over a semantic scorer's outputs.

    Args:
        semantic: Embeds sentences and maps them (``embed``, ``outputs``, ``num_dims``).
        settings: The config's ``sentences`` section (bits, candidates, keying, test).
        keys: The secret keys: the config's ``key`` first, then its ``old_keys``.
        target_fpr: The verdict's false-positive rate.
    """

    def __init__(
        self, semantic: object, settings: Sentences, keys: Sequence[str], target_fpr: float
    ) -> None:
        self.semantic = semantic
        self.candidates = int(settings.candidates)
        self.resample_every = int(settings.resample_every)
        self.stop_at = float(settings.stop_at)
        self.target_fpr = float(target_fpr)
        self.keys = [
            SentenceKey.of(
                k,
                semantic.num_dims,
                settings.bits,
                settings.context_bits,
                settings.keying,
                settings.test,
            )
            for k in keys
        ]

    @classmethod
    def of(cls, config: WatermarkConfig, semantic: object) -> SentenceLayer | None:
        """The sentence layer of ``config`` over ``semantic``, under every key the token level
        tests; ``None`` when the layer is off."""
        if not config.sentences.on:
            return None
        keys = config.secret_keys()
        return cls(semantic, config.sentences, keys, config.detection.target_fpr)

    @property
    def key(self) -> SentenceKey:
        """The key generation keeps candidates under (the config's ``key``)."""
        return self.keys[0]

    def outputs(self, sentences: Sequence[str]) -> torch.Tensor:
        """Mapper outputs v (N, D) of sentences embedded one by one."""
        if not sentences:
            return torch.zeros(0, self.semantic.num_dims)
        return self.semantic.outputs(self.semantic.embed(list(sentences))).float().cpu()

    def choose(self, continuations: Sequence[Sequence[str]]) -> list[int]:
        """Per prompt, the index of the candidate continuation whose last sentence scores best
        under :attr:`key` (ties: the first sampled). Each candidate is the whole continuation."""
        return [int(torch.argmax(s)) for s in self.scores(continuations)]  # the first max

    def scores(self, continuations: Sequence[Sequence[str]]) -> list[torch.Tensor]:
        """Per prompt, the scores (N,) under :attr:`key` of its candidate continuations' last
        sentences (a sentence still being written is scored as it stands)."""
        v, groups = self._last_sentences(continuations)
        found, start = [], 0
        for candidates in continuations:  # each prompt's candidates scored among themselves
            rows = slice(start, start + len(candidates))
            found.append(self.key.scores(v[rows], groups[rows]))
            start += len(candidates)
        return found

    def evidence(self, continuations: Sequence[str]) -> torch.Tensor:
        """Float (N,): the z of each continuation's last sentence in :attr:`key`'s test alone
        (:meth:`~watermark.core.sentences.SentenceKey.evidence`)."""
        return self.key.evidence(*self._last_sentences([continuations]))

    def _last_sentences(
        self, continuations: Sequence[Sequence[str]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Outputs v (M, D) and groups (M,) under :attr:`key` of the last sentences of every
        prompt's candidates, in order."""
        lasts, befores = [], []
        for candidates in continuations:
            for text in candidates:
                spans = sentence_spans(text) or [(0, 0, False)]
                a, b, _ = spans[-1]
                lasts.append(text[a:b])
                befores.append(text[spans[-2][0] : spans[-2][1]] if len(spans) > 1 else None)
        v = self.outputs(lasts)
        groups = self.key.groups(v, None)  # group 0, or each sentence's own
        if self.key.context_dims.numel() and not self.key.own:  # the previous: embed each once
            distinct = list(dict.fromkeys(s for s in befores if s is not None))
            found = dict(zip(distinct, self.outputs(distinct)))
            rows = [i for i, s in enumerate(befores) if s is not None]
            if rows:
                previous = torch.stack([found[befores[i]] for i in rows])
                groups[rows] = self.key.groups(v[rows], previous)
        return v, groups

    def tests(self, text: str) -> list[SentenceTest]:
        """The sentence test of ``text`` under each key (the outputs are computed once)."""
        spans = sentence_spans(text)
        v = self.outputs([text[a:b] for a, b, _ in spans])
        return [test_sentences(key, spans, text, v) for key in self.keys]

    def verdict(self, per_key: Sequence[DetectionResult], text: str) -> DetectionResult:
        """One verdict from the token-level results of each key (uncorrected) and the sentence
        tests of ``text``: per key, Fisher's combination of its token-level verdict p-value and
        its sentence p-value; the best key's, times the number of keys (Bonferroni, capped at
        1), is ``combined_p_value``, compared with ``target_fpr``. The token-level p-values
        reported are corrected the same way; ``key_p_values`` stay each key's token-level
        verdict p-value."""
        tests, k = self.tests(text), len(per_key)
        combined = [fisher([r.token_verdict_p_value, t.p_value]) for r, t in zip(per_key, tests)]
        best = min(range(k), key=combined.__getitem__)
        found, test = per_key[best], tests[best]
        window = found.window_p_value
        p = min(1.0, k * combined[best])
        return replace(
            found,
            p_value=min(1.0, k * found.p_value),
            window_p_value=None if window is None else min(1.0, k * window),
            key_index=best,
            key_p_values=[r.token_verdict_p_value for r in per_key],
            sentence_p_value=min(1.0, k * test.p_value),
            sentence_hits=test.hits,
            sentence_expected=test.expected,
            num_sentences=test.num_sentences,
            sentences=test.spans or [],
            combined_p_value=p,
            is_watermarked=p < self.target_fpr,
        )
