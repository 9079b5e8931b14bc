"""The decode machinery of the one decode loop (:mod:`watermark.generate.loop`): KV caches over a
batch of generator rows, the measurement model's stream, EOS blocking and sampling.

:class:`Rows` is a batch of generator rows being decoded. It holds the generator's KV cache
(:class:`Stream`, on :class:`~watermark.models.growing_cache.GrowingCache`) and the measurement
model's stream over ``[start] + S``, whose last logits give the gate entropies the processor reads
(:meth:`~watermark.generate.processor.AdaptiveWatermarkLogitsProcessor.step`). When the MM *is*
the generator, its rows can ride in the generator's own forward as B extra rows (``fuse``): one
call of 2B rows costs about what B rows cost, because a decoding step is bound by reading the
weights. A row fed a pad (it has ended) is masked out of attention, its position ids count only
real tokens, and it keeps the values that followed its last real token. :func:`block_eos` stops
an EOS before ``min_new_tokens``; :func:`draw` samples with torch's global RNG.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from watermark.core.measurement import cached_forward, entropy_from_logits
from watermark.models.growing_cache import GrowingCache


def last_logits(
    model: torch.nn.Module, cache: object, step_ids: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, object]:
    """Float logits (B, V) after the new ``step_ids`` (B, n) of rows whose mask so far is
    ``mask``, and the updated cache."""
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -step_ids.shape[1] :]
    out, cache = cached_forward(
        model,
        cache,
        input_ids=step_ids,
        attention_mask=mask,
        position_ids=positions,
        logits_to_keep=1,
    )
    return out.logits[:, -1].float(), cache


def draw(scores: torch.Tensor, do_sample: bool = True) -> torch.Tensor:
    """Next tokens (B,) of logits (B, V): sampled with torch's global RNG, or greedy."""
    if do_sample:
        return torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1)
    return scores.argmax(-1)


def block_eos(scores: torch.Tensor, eos: torch.Tensor, rows: slice = slice(None)) -> None:
    """Sets the EOS logits of ``rows`` of ``scores`` (B, V) to -inf, in place (rows that have
    not reached ``min_new_tokens``)."""
    if len(eos):
        scores[rows, eos] = float("-inf")


class Stream:
    """One model's KV cache over a batch of rows: each step feeds one id per row, masked out of
    attention where it is a pad; a row fed a pad keeps what ``reduce`` made of the logits after
    its last real id."""

    def __init__(
        self,
        model: torch.nn.Module,
        feed: torch.Tensor,
        mask: torch.Tensor,
        reduce: Callable[[torch.Tensor], torch.Tensor] = lambda logits: logits,
    ) -> None:
        self.model, self.feed, self.mask, self.reduce = model, feed, mask, reduce
        self.cache, self.last = GrowingCache(), None

    def step(self) -> torch.Tensor:
        """(B, ...) values after each row's last real id."""
        logits, self.cache = last_logits(self.model, self.cache, self.feed, self.mask)
        fresh = self.reduce(logits)
        fed = self.mask[:, -1].bool().view(-1, *[1] * (fresh.dim() - 1))
        self.last = fresh if self.last is None else torch.where(fed, fresh, self.last)
        return self.last

    def advance(self, ids: torch.Tensor, real: torch.Tensor) -> None:
        """Ids (B,) to feed next, ``real`` (B,) false where one is a pad."""
        self.feed = ids[:, None]
        self.mask = torch.cat([self.mask, real.long()[:, None]], dim=1)

    def select(self, index: torch.Tensor) -> None:
        """Row i becomes row ``index[i]`` (copies and drops rows)."""
        self.cache.reorder_cache(index)
        self.feed, self.mask, self.last = self.feed[index], self.mask[index], self.last[index]


class Rows:
    """B generator rows (left-padded prompts ``ids``, ``mask``, both (B, P)) and, with an MM
    of the generator's tokenizer (``mm``), the MM's rows over ``[start] + S``: in the generator's
    forward with ``fuse`` (the MM is the generator), else in a stream of the MM's own."""

    def __init__(self, model, ids: torch.Tensor, mask: torch.Tensor, mm=None, fuse: bool = False):
        self.size, self.fused = ids.shape[0], bool(mm is not None and fuse)
        self.mm_stream = None
        if self.fused:  # the MM's rows hold only its start token, right-aligned
            mm_ids, mm_mask = torch.full_like(ids, mm.start_id), torch.zeros_like(mask)
            mm_mask[:, -1] = 1
            ids, mask = torch.cat([ids, mm_ids]), torch.cat([mask, mm_mask])
        elif mm is not None:
            starts = torch.full((self.size, 1), mm.start_id, device=mm.device)
            self.mm_stream = Stream(mm.model, starts, torch.ones_like(starts), entropy_from_logits)
        self.stream = Stream(model, ids, mask)

    def step(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (B, V) after each row's last real token, and the MM's entropies (B,) on the
        CPU (``None`` without an MM stream: the processor then runs the MM itself)."""
        logits = self.stream.step()
        if self.fused:
            return logits[: self.size], entropy_from_logits(logits[self.size :]).cpu()
        if self.mm_stream is not None:
            return logits, self.mm_stream.step().float().cpu()
        return logits, None

    def advance(self, tokens: torch.Tensor, real: torch.Tensor) -> None:
        """Feeds ``tokens`` (B,), pads where ``real`` (B,) is false, to every stream."""
        if self.fused:
            tokens, real = torch.cat([tokens, tokens]), torch.cat([real, real])
        self.stream.advance(tokens, real.to(tokens.device))
        if self.mm_stream is not None:
            device = self.mm_stream.mask.device
            self.mm_stream.advance(tokens.to(device), real.to(device))

    def select(self, index: Sequence[int]) -> None:
        """Row i becomes row ``index[i]`` in every stream (copies and drops rows)."""
        self.size = len(index)
        rows = torch.tensor(list(index), device=self.stream.mask.device)
        self.stream.select(
            torch.cat([rows, rows + self.stream.mask.shape[0] // 2]) if self.fused else rows
        )
        if self.mm_stream is not None:
            self.mm_stream.select(rows.to(self.mm_stream.mask.device))
