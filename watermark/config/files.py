"""Reading a watermark config file, and the one upgrade of the formats before 0.8.

A config file is a JSON object of sections (:data:`SECTIONS`), each an object of fields. Two
earlier formats still load, through :func:`upgrade` and nothing else:

* the flat files of 0.1-0.4 (and of ``keygen`` before 0.8): every field at the top level;
* the sectioned files of 0.5-0.7: ``models``, ``keys``, ``scheme`` (with ``scaling`` and every
  rule's strength side by side, and ``sentence_bits``), ``detection``, ``runtime`` and a
  ``design`` section of fixed switches.

Both are read as flat names (a field's own name, or a sentence field's name of 0.5-0.7,
:data:`NAMES_0_7`) and routed to today's sections. A setting is never dropped in silence: a file
that mixes formats (flat keys beside sections, or 0.5-0.7's ``scheme.scaling`` beside 0.8's
``sentences``), names a key twice, names a section that does not exist or a strength the chosen
rule does not have is refused with one line naming the key. The one exception is a complete save
of 0.1-0.7: it named its rule and wrote every rule's strength, and the others were unused by the
version that wrote them too (:func:`saved_every_strength`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import fields
from pathlib import Path
from typing import Any

from watermark.base import UserError
from watermark.config.schemes import RULES, SCHEMES, Scheme
from watermark.config.sections import Detection, Keys, Models, Runtime, Sentences

logger = logging.getLogger("watermark.config")  # where a config's warnings are logged

SECTIONS = ("models", "keys", "scheme", "sentences", "detection", "runtime")
PLAIN_SECTIONS = {s.name: s for s in (Models, Keys, Sentences, Detection, Runtime)}
# settings later versions removed, at the one value each still takes: 0.8 those only the
# evaluation varied, 0.9 sentences.stop_at (measured not to pay: docs/research/sentence-layer.md)
RETIRED = {"token_map": "keyed", "null_model": "vocab", "stop_at": 0.0}
REMOVED_IN = {"stop_at": "0.9"}  # the version that removed a retired setting, if not 0.8
# what marks a sectioned file as 0.5-0.7's (section, key; key None: the whole section) or 0.8's
MARKS_0_7 = (("design", None), ("scheme", "scaling"), ("scheme", "sentence_bits"))
MARKS_0_8 = (("sentences", None), ("scheme", "rule"))
# where the sectioned files of 0.5-0.7 kept each field (the rest was in "design")
OLD_SECTIONS = {
    "models": (
        "generator",
        "measurement_model",
        "embedder",
        "mapper",
        "mapper_digest",
        "embedder_digest",
    ),
    "keys": ("key", "old_keys"),
    "scheme": (
        "scaling",
        "layers",
        "bias",
        "delta",
        "alpha",
        "temperature",
        "top_k",
        "top_p",
        "sentence_bits",
    ),
    "detection": ("target_fpr", "window_sizes"),
    "runtime": ("compute_dtype", "embed_batch_size"),
}
STRENGTHS = {cls.strength_field for cls in SCHEMES.values()}
# the sentence fields' names in the files of 0.5-0.7 (``scheme.sentence_bits``, the rest in
# ``design``), today's fields of section ``sentences``
NAMES_0_7 = {
    "sentence_bits": "bits",
    "sentence_candidates": "candidates",
    "sentence_context_bits": "context_bits",
    "sentence_keying": "keying",
    "sentence_test": "test",
}
# rule fields whose default changed in 0.2.0, with the value every config of 0.1.x meant: a flat
# file that names its rule but not these fields takes today's defaults, so loading it warns
RULE_FIELDS_BEFORE_0_2 = {
    "temperature": 1.0,
    "context_guard": 0,
    "repeats": "neutral",
    "outputs_once": False,
}


def refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of :func:`json.loads` that refuses a key named twice."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise UserError(f"key {key!r} is named twice")
        seen[key] = value
    return seen


def read_config_file(path: Path) -> dict:
    """The JSON object of a config file; a one-line error for a missing, malformed or
    ambiguous one (a key named twice)."""
    if not path.is_file():
        raise FileNotFoundError(
            f"watermark config {path} not found; give a JSON file written by "
            "WatermarkConfig.save (watermark/default_config.json is the shipped one)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=refuse_duplicates)
    except UnicodeDecodeError as err:
        raise UserError(f"watermark config {path} is not UTF-8 text") from err
    except json.JSONDecodeError as err:
        raise UserError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from err
    except UserError as err:
        raise UserError(f"{path}: {err}") from err
    if not isinstance(data, dict):
        raise UserError(f"watermark config {path} must hold a JSON object of fields")
    return data


def flat_names() -> dict[str, tuple[str, str]]:
    """``{name: (section, field)}`` of every field of every section and rule by its own name
    (where two sections share one, the first in file order: ``mapper`` is the models'), and
    of the sentence fields by their names in the files of 0.5-0.7 (:data:`NAMES_0_7`)."""
    out = {name: ("sentences", field) for name, field in NAMES_0_7.items()}
    for cls in (*PLAIN_SECTIONS.values(), *SCHEMES.values()):
        for f in fields(cls):
            out.setdefault(f.name, (cls.name, f.name))
    return out


def retired_message(key: str, value: Any = None) -> str:
    """The one line for a setting 0.8 removed (``value``: one it no longer takes) and what
    stands in its place."""
    what = f"{key}={value!r} is no longer supported" if value is not None else repr(key)
    return (
        f"{what}: {REMOVED_IN.get(key, '0.8')} removed the setting {key!r} and every config "
        f"works as {key}={RETIRED[key]!r} did; delete the key"
    )


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """Today's sections of a config in any format (module docstring); refuses what would be
    dropped or read two ways."""
    named = [k for k in data if k in SECTIONS or k == "design"]
    if not named:
        return from_flat(data, saved_every_strength(data))
    stray = [k for k in data if k not in named]
    if stray:
        if stray[0] in RETIRED:
            raise UserError(retired_message(stray[0]))
        wrong = [k for k in stray if k not in flat_names()]
        if wrong:
            raise UserError(f"unknown section {wrong[0]!r}; known: {', '.join(SECTIONS)}")
        raise UserError(
            f"key {stray[0]!r} stands beside the sections: put it in section "
            f"{flat_names()[stray[0]][0]!r} (a file is either sections or flat)"
        )
    for name in named:
        if not isinstance(data[name], dict):
            raise UserError(f"section {name!r} must be a JSON object of fields")
    old, new = format_marks(data, MARKS_0_7), format_marks(data, MARKS_0_8)
    if old and new:
        raise UserError(
            f"{old[0]} is 0.5-0.7's format and {new[0]} is 0.8's: write the file in one "
            "format (WatermarkConfig.save writes 0.8's)"
        )
    if old:
        flat = flatten_0_7(data)
        return from_flat(flat, saved_every_strength(flat))
    return {name: dict(data[name]) for name in named}


def format_marks(data: dict[str, Any], marks: tuple) -> list[str]:
    """The marks of one format that a sectioned file holds, as ``section`` or
    ``section.key``."""
    found = []
    for section, key in marks:
        if section in data and (key is None or key in data[section]):
            found.append(f"section {section!r}" if key is None else f"{section}.{key}")
    return found


def saved_every_strength(flat: dict[str, Any]) -> bool:
    """Whether flat fields are a complete save of 0.1-0.7: the rule named and every rule's
    strength written (those versions' ``save`` wrote them all, the unused ones included)."""
    return "scaling" in flat and flat.keys() >= STRENGTHS


def flatten_0_7(data: dict[str, Any]) -> dict[str, Any]:
    """The flat fields of a sectioned file of 0.5-0.7."""
    flat: dict[str, Any] = {}
    for section, part in data.items():
        known = OLD_SECTIONS.get(section)
        for key, value in part.items():
            where = next((s for s, names in OLD_SECTIONS.items() if key in names), "design")
            if (known is not None and key not in known) or (known is None and where != "design"):
                raise UserError(f"key {key!r} does not belong in section {section!r}")
            if key in flat:
                raise UserError(f"key {key!r} is named twice")
            flat[key] = value
    return flat


def from_flat(flat: dict[str, Any], complete_save: bool = False) -> dict[str, Any]:
    """Today's sections of flat fields (0.1-0.4, keygen before 0.8, or
    :meth:`~watermark.config.watermark_config.WatermarkConfig.evolve`'s): each field to its
    section, the rule's name to ``scheme.rule``. Another rule's strength is refused, except in a
    ``complete_save`` of 0.1-0.7 (:func:`saved_every_strength`), where it was never used; a
    retired setting must hold its one value."""
    where, out = flat_names(), {name: {} for name in SECTIONS}
    rule = flat.get("scaling", SCHEMES["tournament"].rule)
    if rule not in RULES:
        hint = " (removed in 0.8; the paper's form is 'paper')" if rule == "floor" else ""
        raise UserError(f"scheme.rule must be one of {RULES}, got {rule!r}{hint}")
    out["scheme"]["rule"] = rule
    own = SCHEMES[rule].strength_field
    for key, value in flat.items():
        if key in RETIRED:
            if value != RETIRED[key]:
                raise UserError(retired_message(key, value))
        elif key in STRENGTHS and key != own:
            if not complete_save:
                raise UserError(other_strength_message(key, rule))
        elif key != "scaling":
            if key not in where:
                what = "section" if isinstance(value, dict) else "watermark config key"
                raise UserError(f"unknown {what} {key!r}")
            section, name = where[key]
            out[section][name] = value
    return {k: v for k, v in out.items() if v}


def build_scheme(part: dict[str, Any]) -> Scheme:
    """The scheme of a ``scheme`` section: its ``rule``'s class with the other fields."""
    part = dict(part)
    rule = part.pop("rule", SCHEMES["tournament"].rule)
    if not isinstance(rule, str) or rule not in RULES:
        raise UserError(f"scheme.rule must be one of {RULES}, got {rule!r}")
    cls = SCHEMES[rule]
    known = [f.name for f in fields(cls)]
    for key in part:
        if key not in known:
            if key in STRENGTHS:
                raise UserError(other_strength_message(key, rule))
            if key in RETIRED:
                raise UserError(retired_message(key))
            raise UserError(
                f"unknown key {key!r} in section 'scheme'; known: rule, {', '.join(known)}"
            )
    return cls(**part)


def other_strength_message(key: str, rule: str) -> str:
    """The one line for a strength that the chosen rule does not have."""
    owner = next(r for r, cls in SCHEMES.items() if cls.strength_field == key)
    return (
        f"scheme.{key} is not a setting of rule {rule!r} (its strength is "
        f"{SCHEMES[rule].strength_field!r}); {key} is rule {owner!r}'s: name that rule "
        f"(scheme.rule, or 'scaling' in a flat file) or drop {key}"
    )


def build_section(name: str, part: dict[str, Any]) -> Any:
    """The section ``name`` of its fields; an unknown key is named."""
    cls = PLAIN_SECTIONS[name]
    known = [f.name for f in fields(cls)]
    for key, value in part.items():
        if key in REMOVED_IN and value == RETIRED[key]:
            continue  # a later version's removal: the value every config now works with
        if key in RETIRED:
            raise UserError(retired_message(key, value if key in REMOVED_IN else None))
        if key not in known:
            raise UserError(f"unknown key {key!r} in section {name!r}; known: {', '.join(known)}")
    return cls(**{k: v for k, v in part.items() if k not in REMOVED_IN})


def warn_if_0_1(path: Path, data: dict, defaults: dict[str, Any]) -> None:
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
        ", ".join(f"{n}={defaults[n]!r}" for n in missing),
        ", ".join(f"{n}={RULE_FIELDS_BEFORE_0_2[n]!r}" for n in missing),
    )
