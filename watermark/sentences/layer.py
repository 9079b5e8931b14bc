"""The sentence layer of a loaded watermark: how generation ranks candidate sentences
(:meth:`SentenceLayer.rank`, the one choice, which :meth:`SentenceLayer.choose` applies to
outputs already computed) and the sentence tests detection reads (:meth:`SentenceLayer.tests`).

Both read a sentence the same way: the continuation is cut by
:func:`~watermark.sentences.spans.sentence_spans`, a sentence is embedded alone by the layer's SE
and mapped by its SM, and its group comes from its own outputs or from the sentence before it in
the same text (group 0 for the first). So the sentence a candidate ends is scored in generation
exactly as detection will test it, as long as the text after it starts with whitespace.

The layer has one :class:`~watermark.sentences.key.SentenceKey` per key of the config:
generation ranks candidates under the first (the config's ``key``), by their tanh score or,
with ``sentences.choice = "survival"``, by their z expected after a rewrite; detection tests
every key that the token level tests, so key rotation covers both (detection's verdict over
them is :func:`watermark.detect.verdict.with_sentences`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.config.sections import Sentences
from watermark.config.watermark_config import WatermarkConfig
from watermark.sentences.key import Previous, SentenceKey
from watermark.sentences.significance import SentenceTest, text_test
from watermark.sentences.spans import sentence_spans


class SentenceLayer:
    """The sentence keys of a config's keys over a semantic scorer's outputs.

    Args:
        semantic: Embeds sentences and maps them (``embed``, ``outputs``, ``num_dims``).
        settings: The config's ``sentences`` section (bits, candidates, keying, test).
        keys: The secret keys: the config's ``key`` first, then its ``old_keys``.
    """

    def __init__(self, semantic: object, settings: Sentences, keys: Sequence[str]) -> None:
        self.semantic = semantic
        self.candidates = int(settings.candidates)
        self.resample_every = int(settings.resample_every)
        self.choice = str(settings.choice)
        self.keys = SentenceKey.of_section(settings, keys, semantic.num_dims)

    @classmethod
    def of(cls, config: WatermarkConfig, semantic: object) -> SentenceLayer | None:
        """The sentence layer of ``config`` over ``semantic``, under every key the token level
        tests; ``None`` when the layer is off."""
        if not config.sentences.on:
            return None
        return cls(semantic, config.sentences, config.secret_keys())

    @property
    def key(self) -> SentenceKey:
        """The key generation keeps candidates under (the config's ``key``)."""
        return self.keys[0]

    def outputs(self, sentences: Sequence[str]) -> torch.Tensor:
        """Mapper outputs v (N, D) of sentences embedded one by one."""
        if not sentences:
            return torch.zeros(0, self.semantic.num_dims)
        return self.semantic.outputs(self.semantic.embed(list(sentences))).float().cpu()

    def choose(self, outputs: torch.Tensor, previous: Previous = None) -> list[int]:
        """The candidates whose last sentences have mapper outputs ``outputs`` (N, D), best
        first, as :meth:`rank` orders them (a round keeps the first): by the layer's ``choice``
        under :attr:`key` (:meth:`~watermark.sentences.key.SentenceKey.order`), each read after
        ``previous``, the outputs of the sentence before it (``None``: none, a text's first
        sentence; (D,): one for them all; (N, D) or a sequence with ``None``: one each).
        :meth:`rank` calls it per prompt; it serves on its own where the outputs are already
        computed."""
        return self.key.order(outputs, previous, self.choice)

    def rank(self, continuations: Sequence[Sequence[str]]) -> list[list[int]]:
        """Per prompt, the indices of its candidate continuations, best first: by the score
        under :attr:`key` (:meth:`~watermark.sentences.key.SentenceKey.scores`) of each one's
        last sentence, or by its z expected after a rewrite
        (:meth:`~watermark.sentences.key.SentenceKey.survival`) when the choice is
        ``survival``; a sentence still being written is scored as it stands; ties keep the
        sampled order. The one choice of the layer (:meth:`choose`, over each prompt's
        candidates): a round keeps the first, resampling copies the better half over the
        worse."""
        v, previous = self._last_sentences(continuations)
        found, start = [], 0
        for candidates in continuations:  # each prompt's candidates scored among themselves
            rows = slice(start, start + len(candidates))
            found.append(self.choose(v[rows], previous[rows]))
            start += len(candidates)
        return found

    def _last_sentences(
        self, continuations: Sequence[Sequence[str]]
    ) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """Outputs v (M, D) of the last sentences of every prompt's candidates, in order, and
        for each the outputs (D,) of the sentence before it where the key reads its group
        there (``None``: it has none, or the key does not read it)."""
        lasts, befores = [], []
        for candidates in continuations:
            for text in candidates:
                spans = sentence_spans(text) or [(0, 0, False)]
                a, b, _ = spans[-1]
                lasts.append(text[a:b])
                befores.append(text[spans[-2][0] : spans[-2][1]] if len(spans) > 1 else None)
        v = self.outputs(lasts)
        previous: list[torch.Tensor | None] = [None] * len(lasts)
        if self.key.context_dims.numel() and not self.key.own:  # the previous: embed each once
            distinct = list(dict.fromkeys(s for s in befores if s is not None))
            found = dict(zip(distinct, self.outputs(distinct)))
            previous = [None if s is None else found[s] for s in befores]
        return v, previous

    def tests(self, text: str) -> list[SentenceTest]:
        """The sentence test of ``text`` under each key (the outputs are computed once)."""
        spans = sentence_spans(text)
        v = self.outputs([text[a:b] for a, b, _ in spans])
        return [text_test(key, spans, text, v) for key in self.keys]
