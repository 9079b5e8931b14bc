"""The compared methods of a run, built by name: ours from the run's watermark config (with a
variant's fields), the KGW baselines and SynthID-Text from the run's keys and strengths, each
generating on the generator's device."""

from __future__ import annotations

from dataclasses import replace

import torch

from evaluation.cache_keys import detection_key, generation_key
from evaluation.config_fields import evolve
from evaluation.config_sections import KGW_BASES, Methods
from evaluation.methods import KGWMethod, Method, OursMethod, TransformersKGW
from evaluation.synthid import SynthIDMethod
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig


def build_method(
    name: str,
    cfg: Methods,
    wm_config: WatermarkConfig,
    model: torch.nn.Module,
    tokenizer: object,
    **overrides: object,
) -> Method:
    """Method ``name`` with the baselines' settings of ``cfg``; ``overrides`` are watermark config
    fields (flat names) for ours, ``kgw_gamma`` / ``kgw_delta`` for KGW-0/1/2."""
    device = str(next(model.parameters()).device)
    if name in KGW_BASES:
        cfg = replace(cfg, **overrides)
    if name == "unwatermarked":
        return Method()
    if name == "ours":
        wm_cfg = evolve(wm_config, **overrides)
        wm = Watermark.load(wm_cfg, tokenizer=tokenizer, generator=model)
        return OursMethod(wm, model, generation_key(wm_cfg), detection_key(wm_cfg))
    if name == "kgw1":
        return TransformersKGW(
            model.config, tokenizer, cfg.kgw_gamma, cfg.kgw_delta, cfg.kgw_key, device
        )
    if name == "synthid":
        keys = [(cfg.kgw_key * 7919 + layer) % 2**31 for layer in range(cfg.synthid_layers)]
        return SynthIDMethod(
            keys,
            cfg.synthid_ngram_len,
            tokenizer,
            wm_config.scheme.top_k,
            wm_config.scheme.top_p,
            device,
        )
    vocab_size = int(model.get_output_embeddings().weight.shape[0])
    context = {"kgw0": 0, "kgw2": 2}[name]
    return KGWMethod(
        name, tokenizer, vocab_size, cfg.kgw_gamma, cfg.kgw_delta, cfg.kgw_key, context
    )
