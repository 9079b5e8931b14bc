"""The sentence layer's reference path, through ``model.generate``: the oracle the decode loop is
tested against, and the path :func:`~watermark.generate.generation.generate` takes when a call
passes ``model.generate`` arguments or the model's ``generation_config`` adds processors.

The prompts go one at a time: each round, one ``model.generate`` call samples the N candidates
of a prompt's next sentence (the N rows share their length, which the processor's step count
needs; the processor is told where the prompt ends,
:meth:`~watermark.generate.processor.AdaptiveWatermarkLogitsProcessor.start_at`), each sentence
prefills the prefix again, and :func:`~watermark.generate.keep.kept_rows` keeps one. The
round's limits are the loop's (:class:`~watermark.generate.loop.Limits`), and the text is cut at
its first EOS as there (:func:`~watermark.generate.loop.cut_at_eos`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import LogitsProcessorList, StoppingCriteriaList

from watermark.base import UserError
from watermark.generate.keep import kept_rows
from watermark.generate.loop import Limits, cut_at_eos
from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.spans import SentenceEnds


def sample_candidates(
    model: torch.nn.Module,
    rows: list[list[int]],
    prompt_length: int,
    processor: AdaptiveWatermarkLogitsProcessor,
    ends: SentenceEnds,
    settings: dict,
) -> list[list[int]]:
    """One ``model.generate`` call over ``rows`` (prompt + chosen text, all of one length): each
    row's new ids up to its first end (``settings`` holds the token limits, transformers'
    warpers switched off and the rest)."""
    ids = torch.tensor(rows, device=next(model.parameters()).device)
    processor.start_at(prompt_length)
    out = model.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        logits_processor=LogitsProcessorList([processor]),
        stopping_criteria=StoppingCriteriaList([ends]),
        do_sample=True,
        pad_token_id=ends.pad_id,
        **settings,
    )
    return [ends.cut(row) for row in out[:, ids.shape[1] :].tolist()]


@torch.inference_mode()
def sample_by_sentences(
    model: torch.nn.Module,
    tokenizer: object,
    prompts: Sequence[str],
    processor: AdaptiveWatermarkLogitsProcessor,
    layer: SentenceLayer,
    limits: Limits,
    stop: Sequence[int],
    generate_kwargs: dict,
) -> list[tuple[str, list[int], list[int]]]:
    """``(prompt, ids, watermarked steps)`` per prompt on the reference path (module
    docstring): each prompt's candidates of a round from one ``model.generate`` call, with
    ``generate_kwargs`` (transformers' warpers switched off among them; the round's limits
    replace theirs); the caller seeds torch's RNG."""
    if layer.resample_every:
        raise UserError(
            "sentences.resample_every runs in the decode loop only: leave out the "
            "model.generate arguments and clear the generation_config's own processors"
        )
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
            budget = {
                "max_new_tokens": limits.budget(len(chosen[i])),
                "min_new_tokens": limits.least(len(chosen[i])),
            }
            settings = {**generate_kwargs, **budget}
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
                steps[i] += record.steps_within(best, before + len(kept))
            chosen[i] += kept
            done[i] = not kept or kept[-1] in stop
    found = []
    for prompt, ids, marked in zip(prompts, chosen, steps):
        ids = cut_at_eos(ids, stop)
        found.append((prompt, ids, [s for s in marked if s <= len(ids)]))
    return found
