"""The parts the sentence layer reads with: its own mapper (``sentences.mapper``) and its own
sentence embedder (``sentences.embedder``), each in place of the token level's where the config
names one.

:func:`load_sentence_parts` loads them (or takes them as given), checks each against its pin
(``sentences.mapper_digest`` / ``sentences.embedder_digest``: another part is refused, an
unpinned one loaded by name warns) and the SE's width against the mapper's input width.
:func:`own_digests` gives the fingerprint the digests of the parts that are the layer's own, so
that a config without them keeps its fingerprint.
"""

from __future__ import annotations

from pathlib import Path

import torch

from watermark.base import UserError
from watermark.config.watermark_config import WatermarkConfig
from watermark.core.identity import check_pin, tensor_digest
from watermark.core.semantic import MappedEmbedder
from watermark.models.devices import torch_dtype
from watermark.models.loaders import embedder_dim, load_embedder
from watermark.models.semantic_mapper import SemanticMapper


def own_folder(cfg: WatermarkConfig, part: str) -> Path:
    """The folder ``sentences.<part>`` names, resolved; a UserError where there is none."""
    name = getattr(cfg.sentences, part)
    folder = Path(cfg.resolve_path(name))
    if not folder.is_dir():
        raise UserError(f"sentences.{part} folder {name!r} not found")
    return folder


def own_embedder(
    cfg: WatermarkConfig, device: torch.device, embedder: object | None
) -> tuple[object, str]:
    """The layer's own SE (loaded from ``sentences.embedder`` unless given) on ``device`` in
    ``compute_dtype``, checked against its pin, and its digest as loaded."""
    by_name = embedder is None
    if by_name:
        embedder = load_embedder(str(own_folder(cfg, "embedder")), device=str(device))
    found = tensor_digest(embedder)  # as loaded, before compute_dtype (as the token level's)
    pin = cfg.sentences.embedder_digest
    check_pin("sentences.embedder", cfg.sentences.embedder, pin, found, by_name)
    dtype = torch_dtype(cfg.runtime.compute_dtype)
    return embedder.to(device=device, dtype=dtype), found


def load_sentence_parts(
    cfg: WatermarkConfig,
    semantic: MappedEmbedder,
    device: torch.device,
    mapper: SemanticMapper | None = None,
    embedder: object | None = None,
) -> MappedEmbedder | None:
    """What the sentence layer reads with where it has parts of its own: its mapper (from
    ``sentences.mapper`` unless given, else the token level's) on its SE (from
    ``sentences.embedder`` unless given, else the token level's), each checked against its pin,
    the SE's width against the mapper's input; ``None`` where the layer is off or has no part
    of its own."""
    settings = cfg.sentences
    own_mapper = mapper is not None or settings.mapper is not None
    own_se = embedder is not None or settings.embedder is not None
    if not settings.on or not (own_mapper or own_se):
        return None
    digests = dict(semantic.digests)
    if own_mapper:
        by_name = mapper is None
        if by_name:
            mapper = SemanticMapper.from_pretrained(own_folder(cfg, "mapper"))
        digests["mapper"] = tensor_digest(mapper)
        pin = settings.mapper_digest
        check_pin("sentences.mapper", settings.mapper, pin, digests["mapper"], by_name)
        mapper = mapper.to(device=device, dtype=torch.float32)
    else:
        mapper = semantic.mapper
    if own_se:
        embedder, digests["embedder"] = own_embedder(cfg, device, embedder)
        width, what = embedder_dim(embedder), f"sentences.embedder {settings.embedder!r}"
    else:
        embedder, what = semantic.embedder, f"the embedder {cfg.models.embedder!r}"
        width = int(semantic.embed(["."]).shape[1])
    mapped_by = "sentences.mapper" if own_mapper else f"the mapper {cfg.models.mapper!r}"
    if width != int(mapper.config.input_dim):
        raise UserError(
            f"{mapped_by} expects {mapper.config.input_dim}-d embeddings but {what} gives "
            f"{width}-d ones; the sentence layer's embedder and mapper must fit"
        )
    return MappedEmbedder(embedder, mapper, semantic.batch_size, digests)


def own_digests(own: MappedEmbedder | None, semantic: MappedEmbedder) -> dict[str, str]:
    """``{"sentence_mapper": ..., "sentence_embedder": ...}``: the digests of the parts ``own``
    (what the sentence layer reads with) holds in place of ``semantic``'s (the token level's),
    for :func:`watermark.core.identity.fingerprint`; empty where it holds none."""
    if own is None:
        return {}
    found = {}
    if own.mapper is not semantic.mapper:
        found["sentence_mapper"] = own.digests["mapper"]
    if own.embedder is not semantic.embedder:
        found["sentence_embedder"] = own.digests["embedder"]
    return found
