"""Key material beyond the key: digests of the mapper and the embedder, and config fingerprints.

Every green list comes from the sentence embedder (SE) and the semantic mapper as much as from the
secret key: a retrained mapper, or another embedder under the same name, is another key, and text
made with the old one no longer tests as watermarked. So a config pins both by content:

* ``mapper_digest`` / ``embedder_digest`` hold :func:`tensor_digest` of each part, a SHA-256 of its
  tensors (names, shapes, float32 values), which does not depend on the file format or device.
  ``keygen`` writes both and the shipped config carries them.
* A config without a pin, whose part is the shipped one by name (``checkpoints/mapper-minilm``,
  ``minilm``), is held to the shipped config's pin when the part is loaded by name; a part under
  another name is unpinned, and loading it warns. A part passed in as an object is checked only
  against an explicit pin.
* A mismatch is a :class:`~watermark.base.UserError` (exit 2 on the command line) that names
  the expected and found digests and the way out.
* The sentence layer's own mapper and SE (``sentences.mapper``, ``sentences.embedder``) go
  through the same check (:func:`check_pin`), against their explicit pins only.

:func:`fingerprint` is a short digest of what generation and detection must share (the found
digests among them, never a key or the opening sentence); ``generate`` writes it with each text
and ``detect`` reports it with each result, so text checked under another config is noticed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from functools import lru_cache

import torch

from watermark.base import UserError
from watermark.config.watermark_config import DEFAULT_CONFIG_PATH, WatermarkConfig

logger = logging.getLogger(__name__)


def tensor_digest(module: torch.nn.Module) -> str:
    """``"sha256:<hex>"`` of a module's state: every tensor's name, shape and values (float32 for
    floating tensors, int64 otherwise), in name order."""
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        kind = torch.float32 if tensor.is_floating_point() else torch.int64
        values = tensor.detach().to("cpu", kind).contiguous()
        h.update(f"{name}:{tuple(values.shape)}:{kind}\n".encode())
        h.update(values.numpy().tobytes())
    return "sha256:" + h.hexdigest()


@lru_cache(maxsize=1)
def shipped_pins() -> dict[str, tuple[str, str | None]]:
    """``{"mapper": (name, digest), "embedder": (name, digest)}`` of the shipped config."""
    data = json.loads(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")).get("models", {})
    return {part: (data[part], data.get(f"{part}_digest")) for part in ("mapper", "embedder")}


def expected_digest(cfg: WatermarkConfig, part: str, by_name: bool) -> str | None:
    """The digest ``part`` (``"mapper"`` or ``"embedder"``) must have under ``cfg``, or None.

    An explicit ``<part>_digest`` always applies; without one, a part loaded by the shipped
    name is held to the shipped digest.
    """
    pinned = getattr(cfg.models, f"{part}_digest")
    if pinned or not by_name:
        return pinned
    name, digest = shipped_pins()[part]
    return digest if getattr(cfg.models, part) == name else None


def check_part(
    cfg: WatermarkConfig, part: str, found: str, by_name: bool, warn: bool = True
) -> None:
    """:func:`check_pin` of the models' mapper or embedder (``part``) under ``cfg``."""
    expected = expected_digest(cfg, part, by_name)
    check_pin(part, getattr(cfg.models, part), expected, found, by_name, warn)


def check_pin(
    field: str, name: str, expected: str | None, found: str, by_name: bool, warn: bool = True
) -> None:
    """Refuses a mapper or embedder whose digest ``found`` is not the ``expected`` one
    (UserError); warns (with ``warn``) when one loaded by name is not pinned at all.

    Args:
        field: The config field that names it (``mapper``, ``sentences.embedder``, ...).
        name: The value of that field.
        expected: The digest it must have, or None where it is not pinned.
        found: Its digest as loaded.
        by_name: Whether it was loaded by name (not passed in as an object).
    """
    part = field.rpartition(".")[2]
    if not expected:
        if by_name and warn:
            logger.warning(
                "watermark config does not pin its %s %r: texts are scored with whatever it "
                'holds now (%s); pin it with "%s_digest": "%s"',
                field,
                name,
                short(found),
                field,
                found,
            )
        return
    if expected != found:
        where = "the mapper folder" if part == "mapper" else "the embedder"
        raise UserError(
            f"{field} {name!r} is not the one this config was made with: expected "
            f"{short(expected)}, found {short(found)}; a {part} is part of the key, so texts "
            f'made with the other one do not test as watermarked: point "{field}" at '
            f'{where} the config was made with (or set "{field}_digest" to {found} to adopt '
            "this one for new texts)"
        )


def pinned(cfg: WatermarkConfig) -> WatermarkConfig:
    """``cfg`` with ``mapper_digest`` and ``embedder_digest`` set to the digests of the parts it
    names (loaded by name; a pin it already has must match)."""
    from watermark.models.loaders import load_embedder
    from watermark.models.semantic_mapper import SemanticMapper

    found = {
        "mapper": tensor_digest(SemanticMapper.from_pretrained(cfg.mapper_dir())),
        "embedder": tensor_digest(load_embedder(cfg.resolve_path(cfg.models.embedder))),
    }
    for part, digest in found.items():
        check_part(cfg, part, digest, by_name=True, warn=False)
    return cfg.evolve(mapper_digest=found["mapper"], embedder_digest=found["embedder"])


def short(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits, for messages."""
    return digest[: len("sha256:") + 12]


def fingerprint(
    cfg: WatermarkConfig,
    vocab_size: int,
    mapper: str,
    embedder: str,
    sentence_mapper: str | None = None,
    sentence_embedder: str | None = None,
) -> str:
    """``"wm-<12 hex>"``: digest of what each section names of itself
    (:meth:`~watermark.config.sections.Section.identity`: the shared fields that are not
    secret, the green lists per step), V and the found mapper and embedder digests, and those of
    the sentence layer's own mapper and own SE where it has them (no key, no opening sentence)."""
    shared = {"token_map": "keyed"}  # the one token map since 0.8, named so that prints hold
    for part in cfg.parts():
        shared.update(part.identity())
    shared.update(vocab_size=int(vocab_size), mapper=mapper, embedder=embedder)
    own = {"sentence_mapper": sentence_mapper, "sentence_embedder": sentence_embedder}
    if cfg.sentences.on:  # each named only where the layer has it, so that prints hold
        shared.update({name: digest for name, digest in own.items() if digest is not None})
    blob = json.dumps(shared, sort_keys=True).encode()
    return "wm-" + hashlib.sha256(blob).hexdigest()[:12]
