"""Speed stage: generation tokens/s with and without the watermark, and detection s/text.

Generation runs unwatermarked, watermarked through ``wm.generate`` (the MM fused into the
generator's forward where possible, see :mod:`watermark.generate.loop`) and watermarked
through the model's own ``model.generate(**wm.generation_kwargs())`` (unfused: the processor runs
the MM itself), on the same prompts and seed, with EOS blocked so that every run generates the
same number of tokens; the ratios are watermarked tokens/s over plain tokens/s.

Both are measured side by side in one run on the same prompts and texts, with the extra time
split by forward hooks (:class:`~evaluation.stage_times.StageTimes`) into measurement model
(``mm``), embedder (``embed``) and mapper (``map``). (Until 0.10 the slow reference detector,
the test oracle, also ran on a few of the texts here; the tests check that detection equals it.)
A ``variant`` watermark (the same one with some
fields changed, e.g. ``loop_penalty=0``) is timed fused in the same run, for its ratio against
plain and against the watermark itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from evaluation.stage_times import StageTimes
from watermark.api import Watermark
from watermark.generate.generation import encode_prompts


def timed_generate(
    wm: Watermark,
    model: torch.nn.Module,
    prompts: Sequence[str],
    new_tokens: int,
    marked: bool,
    own_generate: bool = False,
    sync: bool = False,
) -> tuple[list, dict]:
    """Generations (``wm.generate``'s, or with ``own_generate`` the token ids of the model's
    own ``model.generate(**wm.generation_kwargs())``) and ``{"seconds", "tokens",
    "tokens_per_s", "<stage>_s"...}``; ``sync``: each stage waits for CUDA (profiling)."""
    with StageTimes(wm, sync=sync, generator=model) as stages:
        start = time.perf_counter()
        if own_generate:
            enc, pad_id = encode_prompts(wm.tokenizer, list(prompts), model.device)
            torch.manual_seed(0)
            out = model.generate(
                **enc,
                **wm.generation_kwargs(),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                pad_token_id=pad_id,
            )
            outs = out[:, enc["input_ids"].shape[1] :].tolist()
            tokens = sum(map(len, outs))
        else:
            outs = wm.generate(
                model,
                list(prompts),
                max_new_tokens=new_tokens,
                seed=0,
                watermark=marked,
                min_new_tokens=new_tokens,
            )
            tokens = sum(len(o.token_ids) for o in outs)
        total = time.perf_counter() - start
    parts = {f"{k}_s": v for k, v in stages.totals().items()}
    return outs, {"seconds": total, "tokens": tokens, "tokens_per_s": tokens / total, **parts}


def speed(
    wm: Watermark,
    model: torch.nn.Module,
    prompts: Sequence[str],
    new_tokens: int = 200,
    variant: Watermark | None = None,
) -> dict:
    """Generation at batch ``len(prompts)`` and detection of its outputs."""
    _, without = timed_generate(wm, model, prompts, new_tokens, False)
    outs, with_wm = timed_generate(wm, model, prompts, new_tokens, True)
    _, unfused = timed_generate(wm, model, prompts, new_tokens, True, own_generate=True)
    compared = {}
    if variant is not None:
        _, timed = timed_generate(variant, model, prompts, new_tokens, True)
        compared = {
            "generate_with_variant": timed,
            "variant_ratio": timed["tokens_per_s"] / without["tokens_per_s"],
            "watermark_over_variant": with_wm["tokens_per_s"] / timed["tokens_per_s"],
        }
    texts = [o.text for o in outs]
    with StageTimes(wm) as stages:
        start = time.perf_counter()
        fast = wm.detect(texts)
        fast_s = (time.perf_counter() - start) / len(texts)
    parts = {f"{k}_s": v / len(texts) for k, v in stages.totals().items()}
    return {
        "threads": torch.get_num_threads(),
        "detect_tokens_per_text": sum(r.num_tokens for r in fast) / len(fast),
        "detect_fast_s_per_text": fast_s,
        "detect_fast_breakdown_per_text": parts,
        "generate_batch": len(prompts),
        "generate_with_watermark": with_wm,
        "generate_without_watermark": without,
        "generate_with_watermark_unfused": unfused,
        "generate_ratio": with_wm["tokens_per_s"] / without["tokens_per_s"],
        "generate_ratio_unfused": unfused["tokens_per_s"] / without["tokens_per_s"],
        **compared,
    }
