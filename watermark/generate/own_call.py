"""The arguments that watermark a user's own ``model.generate`` call, and the one line that
refuses a sampling setting of transformers' beside the watermark's.

The processor applies the watermark config's temperature, top-k and top-p itself
(:mod:`watermark.generate.processor`), so transformers' own warpers must stay off. They are
switched off in a ``generation_config`` object (:func:`own_generation_config`), not as top-level
keywords: ``model.generate(**inputs, **wm.generation_kwargs(), temperature=0.7)`` then reaches
transformers instead of failing in Python with "multiple values for keyword argument", and the
processor refuses the warper it adds on the first step, in one line that names the config field
to set instead (:func:`refusal`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import torch
from transformers import GenerationConfig

from watermark.base import UserError

# each of transformers' sampling warpers at a value that adds no warper
_NEUTRAL = {
    "temperature": 1.0,
    "top_k": 0,
    "top_p": 1.0,
    "min_p": None,
    "typical_p": 1.0,
    "epsilon_cutoff": 0.0,
    "eta_cutoff": 0.0,
    "top_h": None,
}


def warpers_off() -> dict[str, object]:
    """``model.generate`` arguments that switch off every sampling warper the installed
    transformers knows (so a model's ``generation_config`` adds none)."""
    known = GenerationConfig()
    return {k: v for k, v in _NEUTRAL.items() if hasattr(known, k)}


# transformers' sampling warpers that have a field of the watermark config: warper class ->
# (its setting, the config field that applies it)
WARPER_FIELDS = {
    "TemperatureLogitsWarper": ("temperature", "scheme.temperature"),
    "TopKLogitsWarper": ("top_k", "scheme.top_k"),
    "TopPLogitsWarper": ("top_p", "scheme.top_p"),
}
FIELDS = dict(WARPER_FIELDS.values())  # generate argument -> config field


def own_generation_config(
    model: torch.nn.Module | None, settings: Mapping[str, object]
) -> GenerationConfig:
    """A copy of ``model``'s ``generation_config`` (a fresh one without a model) with
    ``settings`` (``max_new_tokens``, ...), sampling on and every sampling warper off.

    Raises:
        UserError: For a sampling setting (the line names the config field that sets it), for
            ``do_sample=False`` (the watermark samples), or for a name that is not a generation
            setting.
    """
    off = warpers_off()
    for name, value in settings.items():
        if name in off:
            raise UserError(refusal({name: value}))
    if settings.get("do_sample", True) is not True:
        raise UserError(
            "do_sample must stay True: the watermark samples (greedy decoding "
            "would pick the same token with or without it)"
        )
    base = getattr(model, "generation_config", None)
    config = copy.deepcopy(base) if base is not None else GenerationConfig()
    if getattr(base, "min_p", None) is not None:  # None would take the model's value again
        off["min_p"] = 0.0  # a min-p of 0 removes no token (the processor lets it pass)
    unused = config.update(**{**settings, "do_sample": True, **off})
    if unused:
        raise UserError(
            f"{', '.join(sorted(unused))}: not a generation setting; pass it to model.generate"
        )
    return config


def refusal(found: Mapping[str, object], config: object | None = None) -> str:
    """The one line that refuses sampling settings of transformers' (``found``: setting ->
    value) beside the watermark processor, naming the config field that sets each instead
    (``config``: the watermark config, for its current values)."""
    given = ", ".join(f"{k}={v}" for k, v in found.items())
    fields = [FIELDS[k] for k in found if k in FIELDS]
    if not fields:
        return (
            f"{given}: the watermark has no such sampling setting, and a second filter after "
            "its processor would change what it samples; leave it out of the generate call and "
            "the model's generation_config"
        )
    now = ""
    if config is not None:
        now = " (now " + ", ".join(f"{f}={getattr(config.scheme, f[7:])}" for f in fields) + ")"
    example = next(k for k in found if k in FIELDS)
    return (
        f"{given}: the watermark processor applies the watermark config's sampling itself, so "
        f"set {' and '.join(fields)} in the watermark config{now} instead of the generate call "
        f"(config.evolve({example}={found[example]}), or --set {FIELDS[example]}="
        f"{found[example]})"
    )
