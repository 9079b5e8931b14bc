"""Generation with the sentence layer: N candidate sentences per step, the best one kept.

For each prompt, sentence after sentence: ``model.generate`` samples N candidates of the next
sentence in one batch of N rows, each with the token-level watermark on (the processor is told
where the prompt ends, ``AdaptiveWatermarkLogitsProcessor.start_at``, so its steps count from the
prompt as in plain generation). A row stops at the token that ends
a sentence (:class:`~watermark.sentences.spans.SentenceEnds`), at an EOS, or after
``max_sentence_tokens``. :meth:`~watermark.sentences.layer.SentenceLayer.rank` puts first the
candidate whose sentence scores best, which is kept, and the next round continues from it, until
``max_new_tokens`` or an EOS. The candidates of all prompts of a round are scored together.

That is the reference path: the prompts go one at a time through ``model.generate`` (the N
rows of a prompt share their length, which the processor's step count needs), and each sentence
prefills the prefix again (:func:`sample_by_sentences`). The decode loop,
:mod:`watermark.sentences.decoding`, runs every prompt's candidates in one loop and draws, for a
single prompt, the same tokens; it is used unless the call passes ``model.generate`` arguments or
the model's ``generation_config`` adds logits processors of its own
(:func:`watermark.generate.decoding.adds_no_processors`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import LogitsProcessorList, StoppingCriteriaList

from watermark.base import UserError
from watermark.core.text import decode_ids
from watermark.generate.decoding import adds_no_processors
from watermark.generate.generation import Generation, eos_ids, warpers_off
from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor
from watermark.sentences.decoding import Limits, decode_by_sentences, kept_rows
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.spans import SentenceEnds

MAX_SENTENCE_TOKENS = 64  # a candidate that has not ended by then is cut (and scored as it is)


def sample_candidates(
    model: torch.nn.Module,
    rows: list[list[int]],
    prompt_length: int,
    processor: AdaptiveWatermarkLogitsProcessor,
    ends: SentenceEnds,
    settings: dict,
) -> list[list[int]]:
    """One ``model.generate`` call over ``rows`` (prompt + chosen text, all of one length): each
    row's new ids up to its first end (``settings`` holds the token limits and the rest)."""
    ids = torch.tensor(rows, device=next(model.parameters()).device)
    processor.start_at(prompt_length)
    out = model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        logits_processor=LogitsProcessorList([processor]),
        stopping_criteria=StoppingCriteriaList([ends]),
        do_sample=True,
        pad_token_id=ends.pad_id,
        **{**warpers_off(), **settings},
    )
    return [ends.cut(row) for row in out[:, ids.shape[1] :].tolist()]


@torch.inference_mode()
def generate_by_sentences(
    model: torch.nn.Module,
    tokenizer: object,
    prompts: Sequence[str],
    processor: AdaptiveWatermarkLogitsProcessor,
    layer: SentenceLayer,
    max_new_tokens: int = 200,
    seed: int | None = None,
    max_sentence_tokens: int = MAX_SENTENCE_TOKENS,
    min_new_tokens: int = 0,
    **generate_kwargs: object,
) -> list[Generation]:
    """One :class:`~watermark.generate.generation.Generation` per prompt, chosen sentence by
    sentence among ``layer.candidates`` samples (module docstring); no EOS before
    ``min_new_tokens``. The decode loop runs it, unless ``generate_kwargs`` (for every
    ``model.generate`` call) or the model's own processors select the reference path."""
    limits = Limits(max_new_tokens, max_sentence_tokens, min_new_tokens)
    if seed is not None:
        torch.manual_seed(seed)
    if adds_no_processors(model) and not generate_kwargs:
        stop = eos_ids(model, tokenizer)
        ends = SentenceEnds(tokenizer, stop)
        return decode_by_sentences(model, tokenizer, prompts, processor, layer, ends, stop, limits)
    if layer.resample_every:
        raise UserError(
            "sentences.resample_every runs in the decode loop only: leave out the "
            "model.generate arguments and clear the generation_config's own processors"
        )
    return sample_by_sentences(model, tokenizer, prompts, processor, layer, limits, generate_kwargs)


def sample_by_sentences(
    model: torch.nn.Module,
    tokenizer: object,
    prompts: Sequence[str],
    processor: AdaptiveWatermarkLogitsProcessor,
    layer: SentenceLayer,
    limits: Limits,
    generate_kwargs: dict | None = None,
) -> list[Generation]:
    """The reference path (module docstring): each prompt's candidates of a round from one
    ``model.generate`` call, with ``generate_kwargs``; the caller seeds torch's RNG."""
    stop = eos_ids(model, tokenizer)
    ends = SentenceEnds(tokenizer, stop)
    prompt_ids = [tokenizer(p).input_ids for p in prompts]
    chosen: list[list[int]] = [[] for _ in prompts]
    steps: list[list[int]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    while live := [
        i for i, d in enumerate(done) if not d and len(chosen[i]) < limits.max_new_tokens
    ]:
        rounds = []
        for i in live:
            rows = [prompt_ids[i] + chosen[i]] * layer.candidates
            settings = {**round_limits(limits, len(chosen[i])), **(generate_kwargs or {})}
            candidates = sample_candidates(
                model, rows, len(prompt_ids[i]), processor, ends, settings
            )
            rounds.append((i, candidates, processor.record))
        heads, cands = [chosen[i] for i, _, _ in rounds], [c for _, c, _ in rounds]
        for (i, candidates, record), best in zip(
            rounds, kept_rows(layer, tokenizer, heads, cands, stop)
        ):
            before, kept = len(chosen[i]), candidates[best]
            if processor.keep_record:
                steps[i] += [s for s in record.watermarked_steps(best) if s <= before + len(kept)]
            chosen[i] += kept
            done[i] = not kept or kept[-1] in stop
    return [
        kept_text(tokenizer, p, ids, marked, stop) for p, ids, marked in zip(prompts, chosen, steps)
    ]


def round_limits(limits: Limits, done: int) -> dict[str, int]:
    """``model.generate``'s token limits for a round after ``done`` tokens."""
    budget = min(limits.max_sentence_tokens, limits.max_new_tokens - done)
    return {
        "max_new_tokens": budget,
        "min_new_tokens": min(budget, max(0, limits.min_new_tokens - done)),
    }


def kept_text(tokenizer, prompt: str, ids: list[int], marked: list[int], stop) -> Generation:
    """The chosen text of a prompt up to its first EOS."""
    cut = next((j for j, t in enumerate(ids) if t in stop), len(ids))
    ids = ids[:cut]
    return Generation(prompt, decode_ids(tokenizer, ids), ids, [s for s in marked if s <= cut])
