"""Watermarked generation: prompts in, continuations out.

:func:`generate` tokenizes a batch of prompts with left padding, samples the continuations and
returns them decoded with :func:`watermark.core.text.decode_ids`, cut at the first EOS
(:func:`~watermark.generate.loop.cut_at_eos`). It is the one place that chooses among the four
paths: the token level, or with a sentence layer N candidates per sentence and the best kept
(:mod:`watermark.generate.rounds`); each in the one decode loop
(:func:`watermark.generate.loop.decode`) where :func:`loops` says so, else through
``model.generate``, the loop's reference (at the sentence layer,
:func:`~watermark.generate.per_prompt.sample_by_sentences`). Our watermark processor applies the
temperature and the sampling filters itself (in its rule's order); any other processor (a
baseline), or none, runs first and the temperature, top-k and top-p are passed after it as
explicit warpers, in transformers' order. The built-in warpers are switched off either way, so
the order does not depend on the transformers version.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import (
    LogitsProcessor,
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from watermark.base import UserError
from watermark.core.text import decode_ids
from watermark.generate.keep import MAX_SENTENCE_TOKENS
from watermark.generate.loop import Limits, adds_no_processors, cut_at_eos, decode_by_tokens
from watermark.generate.own_call import warpers_off
from watermark.generate.per_prompt import sample_by_sentences
from watermark.generate.rounds import decode_by_sentences
from watermark.sentences.layer import SentenceLayer

logger = logging.getLogger(__name__)


def check_prompts(prompts: Sequence[str]) -> None:
    """Raises ``ValueError`` unless every prompt is a string with some non-blank text."""
    if not prompts:
        raise UserError("no prompts given")
    for n, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            raise UserError(f"prompt {n} is a {type(prompt).__name__}, not a string")
        if not prompt.strip():
            raise UserError(
                f"prompt {n} is empty; the model needs some text to continue (a title or a "
                "first sentence)"
            )


@dataclass
class Generation:
    """One continuation.

    Attributes:
        prompt: The prompt text.
        text: The continuation only (decoded, unstripped).
        token_ids: Generated ids up to (excluding) the first EOS.
        watermarked_steps: 1-based steps that were watermarked (empty without a watermark).
    """

    prompt: str
    text: str
    token_ids: list[int]
    watermarked_steps: list[int]


def eos_ids(model: torch.nn.Module, tokenizer: object) -> list[int]:
    """EOS ids of the model's generation config and the tokenizer."""
    ids = set()
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in eos if isinstance(eos, list | tuple) else [eos]:
        if value is not None:
            ids.add(int(value))
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return sorted(ids)


@torch.inference_mode()
def generate(
    model: torch.nn.Module,
    tokenizer: object,
    prompts: Sequence[str],
    processor: LogitsProcessor | None,
    max_new_tokens: int = 200,
    top_k: int = 50,
    top_p: float = 0.9,
    temperature: float = 1.0,
    do_sample: bool = True,
    seed: int | None = None,
    layer: SentenceLayer | None = None,
    max_sentence_tokens: int | None = None,
    **generate_kwargs: object,
) -> list[Generation]:
    """One :class:`Generation` per prompt, in order, generated in one left-padded batch, on the
    path this function chooses (module docstring).

    Args:
        model: A causal LM.
        tokenizer: Its tokenizer.
        prompts: Prompt texts.
        processor: The watermark processor (ours, or any other ``LogitsProcessor``), or ``None``
            for unwatermarked text.
        max_new_tokens: Number of new tokens per prompt.
        top_k: Top-k after a baseline processor (0 disables; ours applies its config's).
        top_p: Nucleus mass after a baseline processor (1 disables; ours applies its config's).
        temperature: Divides the logits after a baseline processor, before top-k / top-p (1
            disables; ours applies its config's).
        do_sample: Sample (True) or greedy (the token level only).
        seed: Seed of torch's global RNG before sampling.
        layer: The sentence layer, with our processor: the text is chosen sentence by sentence
            among ``layer.candidates`` samples (``None``: the token level).
        max_sentence_tokens: With ``layer``, a sentence's token budget (default
            ``MAX_SENTENCE_TOKENS``); refused without a layer.
        generate_kwargs: Passed to ``model.generate`` (``min_new_tokens`` is kept on every
            path).
    """
    if layer is None and max_sentence_tokens is not None:
        raise UserError("max_sentence_tokens applies to the sentence layer, which is off here")
    enc, pad_id = encode_prompts(tokenizer, prompts, next(model.parameters()).device)
    processors = sampling_processors(processor, do_sample, temperature, top_k, top_p)
    if seed is not None:
        torch.manual_seed(seed)
    stop = eos_ids(model, tokenizer)
    least = int(generate_kwargs.get("min_new_tokens", 0))
    sentence_budget = max_sentence_tokens or MAX_SENTENCE_TOKENS
    limits = Limits(max_new_tokens, max_new_tokens if layer is None else sentence_budget, least)
    in_loop = loops(model, processor, layer, max_new_tokens, generate_kwargs)
    if layer is not None and in_loop:
        found = decode_by_sentences(model, tokenizer, prompts, enc, processor, layer, limits, stop)
    elif layer is not None:
        settings = {**warpers_off(), **generate_kwargs}
        found = sample_by_sentences(
            model, tokenizer, prompts, processor, layer, limits, stop, settings
        )
    elif in_loop:
        found = decode_by_tokens(model, prompts, enc, pad_id, processor, limits, stop, do_sample)
    else:
        settings = dict(max_new_tokens=max_new_tokens, pad_token_id=pad_id, **generate_kwargs)
        found = sample_by_tokens(
            model, prompts, enc, processor, processors, do_sample, stop, settings
        )
    return [generation_of(tokenizer, *each) for each in found]


def loops(
    model: torch.nn.Module,
    processor: object,
    layer: SentenceLayer | None,
    max_new_tokens: int,
    extra: dict,
) -> bool:
    """Whether a generation runs in the decode loop (else ``model.generate``): our processor,
    no ``model.generate`` argument but ``min_new_tokens`` and no processor of the model's own;
    at the token level also an MM that is the generator itself, with its tokenizer and a window
    longer than the text (its rows ride in the generator's forward)."""
    core = getattr(processor, "core", None)
    if core is None or set(extra) - {"min_new_tokens"} or not adds_no_processors(model):
        return False
    mm = core.measurement
    return layer is not None or (
        mm.model is model and mm.same_tokenizer and max_new_tokens < mm.window
    )


def sample_by_tokens(
    model: torch.nn.Module,
    prompts: Sequence[str],
    enc: dict[str, torch.Tensor],
    processor: LogitsProcessor | None,
    processors: LogitsProcessorList,
    do_sample: bool,
    stop: list[int],
    settings: dict,
) -> list[tuple[str, list[int], list[int]]]:
    """``(prompt, ids, watermarked steps)`` per prompt from one ``model.generate`` call with
    ``processors`` (``processor`` and the warpers after it) and ``settings`` (the token limit,
    the pad id and the caller's arguments)."""
    if do_sample:  # switch off the built-in warpers: ours run after the watermark
        settings = {**warpers_off(), **settings}
    out = model.generate(**enc, logits_processor=processors, do_sample=do_sample, **settings)
    rows = [cut_at_eos(row, stop) for row in out[:, enc["input_ids"].shape[1] :].tolist()]
    record = processor.record if getattr(processor, "keep_record", False) else None
    return [
        (prompt, ids, record.steps_within(row, len(ids)) if record else [])
        for row, (prompt, ids) in enumerate(zip(prompts, rows))
    ]


def generation_of(tokenizer: object, prompt: str, ids: list[int], steps: list[int]) -> Generation:
    """The :class:`Generation` of a prompt's continuation ``ids`` (cut at its first EOS)."""
    return Generation(prompt, decode_ids(tokenizer, ids), ids, steps)


def encode_prompts(
    tokenizer: object, prompts: Sequence[str], device: torch.device
) -> tuple[dict[str, torch.Tensor], int]:
    """The prompts' ids left-padded into one batch (``input_ids``, ``attention_mask``, both
    (B, P)) and the pad id: the tokenizer's pad token, else its EOS. The tokenizer is not
    changed."""
    rows = [tokenizer(prompt).input_ids for prompt in prompts]
    pad_id = tokenizer.pad_token_id
    if pad_id is None:
        pad_id = tokenizer.eos_token_id
    width = max(map(len, rows))
    ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in rows], dtype=torch.long)
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows], dtype=torch.long)
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}, int(pad_id)


def sampling_processors(
    processor: LogitsProcessor | None,
    do_sample: bool,
    temperature: float,
    top_k: int,
    top_p: float,
) -> LogitsProcessorList:
    """``processor`` (reset for a new generation), then the sampling warpers unless it applies
    the sampling filters itself (ours does)."""
    processors = LogitsProcessorList()
    if processor is not None:
        if hasattr(processor, "reset"):
            processor.reset()
        processors.append(processor)
    if not do_sample or getattr(processor, "applies_sampling_filters", False):
        return processors
    if temperature != 1.0:
        processors.append(TemperatureLogitsWarper(temperature))
    if top_k > 0:
        processors.append(TopKLogitsWarper(top_k=top_k))
    if top_p < 1.0:
        processors.append(TopPLogitsWarper(top_p=top_p))
    return processors


def check_generate_args(cfg: object, max_new_tokens: object, kwargs: dict) -> None:
    """A clear error for a bad ``max_new_tokens`` or a sampling argument the config sets."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise UserError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
    if max_new_tokens < 1:
        raise UserError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    clash = sorted({"temperature", "top_k", "top_p"} & set(kwargs))
    if clash:
        raise UserError(
            f"{', '.join(clash)} come from the watermark config (temperature="
            f"{cfg.scheme.temperature}, top_k={cfg.scheme.top_k}, top_p={cfg.scheme.top_p}); "
            "change them in its scheme section"
        )
