"""`EncoderDataModule`: the sentence layer's data as texts, for training the sentence encoder.

The rows are `SentenceDataModule`'s (rewrite pairs aligned by the frozen embedder, candidate
pools, human sentences; train and val splits only), but a step yields the rows' indices into
:attr:`EncoderDataModule.texts` instead of frozen embeddings, so that the system embeds them
with the encoder being trained. ``train_kinds`` names the rewrite kinds training reads; the
others are kept out of training (validation still scores every kind, so the kept-out kind
measures what a rewrite nobody trained for keeps).
"""

from __future__ import annotations

import logging

import torch

from mapper.sentence_data import SentenceDataModule, Split, Steps

log = logging.getLogger(__name__)


class TextSteps(Steps):
    """``Steps`` whose batches are rows of :attr:`EncoderDataModule.texts` (Long tensors)."""

    def draw(self, gen: torch.Generator | None) -> dict[str, torch.Tensor]:
        dm, split = self.dm, self.split
        pick = lambda n, k: torch.randint(n, (k,), generator=gen).tolist()  # noqa: E731
        pools = [split.pools[i] for i in pick(len(split.pools), dm.pools_per_batch)]
        pairs = dm.draw_pairs(split, pick)
        rows = [split.sentences[i] for i in pick(len(split.sentences), dm.sentences_per_batch)]
        long = lambda xs: torch.tensor(xs, dtype=torch.long)  # noqa: E731
        return {
            "rows_pool": long([r for p in pools for r in p]),
            "pool": long([k for k, p in enumerate(pools) for _ in p]),
            "rows_a": long([a for a, _ in pairs]),
            "rows_b": long([b for _, b in pairs]),
            "rows": long(rows),
        }


class EncoderDataModule(SentenceDataModule):
    """`SentenceDataModule`'s rows as text indices (module docstring).

    Args:
        train_kinds: rewrite kinds whose pairs training reads (``None``: every kind); e.g.
            ``[forced, paraphrase]`` keeps the round-trip rewrites out.
        max_pool_candidates: candidates of a pool a step reads (the first ones).
        rewrite_share: the share of a step's pairs drawn from the seed's rewrites, the rest from
            the corpus's augmentations (named ``corpus_<kind>`` here); ``None``: all pairs
            alike (the corpus's then outnumber the rewrites': 1,323 to 740 in the train split).
        **rest: `SentenceDataModule`'s arguments.
    """

    steps_class = TextSteps

    def __init__(
        self,
        train_kinds: list[str] | None = None,
        max_pool_candidates: int = 16,
        rewrite_share: float | None = None,
        **rest,
    ) -> None:
        super().__init__(**rest)
        self.save_hyperparameters()
        self.train_kinds = list(train_kinds) if train_kinds else None
        self.max_pool_candidates = max_pool_candidates
        if rewrite_share is not None and not 0 <= rewrite_share <= 1:
            raise ValueError(f"rewrite_share must be in [0, 1], got {rewrite_share}")
        self.rewrite_share = rewrite_share

    def setup(self, stage: str | None = None) -> None:
        """The parent's rows, the texts they index, and training pairs of ``train_kinds``."""
        if self.texts:
            return
        super().setup(stage)
        for split in self.splits.values():  # name the corpus's pairs apart from the rewrites'
            start = split.corpus_from
            split.kinds[start:] = [f"corpus_{k}" for k in split.kinds[start:]]
        train = self.splits["train"]
        train.pools = [p[: self.max_pool_candidates] for p in train.pools]
        if self.train_kinds is not None:
            kept = [
                (p, k)
                for p, k in zip(train.pairs, train.kinds)
                if k in self.train_kinds or k.startswith("corpus_")
            ]
            if not kept:
                raise ValueError(f"no training pairs of kinds {self.train_kinds}")
            out = sorted(set(train.kinds) - set(self.train_kinds))
            log.info("training pairs of %s: %d (kept out: %s)", self.train_kinds, len(kept), out)
            train.pairs, train.kinds = [p for p, _ in kept], [k for _, k in kept]

    def draw_pairs(self, split: Split, pick) -> list[tuple[int, int]]:
        """A step's pairs (``pick(n, k)``: k indices below n), ``rewrite_share`` of them from
        the rewrites."""
        count = self.pairs_per_batch
        if self.rewrite_share is None:
            return [split.pairs[i] for i in pick(len(split.pairs), count)]
        ours = [p for p, k in zip(split.pairs, split.kinds) if not k.startswith("corpus_")]
        theirs = [p for p, k in zip(split.pairs, split.kinds) if k.startswith("corpus_")]
        n = round(count * self.rewrite_share) if theirs else count
        found = [ours[i] for i in pick(len(ours), n)] if ours else []
        return found + ([theirs[i] for i in pick(len(theirs), count - n)] if theirs else [])

    def val_rows(self, split: str = "val") -> list[int]:
        """Every text row the epoch-end metrics of ``split`` read (`eval_set`)."""
        part: Split = self.splits[split]
        rows = set(part.sentences)
        rows.update(r for pair in part.pairs for r in pair)
        rows.update(r for pool in part.pools for r in pool)
        return sorted(rows)

    def eval_set_with(self, emb: torch.Tensor, split: str = "val") -> dict:
        """`eval_set` of ``split`` read from embeddings ``emb`` (len(texts), E) of another
        encoder (the one being trained)."""
        frozen, self.emb = self.emb, emb
        try:
            return self.eval_set(split)
        finally:
            self.emb = frozen
