"""Watermarked sampling with the measurement model fused into the generator's forward.

When the MM *is* the generator (the same model object, same tokenizer), its per-step forward
over ``[start] + S_{0:t-1}`` can ride in the generator's own forward as B extra rows: one call of
2B rows costs about what B rows cost, because a decoding step is bound by reading the weights.
The MM rows are left-padded to the prompt's length and masked, with their own position ids, so
they see exactly ``[start] + S_{0:t-1}``; their last logits give the gate entropies, which the
watermark processor reads instead of running the MM itself. Everything else (the processor, the
rule, the filters, sampling with torch's global RNG, EOS handling, ``min_new_tokens``) is what
``model.generate`` does, step by step.

Used by :func:`watermark.generation.generate` when :func:`can_fuse` allows it; otherwise that
function calls ``model.generate`` with the processor as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.core.measurement import cached_forward, entropy_from_logits
from watermark.core.mm_states import MMGenerationState

# generation-config fields that would add logits processors to ``model.generate``, at their
# quiet values: a model whose config sets any of them is not fused
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


class GivenEntropies(MMGenerationState):
    """The MM state of a fused generation: entropies computed by the fused forward."""

    def __init__(self, batch_size: int) -> None:
        self.values = torch.full((batch_size,), float("nan"))

    def entropies(self, gen: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        out = torch.full_like(self.values, float("nan"))
        out[list(rows)] = self.values[list(rows)]
        return out


def adds_no_processors(model: torch.nn.Module) -> bool:
    """Whether the model's ``generation_config`` leaves every field of :data:`QUIET` quiet, so
    ``model.generate`` would add no logits processor of its own."""
    config = getattr(model, "generation_config", None)
    return all(getattr(config, k, v) in (v, None) for k, v in QUIET.items())


def can_fuse(model: torch.nn.Module, processor: object, max_new_tokens: int, extra: dict) -> bool:
    """Whether a generation can run fused (else ``model.generate`` runs it)."""
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


def with_mm_rows(
    input_ids: torch.Tensor, attention_mask: torch.Tensor, start: int, pad_token_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids and mask (2B, P) of the doubled batch: the prompts (rows 0..B-1), then the MM's rows
    (B..2B-1), which hold only its start token, right-aligned."""
    mm_ids = torch.full_like(input_ids, pad_token_id)
    mm_ids[:, -1] = start
    mm_mask = torch.zeros_like(attention_mask)
    mm_mask[:, -1] = 1
    return torch.cat([input_ids, mm_ids]), torch.cat([attention_mask, mm_mask])


def last_logits(
    model: torch.nn.Module, cache: object, step_ids: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, object]:
    """Float logits (2B, V) after the new ``step_ids`` (2B, n) of the doubled batch whose mask
    so far is ``mask``, and the updated cache."""
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


def draw(scores: torch.Tensor, do_sample: bool) -> torch.Tensor:
    """Next tokens (B,) of logits (B, V): sampled with torch's global RNG, or greedy."""
    if do_sample:
        return torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1)
    return scores.argmax(-1)


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
    """Prompt + continuation ids (B, P + n), as ``model.generate`` returns them.

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
    batch, device = input_ids.shape[0], input_ids.device
    start = processor.core.measurement.start_id
    ids, mask = with_mm_rows(input_ids, attention_mask, start, pad_token_id)
    given = GivenEntropies(batch)
    processor.reset()
    processor.state_factory = lambda size: given
    eos = torch.tensor(list(eos_token_ids), device=device)
    unfinished = torch.ones(batch, dtype=torch.bool, device=device)
    sequence, cache, step_ids = input_ids, None, ids
    try:
        for step in range(max_new_tokens):
            logits, cache = last_logits(model, cache, step_ids, mask)
            given.values = entropy_from_logits(logits[batch:]).cpu()
            scores = logits[:batch]
            if step < min_new_tokens and len(eos):
                scores[:, eos] = float("-inf")
            scores = processor(sequence, scores)
            tokens = draw(scores, do_sample)
            tokens = torch.where(unfinished, tokens, torch.full_like(tokens, pad_token_id))
            sequence = torch.cat([sequence, tokens[:, None]], dim=1)
            if len(eos):
                unfinished &= ~torch.isin(tokens, eos)
            if not unfinished.any():
                break
            step_ids = torch.cat([tokens, tokens])[:, None]
            mask = torch.cat([mask, mask.new_ones(2 * batch, 1)], dim=1)
    finally:
        processor.state_factory = None
    return sequence
