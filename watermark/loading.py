"""Loading the parts of a watermark named in its config, and checking that they fit.

:meth:`watermark.api.Watermark.load` calls these in order: the LM-head width V
(:func:`vocab_size`), the generator's tokenizer, the sentence embedder (SE), the mapper and the
keyed token maps (:func:`load_semantic`), then the measurement model (MM). Each loads its part by
name unless it is passed in, places it on one device in the config's ``compute_dtype`` (see
:mod:`watermark.models.devices`) and checks widths and vocabularies, failing with a message that
names the mismatch (embedder width vs mapper input, mapper output vs token map, tokenizer vs LM-head
width, null model vs MM). The mapper and the embedder are key material: their digests must be the
ones the config pins (:mod:`watermark.core.identity`). The sentence layer's own mapper and SE are
loaded by :mod:`watermark.sentences.parts`; :func:`generator_to_use` checks the model that
``generate`` is given.
"""

from __future__ import annotations

import logging

import torch

from watermark.base import UserError
from watermark.config.watermark_config import WatermarkConfig
from watermark.core.identity import check_part, tensor_digest
from watermark.core.measurement import MeasurementModel, resolve_start_id
from watermark.core.scoring import WatermarkCore
from watermark.core.semantic import SemanticScorer
from watermark.core.token_map import build_repeat_shifts, build_token_maps
from watermark.models.devices import model_device, model_dtype, torch_dtype
from watermark.models.loaders import embedder_dim, load_embedder
from watermark.models.semantic_mapper import SemanticMapper

logger = logging.getLogger(__name__)


def head_width(model: torch.nn.Module) -> int:
    """LM-head width (number of logits) of a causal LM."""
    head = model.get_output_embeddings()
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.vocab_size)


def load_tokenizer(name: str) -> object:
    """The tokenizer of a causal LM (short name, folder or hub id)."""
    from transformers import AutoTokenizer

    from watermark.models.loaders import (
        resolve_lm,  # lazy: converts packaged GGUF models on first use
    )

    return AutoTokenizer.from_pretrained(str(resolve_lm(name)))


def config_vocab(name: str) -> int:
    """LM-head width from a causal LM's config (no weights are loaded)."""
    from watermark.models.loaders import causal_lm_config

    return int(causal_lm_config(name).get_text_config().vocab_size)


def same_vocabulary(a: object, b: object) -> bool:
    """Whether two tokenizers map the same strings to the same ids."""
    return a is b or a.get_vocab() == b.get_vocab()


def vocab_size(
    cfg: WatermarkConfig, generator: torch.nn.Module | None, tokenizer_given: bool
) -> int:
    """V: checked against the generator's LM head, or its config when loaded by name."""
    if generator is not None:
        actual = head_width(generator)
    elif cfg.models.vocab_size is None or not tokenizer_given:
        actual = config_vocab(cfg.resolve_path(cfg.models.generator))
    else:  # components passed in without the generator: the caller vouches for V
        return int(cfg.models.vocab_size)
    if cfg.models.vocab_size is not None and int(cfg.models.vocab_size) != actual:
        raise UserError(
            f"config vocab_size={cfg.models.vocab_size} but the generator "
            f"{cfg.models.generator!r} has an LM head of width {actual}; the token map must "
            f"match the LM head (set vocab_size to {actual}, or to null to read it from the "
            "generator)"
        )
    return actual


def generator_to_use(
    held: torch.nn.Module | None, model: torch.nn.Module | None, vocab: int
) -> torch.nn.Module:
    """The model to generate with: the held generator, or ``model`` when none is held; its
    LM-head width checked against V."""
    if model is None and held is None:
        raise UserError(
            "this Watermark holds no generator (its measurement model is another model): "
            "load it with Watermark.load(..., generator=model) or call "
            "wm.generate(model, prompts)"
        )
    if model is not None and held is not None and model is not held:
        raise UserError(
            "this Watermark holds the generator it was loaded and checked with; call "
            "wm.generate(prompts) without a model, or load a Watermark with "
            "Watermark.load(..., generator=model) for the other model"
        )
    model = held if model is None else model
    width = head_width(model)
    if width != vocab:
        raise UserError(
            f"model LM head has width {width} but the watermark was built for V={vocab}"
        )
    return model


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
    same_name = cfg.models.measurement_model == cfg.models.generator
    dtype = torch_dtype(cfg.runtime.compute_dtype)
    if model is None:
        reusable = generator is not None and (model_device(generator), model_dtype(generator))
        if same_name and reusable == (device, dtype):
            model = generator
        else:
            from watermark.models.loaders import load_lm

            model, loaded_tok = load_lm(cfg.resolve_path(cfg.models.measurement_model))
            mm_tokenizer = mm_tokenizer or loaded_tok
    if mm_tokenizer is None:
        if not same_name:
            raise UserError("pass mm_tokenizer together with a measurement_model of another name")
        mm_tokenizer = tokenizer
    same = same_vocabulary(tokenizer, mm_tokenizer)
    start = resolve_start_id(mm_tokenizer, cfg.models.mm_start_token)
    if model is not generator:
        model = model.to(device=device, dtype=dtype)
    return MeasurementModel(
        model.eval(), mm_tokenizer, tokenizer, same, start, window=cfg.models.mm_window
    )


def generator_tokenizer(cfg: WatermarkConfig, tokenizer: object | None, vocab: int) -> object:
    """The generator's tokenizer (loaded by name unless given), checked against V."""
    if tokenizer is None:
        tokenizer = load_tokenizer(cfg.resolve_path(cfg.models.generator))
    if len(tokenizer) > vocab:
        raise UserError(
            f"the generator tokenizer has {len(tokenizer)} tokens but vocab_size (LM-head "
            f"width) is {vocab}; the token map would not cover every token id"
        )
    return tokenizer


def load_semantic(
    cfg: WatermarkConfig,
    vocab: int,
    device: torch.device,
    embedder: object | None = None,
    mapper: SemanticMapper | None = None,
) -> SemanticScorer:
    """The SE (in ``compute_dtype``), the mapper (float32) and the keyed token maps of every
    key, on ``device``; the SE and the mapper are loaded by name unless given."""
    mapper_by_name, embedder_by_name = mapper is None, embedder is None
    if mapper is None:
        try:
            mapper = SemanticMapper.from_pretrained(cfg.mapper_dir())
        except ValueError as err:  # weights that do not match the folder's config
            raise UserError(f"mapper {cfg.models.mapper!r} cannot be loaded: {err}") from err
    digests = {"mapper": tensor_digest(mapper)}
    check_part(cfg, "mapper", digests["mapper"], mapper_by_name)
    mapper = mapper.to(device=device, dtype=torch.float32)
    if embedder is None:
        embedder = load_embedder(cfg.resolve_path(cfg.models.embedder), device=str(device))
    digests["embedder"] = tensor_digest(embedder)  # as loaded, before compute_dtype
    check_part(cfg, "embedder", digests["embedder"], embedder_by_name)
    embedder = embedder.to(device=device, dtype=torch_dtype(cfg.runtime.compute_dtype))
    e_dim, m_in = embedder_dim(embedder), int(mapper.config.input_dim)
    if e_dim != m_in:
        raise UserError(
            f"embedder {cfg.models.embedder!r} outputs {e_dim}-d embeddings but the mapper "
            f"{cfg.models.mapper!r} expects input_dim={m_in} (trained with "
            f"{mapper.config.embedder!r}); use the embedder the mapper was trained with"
        )
    D = int(mapper.config.output_dim)
    keys = cfg.secret_keys()
    try:
        token_maps = [build_token_maps(k, vocab, D, cfg.green_lists) for k in keys]
    except ValueError as err:
        raise UserError(f"mapper {cfg.models.mapper!r} does not fit the token map: {err}") from err
    shifts = []
    if cfg.repeat_policy.bigram:
        shifts = [build_repeat_shifts(k, vocab, D, cfg.green_lists) for k in keys]
    return SemanticScorer(
        embedder,
        mapper,
        token_maps[0],
        batch_size=cfg.runtime.embed_batch_size,
        old_token_maps=token_maps[1:],
        repeat_shifts=shifts,
        digests=digests,
    )


def log_loaded(cfg: WatermarkConfig, vocab: int, dims: int, same: bool, device: object) -> None:
    """Logs what was loaded, where, in which dtype."""
    logger.info(
        "watermark loaded: generator=%s V=%d D=%d MM=%s (%s tokenizer) SE=%s on %s, %s",
        cfg.models.generator,
        vocab,
        dims,
        cfg.models.measurement_model,
        "same" if same else "cross",
        cfg.models.embedder,
        device,
        cfg.runtime.compute_dtype,
    )


def load_core(
    cfg: WatermarkConfig,
    generator: torch.nn.Module | None,
    device: torch.device,
    **given: object,
) -> tuple[WatermarkCore, torch.nn.Module | None]:
    """The scoring core of ``cfg`` on ``device``, from the parts ``given`` (``tokenizer``,
    ``measurement_model``, ``mm_tokenizer``, ``embedder``, ``mapper``; each loaded by name where
    it is ``None``), cheap checks first; and the generator to hold: ``generator``, else the MM
    when the config names the same model for both."""
    vocab = vocab_size(cfg, generator, given["tokenizer"] is not None)
    tokenizer = generator_tokenizer(cfg, given["tokenizer"], vocab)
    semantic = load_semantic(cfg, vocab, device, given["embedder"], given["mapper"])
    mm = load_measurement(
        cfg,
        tokenizer,
        generator,
        given["measurement_model"],
        given["mm_tokenizer"],
        vocab,
        device,
    )
    log_loaded(cfg, vocab, semantic.num_dims, mm.same_tokenizer, device)
    same = cfg.models.measurement_model == cfg.models.generator and mm.same_tokenizer
    if generator is None and same:
        generator = mm.model  # the generator's weights, loaded once
    return WatermarkCore(cfg, tokenizer, mm, semantic), generator
