"""Type, choice and range checks of a :class:`~watermark.core.config.WatermarkConfig`, run when it
is made, and reading a config file (with the warning for a file of 0.1).

Types are checked first, as the fields' annotations say (a JSON ``"two"`` for ``alpha`` is named
as such, not met later as a ``TypeError`` inside torch); then the choices each field declares and
the ranges. The config module imports this one, never the other way round: the checks read a
config's fields by name.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from watermark.core.design import Design
from watermark.core.errors import UserError
from watermark.core.schemes import SCHEMES

logger = logging.getLogger("watermark.core.config")  # where a config's warnings were logged

# the dtypes the measurement model and the embedder may compute in (torch.<name>)
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")
# JSON types of the annotations (bool is not an int here; an int is a float)
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (float, int),
    "bool": (bool,),
    "None": (type(None),),
}


def json_types(annotation: str) -> tuple[type, ...]:
    """The JSON types a field annotated ``annotation`` accepts (``"int | None"``: int or null)."""
    types: tuple[type, ...] = ()
    for part in annotation.split("|"):
        part = part.strip()
        types += (list,) if part.startswith("list[") else JSON_TYPES[part]
    return types


# rule fields whose default changed (to the tournament in 0.2.0) or that were added later, with the
# value every config of 0.1.x meant: a file that names its rule but not these fields takes today's
# defaults, so loading it warns (text made under 0.1's default: configs/watermark-additive.json)
RULE_FIELDS_BEFORE_0_2 = {
    "temperature": 1.0,
    "context_guard": 0,
    "repeats": "neutral",
    "outputs_once": False,
}


DIGEST = re.compile(r"sha256:[0-9a-f]{64}")  # a pinned mapper or embedder (watermark.core.identity)


def own_fields(cfg: object) -> tuple:
    """The fields a user sets of a config (class or instance): not ``design`` or ``source``."""
    return tuple(f for f in fields(cfg) if f.name not in ("design", "source"))


def checked_fields(cfg: object) -> tuple:
    """Every field of a config (class or instance): its own, then the design's."""
    return own_fields(cfg) + fields(Design)


def type_problems(cfg: object) -> list[str]:
    """One message per field whose value has the wrong JSON type."""
    found = []
    if not is_dataclass(cfg.design):
        return [f"design must be an object of fields, got {type(cfg.design).__name__}"]
    for f in checked_fields(cfg):
        value, types = getattr(cfg, f.name), json_types(f.type)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            got = type(value).__name__ if f.metadata.get("secret") else repr(value)
            found.append(f"{f.name} must be {names}, got {got}")
    return found


def problems(cfg: object) -> list[str]:
    """Every type or range problem of a config (empty: valid)."""
    found = type_problems(cfg)
    if found:
        return found
    for f in checked_fields(cfg):
        choices = f.metadata.get("choices")
        if choices and getattr(cfg, f.name) not in choices:
            found.append(f"{f.name} must be one of {choices}, got {getattr(cfg, f.name)!r}")
    for name in ("mapper_digest", "embedder_digest"):
        value = getattr(cfg, name)
        if value is not None and not DIGEST.fullmatch(value):
            found.append(f"{name} must be 'sha256:' and 64 hex digits, got {value!r}")
    for field_name, scheme in {cls.strength_field: cls for cls in SCHEMES.values()}.items():
        found += scheme.validate(getattr(cfg, field_name))  # each scheme checks its strength
    if cfg.fresh_only and not cfg.unique_tokens:
        found.append("fresh_only needs unique_tokens=true (repeats are never tested)")
    if cfg.repeats == "bigram" and (not cfg.fresh_only or cfg.null_model != "vocab"):
        found.append("repeats='bigram' needs fresh_only=true and null_model='vocab'")
    if cfg.context_guard < 0:
        found.append(f"context_guard must be >= 0, got {cfg.context_guard}")
    if cfg.loop_penalty < 0:
        found.append(f"loop_penalty must be >= 0, got {cfg.loop_penalty}")
    if cfg.opening_steps < 0:
        found.append(f"opening_steps must be >= 0, got {cfg.opening_steps}")
    if cfg.opening_steps > 0 and not cfg.opening_sentence.strip():
        found.append("opening_sentence must be set when opening_steps > 0")
    if not 0 < cfg.target_fpr < 1:
        found.append(f"target_fpr must be in (0, 1), got {cfg.target_fpr}")
    if not cfg.temperature > 0:
        found.append(f"need temperature > 0, got {cfg.temperature}")
    if cfg.top_k < 0 or not 0 < cfg.top_p <= 1:
        found.append(f"need top_k >= 0 and 0 < top_p <= 1, got {cfg.top_k}, {cfg.top_p}")
    if not cfg.key:
        found.append("key must be a non-empty string")
    if not all(isinstance(k, str) and k for k in cfg.old_keys):
        found.append("old_keys must be a list of non-empty strings (keys, env:NAME or file:PATH)")
    if cfg.vocab_size is not None and cfg.vocab_size < 1:
        found.append(f"vocab_size must be >= 1 or null, got {cfg.vocab_size}")
    if cfg.mm_window < 2 or cfg.embed_prefix_tokens < 1:
        found.append(
            f"need mm_window >= 2 and embed_prefix_tokens >= 1, got {cfg.mm_window}, "
            f"{cfg.embed_prefix_tokens}"
        )
    if cfg.embed_window < 0:
        found.append(f"embed_window must be >= 0 (0: the whole prefix), got {cfg.embed_window}")
    if cfg.sentence_bits < 0 or cfg.sentence_candidates < 1:
        found.append(
            f"need sentence_bits >= 0 and sentence_candidates >= 1, got {cfg.sentence_bits}, "
            f"{cfg.sentence_candidates}"
        )
    if not 0 <= cfg.sentence_context_bits <= 8:
        found.append(f"sentence_context_bits must be in 0..8, got {cfg.sentence_context_bits}")
    if cfg.embed_batch_size < 1:
        found.append(f"embed_batch_size must be >= 1, got {cfg.embed_batch_size}")
    if not cfg.allowed_scripts or not all(isinstance(x, str) for x in cfg.allowed_scripts):
        found.append("allowed_scripts must be a non-empty list of strings, e.g. ['LATIN']")
    if not all(isinstance(w, int) and not isinstance(w, bool) and w >= 2 for w in cfg.window_sizes):
        found.append(f"window_sizes must be integers >= 2, got {cfg.window_sizes}")
    return found


def read_config_file(path: Path) -> dict:
    """The JSON object of a config file; a one-line error for a missing or malformed one."""
    if not path.is_file():
        raise FileNotFoundError(
            f"watermark config {path} not found; give a JSON file written by "
            "WatermarkConfig.save (watermark/default_config.json is the shipped one)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise UserError(f"watermark config {path} is not UTF-8 text") from err
    except json.JSONDecodeError as err:
        raise UserError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from err
    if not isinstance(data, dict):
        raise UserError(f"watermark config {path} must hold a JSON object of fields")
    return data


def warn_if_0_1(path: Path, data: dict, default_of: Callable[[str], Any]) -> None:
    """Warns when a flat file of 0.1 names its rule but not the later rule fields
    (:data:`RULE_FIELDS_BEFORE_0_2`): they take today's defaults where 0.1 meant other values."""
    missing = [name for name in RULE_FIELDS_BEFORE_0_2 if name not in data]
    if "scaling" not in data or not missing:
        return
    logger.warning(
        "watermark config %s names a rule but not %s: they take the shipped defaults "
        "(%s); a config written for version 0.1 meant %s",
        path,
        ", ".join(missing),
        ", ".join(f"{n}={default_of(n)!r}" for n in missing),
        ", ".join(f"{n}={RULE_FIELDS_BEFORE_0_2[n]!r}" for n in missing),
    )
