"""Watermark stealing: a realistic spoofing attack, run against every watermarked method.

The attacker:

1. queries the watermarked model for ``steal_texts`` texts on diverse prompts, and writes as many
   with its own unwatermarked model on the same prompts;
2. estimates which tokens the watermark favours, per context of width c (c = 0: one context; c =
   1: the previous token): the log ratio of a token's smoothed frequency in the watermarked texts
   to its frequency in its own texts, kept where it is positive. A context seen fewer than
   ``min_context`` times in the watermarked texts falls back to the context-free estimate
   (:class:`FavouredTokens`);
3. writes ``steal_prompts`` texts on other prompts with its own model, adding ``steal_boost``
   times the estimate to each token's logit (:class:`StealingProcessor`), and submits them to
   the method's detector. Spoof success = share flagged at p < 0.01.

Each method is attacked with both widths; the report gives both and the attacker's best. The
attacker's model is the generator itself, unwatermarked: the strongest attacker, whose own text
has the same token statistics as the watermarked model apart from the watermark.
"""

from __future__ import annotations

import logging
import math
from collections import Counter, defaultdict
from collections.abc import Sequence

import torch
from transformers import LogitsProcessor

from evaluation.detection import MethodDetection
from evaluation.methods import Method

logger = logging.getLogger(__name__)


class FavouredTokens:
    """The attacker's estimate of how much the watermark favours each token in a context.

    Args:
        marked: Token ids of the watermarked texts (generated continuations).
        own: Token ids of the attacker's own texts.
        vocab_size: V.
        width: Context width c (0 or 1).
        min_context: Watermarked observations a context needs before its own estimate is used.
    """

    def __init__(
        self,
        marked: Sequence[Sequence[int]],
        own: Sequence[Sequence[int]],
        vocab_size: int,
        width: int,
        min_context: int = 8,
    ) -> None:
        self.vocab_size, self.width, self.min_context = vocab_size, width, min_context
        self.free = self._scores(self._counts(marked), self._counts(own))
        self._by_context: dict[tuple[int, ...], torch.Tensor] = {}
        if width:
            self._marked = self._context_counts(marked)
            self._own = self._context_counts(own)

    @staticmethod
    def _counts(ids_list: Sequence[Sequence[int]]) -> Counter:
        return Counter(i for ids in ids_list for i in ids)

    def _context_counts(self, ids_list: Sequence[Sequence[int]]) -> dict[tuple, Counter]:
        out: dict[tuple, Counter] = defaultdict(Counter)
        c = self.width
        for ids in ids_list:
            for i in range(c, len(ids)):
                out[tuple(ids[i - c : i])][ids[i]] += 1
        return out

    def _scores(self, marked: Counter, own: Counter) -> torch.Tensor:
        """Float (V,): max(0, log of the add-one smoothed frequency ratio marked / own)."""
        n_marked, n_own = sum(marked.values()), sum(own.values())
        scores = torch.zeros(self.vocab_size)
        for token, count in marked.items():
            ratio = (count + 1) / (n_marked + self.vocab_size)
            ratio /= (own.get(token, 0) + 1) / (n_own + self.vocab_size)
            scores[token] = max(0.0, math.log(ratio))
        return scores

    def scores(self, context_ids: Sequence[int]) -> torch.Tensor:
        """Float (V,) estimate for the next token after ``context_ids``."""
        if not self.width or len(context_ids) < self.width:
            return self.free
        ctx = tuple(int(i) for i in context_ids[-self.width :])
        seen = self._marked.get(ctx)
        if seen is None or sum(seen.values()) < self.min_context:
            return self.free
        if ctx not in self._by_context:
            self._by_context[ctx] = self._scores(seen, self._own.get(ctx, Counter()))
        return self._by_context[ctx]


class StealingProcessor(LogitsProcessor):
    """Adds ``boost`` times the estimate to each row's logits (the context is the row's last
    ids, prompt included, as the watermarks that seed from it see them)."""

    def __init__(self, favoured: FavouredTokens, boost: float) -> None:
        self.favoured, self.boost = favoured, boost

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        out = scores.clone()
        for row in range(scores.shape[0]):
            est = self.favoured.scores(input_ids[row].tolist()).to(scores.device, scores.dtype)
            out[row, : est.shape[0]] += self.boost * est
        return out


class SpoofMethod(Method):
    """The attacker's generator for one target method and width (a :class:`Method` so that the
    evaluation caches its generations)."""

    def __init__(self, target: Method, favoured: FavouredTokens, boost: float, tag: str) -> None:
        self.name = f"spoof-{target.name}-c{favoured.width}"
        self.key = f"spoof|{target.key}|c{favoured.width}|b{boost}|{tag}"
        self.favoured, self.boost = favoured, boost

    def processor(self) -> LogitsProcessor:
        return StealingProcessor(self.favoured, self.boost)


def prompt_units(
    all_units: Sequence[dict], first: int, steal: int, spoof: int
) -> tuple[list, list]:
    """The attacker's prompts: ``steal`` units to learn from, then ``spoof`` units to write on.

    They start after the first ``first`` units (the frontier's) and go on from the corpus's
    start past its end, so no spoofed prompt is one the attacker saw a watermarked text for.
    Only a corpus too small for both repeats prompts; each copy gets its own id (``#s<i>``).
    """
    pool = list(all_units[first:]) + list(all_units[:first])
    if steal + spoof > len(pool):
        logger.warning(
            "stealing: %d prompts wanted, %d in the corpus; prompts repeat",
            steal + spoof,
            len(pool),
        )
    units = [
        {**pool[i % len(pool)], "id": f"{pool[i % len(pool)]['id']}#s{i}"}
        for i in range(steal + spoof)
    ]
    return units[:steal], units[steal:]


def steal_and_spoof(ev, targets: Sequence[str]) -> dict:
    """Runs the attack on each method of ``targets``; returns per method the flag rates."""
    cfg, tokens = ev.cfg.spoofing, ev.cfg.spoofing.tokens
    first = max(ev.cfg.frontier.prompts, ev.cfg.texts.prompts)
    steal_units, spoof_units = prompt_units(ev.all_units, first, cfg.steal_texts, cfg.steal_prompts)
    plain = ev.method("unwatermarked")
    own = [g["ids"] for g in ev.generations(plain, steal_units, tokens, tag="steal|")]
    out: dict = {
        "steal_texts": len(steal_units),
        "spoof_texts": len(spoof_units),
        "tokens": tokens,
        "boost": cfg.steal_boost,
    }
    clean = [g["text"] for g in ev.generations(plain, spoof_units, tokens, tag="steal|")]
    for name in targets:
        target = ev.method(name)
        marked = [g["ids"] for g in ev.generations(target, steal_units, tokens, tag="steal|")]
        row = {"control": _flagged(ev.detections(target, clean))}
        for width in (0, 1):
            favoured = FavouredTokens(marked, own, ev.vocab_size, width)
            spoof = SpoofMethod(target, favoured, cfg.steal_boost, f"n{len(marked)}")
            texts = [g["text"] for g in ev.generations(spoof, spoof_units, tokens)]
            row[f"width{width}"] = _flagged(ev.detections(target, texts))
        row["best"] = max(row["width0"], row["width1"])
        out[name] = row
    return out


def _flagged(detections: list[MethodDetection]) -> float:
    return sum(d.p_value < 0.01 for d in detections) / max(1, len(detections))
