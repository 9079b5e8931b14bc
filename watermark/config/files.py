"""Reading a watermark config file, and the upgrade of earlier formats: one step per format.

A file of today's format (0.9 on) is a JSON object of sections (:data:`SECTIONS`), each an object
of fields by their own names. Files of earlier versions load through :func:`upgrade`, which
finds the format and runs its step, each step a small function that alone knows its format's
names and hands on the next format:

* :func:`from_0_4`: the flat files of 0.1-0.4 (and of ``keygen`` before 0.8), every field at the
  top level, the rule as ``scaling``, the sentence fields by their names of 0.5-0.7
  (:data:`NAMES_0_7`), the settings 0.8 retired (:data:`RETIRED`) at their one value; to 0.8's
  sections;
* :func:`from_0_7`: the sectioned files of 0.5-0.7 (``scheme`` with ``scaling`` and every rule's
  strength side by side, ``sentence_bits``, a ``design`` section of fixed switches); to the flat
  fields of :func:`from_0_4`;
* :func:`from_0_8`: 0.8's sections, whose ``sentences.stop_at`` 0.9 removed; to today's.

A setting is never dropped in silence: a file that mixes formats (flat keys beside sections, or
0.5-0.7's ``scheme.scaling`` beside 0.8's ``sentences``), names a key twice, names a section
that does not exist or a strength the chosen rule does not have is refused with one line naming
the key. The one exception is a complete save of 0.1-0.7: it named its rule and wrote every
rule's strength, and the others were unused by the version that wrote them too
(:func:`saved_every_strength`). :func:`from_flat` reads fields by their own names (the rule as
``rule``, what ``WatermarkConfig.evolve`` takes), :func:`build_section` and :func:`build_scheme`
today's sections: none of them knows an old name.
"""

from __future__ import annotations

import json
import logging
from dataclasses import fields
from pathlib import Path
from typing import Any

from watermark.base import UserError
from watermark.config.schemes import RULES, SCHEMES, Scheme, Tournament
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
    "models": ("generator", "measurement_model", "embedder", "mapper", "mapper_digest",
               "embedder_digest"),
    "keys": ("key", "old_keys"),
    "scheme": ("scaling", "layers", "bias", "delta", "alpha", "temperature", "top_k", "top_p",
               "sentence_bits"),
    "detection": ("target_fpr", "window_sizes"),
    "runtime": ("compute_dtype", "embed_batch_size"),
}  # fmt: skip
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
        raise FileNotFoundError(f"watermark config {path} not found (give a file or shipped name)")
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
    (where two sections share one, the first in file order: ``mapper`` is the models')."""
    out: dict[str, tuple[str, str]] = {}
    for cls in (*PLAIN_SECTIONS.values(), *SCHEMES.values()):
        for f in fields(cls):
            out.setdefault(f.name, (cls.name, f.name))
    return out


def retired_message(key: str, value: Any = None) -> str:
    """The one line for a retired setting (``value``: one it no longer takes) and what stands
    in its place."""
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
        return from_0_8(from_0_4(data))
    stray = [k for k in data if k not in named]
    if stray:
        if stray[0] in RETIRED:
            raise UserError(retired_message(stray[0]))
        wrong = [k for k in stray if k not in flat_names() and k not in NAMES_0_7]
        if wrong:
            raise UserError(f"unknown section {wrong[0]!r}; known: {', '.join(SECTIONS)}")
        where = flat_names().get(stray[0], ("sentences",))[0]
        raise UserError(
            f"key {stray[0]!r} stands beside the sections: put it in section {where!r} (a "
            "file is either sections or flat)"
        )
    for name in named:
        if not isinstance(data[name], dict):
            raise UserError(f"section {name!r} must be a JSON object of fields")
    old, new = format_marks(data, MARKS_0_7), format_marks(data, MARKS_0_8)
    if old and new:
        raise UserError(
            f"{old[0]} is 0.5-0.7's format and {new[0]} is 0.8's: write the file in one "
            "format (WatermarkConfig.save writes today's)"
        )
    if old:
        return from_0_8(from_0_4(from_0_7(data)))
    return from_0_8({name: dict(data[name]) for name in named})


def from_0_4(flat: dict[str, Any]) -> dict[str, Any]:
    """0.8's sections of the flat fields of 0.1-0.4 (module docstring): the sentence fields
    renamed, the rule's strength kept and, in a complete save (:func:`saved_every_strength`),
    the other rules' dropped; a retired setting must hold its one value."""
    if "rule" in flat:  # today's name, which no flat file held
        raise UserError("unknown watermark config key 'rule'")
    rule = flat.get("scaling")
    if rule == "floor":
        raise UserError(
            f"scheme.rule must be one of {RULES}, got 'floor' (removed in 0.8; the "
            "paper's form is 'paper')"
        )
    own = SCHEMES[rule].strength_field if rule in RULES else None
    complete, out = saved_every_strength(flat), {}
    for key, value in flat.items():
        if key in RETIRED:
            if value != RETIRED[key]:
                raise UserError(retired_message(key, value))
        elif not (complete and key in STRENGTHS and key != own):
            out[{"scaling": "rule", **NAMES_0_7}.get(key, key)] = value
    return from_flat(out)


def from_0_7(data: dict[str, Any]) -> dict[str, Any]:
    """The flat fields of a sectioned file of 0.5-0.7 (:func:`from_0_4` reads them on)."""
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


def from_0_8(sections: dict[str, Any]) -> dict[str, Any]:
    """Today's sections of 0.8's: ``sentences.stop_at``, which 0.9 removed, dropped where it
    holds the one value every config now works with; any other retired setting refused."""
    out = {}
    for name, part in sections.items():
        for key, value in part.items():
            if key in RETIRED and not (key in REMOVED_IN and value == RETIRED[key]):
                raise UserError(retired_message(key, value if key in REMOVED_IN else None))
        out[name] = {k: v for k, v in part.items() if k not in RETIRED}
    return out


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


def from_flat(flat: dict[str, Any]) -> dict[str, Any]:
    """Today's sections of fields by their own names (what ``WatermarkConfig.evolve`` and ``of``
    take, and :func:`from_0_4` hands on): each field to its section, ``rule`` to
    ``scheme.rule``; another rule's strength is refused."""
    where, out = flat_names(), {name: {} for name in SECTIONS}
    rule = flat.get("rule", Tournament.rule)
    if rule not in RULES:
        raise UserError(f"scheme.rule must be one of {RULES}, got {rule!r}")
    out["scheme"]["rule"] = rule
    own = SCHEMES[rule].strength_field
    for key, value in flat.items():
        if key in STRENGTHS and key != own:
            raise UserError(other_strength_message(key, rule))
        if key != "rule":
            if key not in where and isinstance(value, dict):
                raise UserError(f"unknown section {key!r}; known: {', '.join(SECTIONS)}")
            if key not in where:
                raise UserError(f"unknown watermark config key {key!r}")
            section, name = where[key]
            out[section][name] = value
    return {k: v for k, v in out.items() if v}


def build_scheme(part: dict[str, Any]) -> Scheme:
    """The scheme of a ``scheme`` section: its ``rule``'s class with the other fields."""
    part = dict(part)
    rule = part.pop("rule", Tournament.rule)
    if not isinstance(rule, str) or rule not in RULES:
        raise UserError(f"scheme.rule must be one of {RULES}, got {rule!r}")
    cls = SCHEMES[rule]
    known = [f.name for f in fields(cls)]
    for key in part:
        if key not in known:
            if key in STRENGTHS:
                raise UserError(other_strength_message(key, rule))
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
    for key in part:
        if key not in known:
            raise UserError(f"unknown key {key!r} in section {name!r}; known: {', '.join(known)}")
    return cls(**part)


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
