"""The parts of a watermark: where they run, in which dtype, and the checks that they fit.

:func:`resolve_device` and :data:`DTYPES` place the measurement model (MM), the sentence
embedder (SE), the mapper and the token maps on one device; the MM and the SE compute in the
config's ``compute_dtype`` (part of the config, since it moves gates and green lists slightly;
the mapper always runs in float32). The other functions load the generator's tokenizer and the
MM and check widths and vocabularies, failing with a message that names the mismatch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.config import WatermarkConfig
from watermark.measurement import MeasurementModel, resolve_start_id

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(
    device: str | torch.device | None, generator: torch.nn.Module | None = None
) -> torch.device:
    """The device of the watermark's parts.

    ``None``: the generator's device if one is given, else the CPU. ``"auto"``: CUDA when
    available, else the CPU. Anything else must name an available device.
    """
    if device is None:
        return model_device(generator) if generator is not None else torch.device("cpu")
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        found = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from err
    if found.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: CUDA is not available here; use cpu or auto")
    if (
        found.type == "cuda"
        and found.index is not None
        and found.index >= torch.cuda.device_count()
    ):
        raise ValueError(f"device {device!r}: only {torch.cuda.device_count()} CUDA devices")
    return found


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of a model's first parameter."""
    return next(model.parameters()).device


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype of a model's first floating-point parameter."""
    return next(p.dtype for p in model.parameters() if p.is_floating_point())


def head_width(model: torch.nn.Module) -> int:
    """LM-head width (number of logits) of a causal LM."""
    head = model.get_output_embeddings()
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.vocab_size)


def load_tokenizer(name: str) -> object:
    from transformers import AutoTokenizer

    from watermark.models import resolve_lm  # lazy: converts packaged GGUF models on first use

    return AutoTokenizer.from_pretrained(str(resolve_lm(name)))


def config_vocab(name: str) -> int:
    """LM-head width from a causal LM's config (no weights are loaded)."""
    from watermark.models import causal_lm_config

    return int(causal_lm_config(name).get_text_config().vocab_size)


def check_prompts(prompts: Sequence[str]) -> None:
    """Raises ``ValueError`` unless every prompt is a string with some non-blank text."""
    if not prompts:
        raise ValueError("no prompts given")
    for n, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            raise ValueError(f"prompt {n} is a {type(prompt).__name__}, not a string")
        if not prompt.strip():
            raise ValueError(
                f"prompt {n} is empty; the model needs some text to continue (a title or a "
                "first sentence)"
            )


def same_vocabulary(a: object, b: object) -> bool:
    """Whether two tokenizers map the same strings to the same ids."""
    return a is b or a.get_vocab() == b.get_vocab()


def vocab_size(
    cfg: WatermarkConfig, generator: torch.nn.Module | None, tokenizer_given: bool
) -> int:
    """V: checked against the generator's LM head, or its config when loaded by name."""
    if generator is not None:
        actual = head_width(generator)
    elif cfg.vocab_size is None or not tokenizer_given:
        actual = config_vocab(cfg.resolve_path(cfg.generator))
    else:  # components passed in without the generator: the caller vouches for V
        return int(cfg.vocab_size)
    if cfg.vocab_size is not None and int(cfg.vocab_size) != actual:
        raise ValueError(
            f"config vocab_size={cfg.vocab_size} but the generator {cfg.generator!r} has an "
            f"LM head of width {actual}; the token map must match the LM head (set "
            f"vocab_size to {actual}, or to null to read it from the generator)"
        )
    return actual


def load_measurement(
    cfg: WatermarkConfig,
    tokenizer: object,
    generator: torch.nn.Module | None,
    model: torch.nn.Module | None,
    mm_tokenizer: object | None,
    vocab: int,
    device: torch.device,
) -> MeasurementModel:
    """The MM on ``device`` in ``compute_dtype`` (the generator itself when it is the same model,
    on that device, in that dtype)."""
    same_name = cfg.measurement_model == cfg.generator
    dtype = DTYPES[cfg.compute_dtype]
    if model is None:
        reusable = generator is not None and (model_device(generator), model_dtype(generator))
        if same_name and reusable == (device, dtype):
            model = generator
        else:
            from watermark.models import load_lm

            model, loaded_tok = load_lm(cfg.resolve_path(cfg.measurement_model))
            mm_tokenizer = mm_tokenizer or loaded_tok
    if mm_tokenizer is None:
        if not same_name:
            raise ValueError("pass mm_tokenizer together with a measurement_model of another name")
        mm_tokenizer = tokenizer
    same = same_vocabulary(tokenizer, mm_tokenizer)
    if cfg.null_model == "mm" and (not same or head_width(model) != vocab):
        raise ValueError(
            "null_model='mm' needs a measurement model with the generator's tokenizer and "
            f"LM-head width {vocab}; use null_model='vocab' with {cfg.measurement_model!r}"
        )
    start = resolve_start_id(mm_tokenizer, cfg.mm_start_token)
    if model is not generator:
        model = model.to(device=device, dtype=dtype)
    return MeasurementModel(
        model.eval(), mm_tokenizer, tokenizer, same, start, window=cfg.mm_window
    )
