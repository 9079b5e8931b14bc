"""The sentence layer of a loaded watermark: which candidate sentence generation keeps, and the
sentence test detection adds (the rules are in :mod:`watermark.core.sentences`).

Both read a sentence the same way: the continuation is cut by
:func:`~watermark.core.sentences.sentence_spans`, a sentence is embedded alone by the watermark's
SE and mapped by its SM, and its group comes from the sentence before it in the same text (group
0 for the first). So the sentence a candidate ends is scored in generation exactly as detection
will test it, as long as the text after it starts with whitespace.
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
    sentence_test,
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
        )

    def outputs(self, sentences: Sequence[str]) -> torch.Tensor:
        """Mapper outputs v (N, D) of sentences embedded one by one."""
        if not sentences:
            return torch.zeros(0, self.semantic.num_dims)
        return self.semantic.outputs(self.semantic.embed(list(sentences))).float().cpu()

    def _read(self, text: str) -> tuple[list[tuple[int, int, bool]], torch.Tensor, torch.Tensor]:
        """A text's sentence spans, their outputs (N, D) and groups (N,)."""
        spans = sentence_spans(text)
        v = self.outputs([text[a:b] for a, b, _ in spans])
        previous = torch.cat([v[:1] * 0, v[:-1]]) if len(spans) else v
        groups = self.key.groups(v, previous)
        if len(spans):
            groups[0] = 0  # the first sentence has no predecessor in the text
        return spans, v, groups

    def choose(self, continuations: Sequence[Sequence[str]]) -> list[int]:
        """Per prompt, the index of the candidate continuation whose last sentence scores best
        (ties: the first sampled). Each candidate is the whole continuation so far."""
        lasts, befores, owners = [], [], []
        for p, candidates in enumerate(continuations):
            for text in candidates:
                spans = sentence_spans(text) or [(0, 0, False)]
                a, b, _ = spans[-1]
                lasts.append(text[a:b])
                befores.append(text[spans[-2][0] : spans[-2][1]] if len(spans) > 1 else None)
                owners.append(p)
        v = self.outputs(lasts)
        previous = self.outputs([s or "" for s in befores])
        groups = self.key.groups(v, previous)
        groups[torch.tensor([s is None for s in befores], dtype=torch.bool)] = 0
        scores = self.key.scores(v, groups)
        best, start = [], 0
        for candidates in continuations:
            chunk = scores[start : start + len(candidates)]
            best.append(int(torch.argmax(chunk)))  # the first maximum
            start += len(candidates)
        return best

    def test(self, text: str) -> SentenceTest:
        """The sentence test of ``text``: its distinct complete sentences (first occurrence of
        each sentence in its group)."""
        spans, v, groups = self._read(text)
        seen, rows = set(), []
        for i, (a, b, complete) in enumerate(spans):
            if complete and (text[a:b], int(groups[i])) not in seen:
                seen.add((text[a:b], int(groups[i])))
                rows.append(i)
        if not rows:
            return SentenceTest(spans=[])
        index = torch.tensor(rows)
        hits = self.key.hits(v[index], groups[index])
        positive = v[index][:, self.key.dims] > 0
        return SentenceTest(
            p_value=sentence_test(hits, groups[index], positive),
            hits=int(hits.sum()),
            expected=len(rows) * self.key.bits / 2,
            num_sentences=len(rows),
            spans=[[spans[i][0], spans[i][1], int(h.sum())] for i, h in zip(rows, hits)],
        )

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
