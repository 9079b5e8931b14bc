"""The sentence layer of a loaded watermark: which candidate sentence generation keeps, and the
sentence test detection adds (the rules are in :mod:`watermark.core.sentences`).

Both read a sentence the same way: the continuation is cut by
:func:`~watermark.core.sentences.sentence_spans`, a sentence is embedded alone by the watermark's
SE and mapped by its SM, and its group comes from its own outputs or from the sentence before it
in the same text (group 0 for the first). So the sentence a candidate ends is scored in
generation exactly as detection will test it, as long as the text after it starts with
whitespace.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.core.scoring import WatermarkCore
from watermark.core.sentences import (
    SentenceKey,
    SentenceTest,
    fisher,
    sentence_spans,
    test_sentences,
)
from watermark.detection_result import DetectionResult


class SentenceLayer:
    """The sentence key of ``core``'s config (its ``key``; earlier keys are not tried)."""

    def __init__(self, core: WatermarkCore) -> None:
        cfg = core.config
        self.semantic = core.semantic
        self.candidates = int(cfg.sentence_candidates)
        self.target_fpr = float(cfg.target_fpr)
        self.key = SentenceKey.of(
            cfg.secret_keys()[0],
            self.semantic.num_dims,
            int(cfg.sentence_bits),
            int(cfg.sentence_context_bits),
            str(cfg.sentence_keying),
            str(cfg.sentence_test),
        )

    def outputs(self, sentences: Sequence[str]) -> torch.Tensor:
        """Mapper outputs v (N, D) of sentences embedded one by one."""
        if not sentences:
            return torch.zeros(0, self.semantic.num_dims)
        return self.semantic.outputs(self.semantic.embed(list(sentences))).float().cpu()

    def choose(self, continuations: Sequence[Sequence[str]]) -> list[int]:
        """Per prompt, the index of the candidate continuation whose last sentence scores best
        (ties: the first sampled). Each candidate is the whole continuation so far."""
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
        best, start = [], 0
        for candidates in continuations:  # each prompt's candidates scored among themselves
            rows = slice(start, start + len(candidates))
            best.append(int(torch.argmax(self.key.scores(v[rows], groups[rows]))))  # first max
            start += len(candidates)
        return best

    def test(self, text: str) -> SentenceTest:
        """The sentence test of ``text`` (:func:`~watermark.core.sentences.test_sentences`)."""
        spans = sentence_spans(text)
        return test_sentences(self.key, spans, text, self.outputs([text[a:b] for a, b, _ in spans]))

    def apply(self, result: DetectionResult, text: str) -> DetectionResult:
        """``result`` with the sentence test of ``text`` added and the verdict taken on the
        combined p-value (:func:`~watermark.core.sentences.fisher` of the token-level verdict
        p-value and the sentence p-value)."""
        if result.reason is not None:
            return result
        found = self.test(text)
        result.sentence_p_value = found.p_value
        result.sentence_hits = found.hits
        result.sentence_expected = found.expected
        result.num_sentences = found.num_sentences
        result.sentences = found.spans or []
        result.combined_p_value = fisher([result.token_verdict_p_value, found.p_value])
        result.is_watermarked = result.combined_p_value < self.target_fpr
        return result
