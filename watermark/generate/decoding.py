"""The one token-level decode path: watermarked sampling step by step, outside ``model.generate``.

:class:`Rows` is a batch of generator rows being decoded. It holds the generator's KV cache
(:class:`Stream`, on :class:`~watermark.models.growing_cache.GrowingCache`) and the measurement
model's stream over ``[start] + S``, whose last logits give the gate entropies the processor reads
(:meth:`~watermark.generate.processor.AdaptiveWatermarkLogitsProcessor.step`). When the MM *is*
the generator, its rows can ride in the generator's own forward as B extra rows (``fuse``): one
call of 2B rows costs about what B rows cost, because a decoding step is bound by reading the
weights. A row fed a pad (it has ended) is masked out of attention, its position ids count only
real tokens, and it keeps the values that followed its last real token. :func:`block_eos` stops
an EOS before ``min_new_tokens``; :func:`draw` samples with torch's global RNG.

Two loops run on it, and on nothing else: :func:`fused_generate` (plain watermarked generation,
what ``model.generate`` with the processor does, step by step) and the sentence layer's
candidate loop (:mod:`watermark.sentences.decoding`), which also reorders rows
(:meth:`Rows.select`). The processor inside ``model.generate`` stays the reference they are
checked against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from watermark.core.measurement import cached_forward, entropy_from_logits
from watermark.models.growing_cache import GrowingCache

# generation-config fields that would add logits processors to ``model.generate``, at their
# quiet values: a model whose config sets any of them is not decoded here
QUIET = {
    "repetition_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "bad_words_ids": None,
    "forced_bos_token_id": None,
    "forced_eos_token_id": None,
    "suppress_tokens": None,
    "begin_suppress_tokens": None,
    "sequence_bias": None,
    "renormalize_logits": False,
}


def adds_no_processors(model: torch.nn.Module) -> bool:
    """Whether the model's ``generation_config`` leaves every field of :data:`QUIET` quiet, so
    ``model.generate`` would add no logits processor of its own."""
    config = getattr(model, "generation_config", None)
    return all(getattr(config, k, v) in (v, None) for k, v in QUIET.items())


def can_fuse(model: torch.nn.Module, processor: object, max_new_tokens: int, extra: dict) -> bool:
    """Whether a plain generation can run in :func:`fused_generate` (else ``model.generate``)."""
    core = getattr(processor, "core", None)
    if core is None or set(extra) - {"min_new_tokens"}:
        return False
    mm = core.measurement
    return (
        mm.model is model
        and mm.same_tokenizer
        and max_new_tokens < mm.window
        and adds_no_processors(model)
    )


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


@torch.inference_mode()
def fused_generate(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    processor: object,
    max_new_tokens: int,
    do_sample: bool,
    pad_token_id: int,
    eos_token_ids: Sequence[int],
    min_new_tokens: int = 0,
) -> torch.Tensor:
    """Prompt + continuation ids (B, P + n), as ``model.generate`` with ``processor`` returns
    them, with the MM's rows in the generator's forward (:func:`can_fuse` says when).

    Args:
        model: The generator, which is also the processor's MM.
        input_ids: Long (B, P): left-padded prompts.
        attention_mask: Long (B, P).
        processor: Our watermark processor.
        max_new_tokens: Steps at most (fewer if every row has ended).
        do_sample: Sample with torch's global RNG (else greedy).
        pad_token_id: Filler after a row's EOS.
        eos_token_ids: Ids that end a row.
        min_new_tokens: EOS is blocked before this many new tokens.
    """
    rows = Rows(model, input_ids, attention_mask, processor.core.measurement, fuse=True)
    eos = torch.tensor(list(eos_token_ids), device=input_ids.device)
    unfinished = torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    sequence = input_ids
    processor.reset()
    for step in range(max_new_tokens):
        scores, entropies = rows.step()
        if step < min_new_tokens:
            block_eos(scores, eos)
        tokens = draw(processor.step(sequence, scores, entropies), do_sample)
        tokens = torch.where(unfinished, tokens, torch.full_like(tokens, pad_token_id))
        sequence = torch.cat([sequence, tokens[:, None]], dim=1)
        if len(eos):
            unfinished &= ~torch.isin(tokens, eos)
        if not unfinished.any():
            break
        rows.advance(tokens, torch.ones_like(unfinished))
    return sequence
