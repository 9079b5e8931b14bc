"""Reading an evaluation config file: YAML in sections, ``quick:``, ``--set``, and flat files.

A file holds the top-level keys (:data:`TOP`) and the sections
(:data:`evaluation.config_stages.SECTIONS`), each a mapping of its fields. Its optional
``quick:`` mapping holds, in the same sections, what ``--quick`` changes on top;
``--set SECTION.FIELD=VALUE`` changes one field after that (the value read as YAML).

A flat file, with every field at the top (the format before sections, as ``results.json``
files of those runs hold it), is read in one step by :data:`FLAT`, which names each flat key's
section and field; the reader logs a note. A file that mixes the two formats is refused.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml

from evaluation.config_stages import SECTIONS

logger = logging.getLogger(__name__)

TOP = ("name", "out_dir", "cache_seeds")  # the keys outside the sections
# a flat file's key -> (section, field)
FLAT = {
    "watermark_config": ("models", "watermark_config"),
    "generator": ("models", "generator"),
    "oracle": ("models", "oracle"),
    "paraphraser": ("models", "paraphraser"),
    "llm_paraphraser": ("models", "llm_paraphraser"),
    "llm_paraphrase_batch": ("models", "llm_paraphrase_batch"),
    "similarity_embedder": ("models", "similarity_embedder"),
    "device": ("models", "device"),
    "threads": ("models", "threads"),
    "heldout": ("texts", "heldout"),
    "sources": ("texts", "sources"),
    "unit_pool": ("texts", "unit_pool"),
    "num_prompts": ("texts", "prompts"),
    "human_tokens": ("texts", "human_tokens"),
    "new_tokens": ("texts", "new_tokens"),
    "min_new_tokens": ("texts", "min_new_tokens"),
    "batch_size": ("texts", "batch_size"),
    "seed": ("texts", "seed"),
    "kgw_gamma": ("methods", "kgw_gamma"),
    "kgw_delta": ("methods", "kgw_delta"),
    "kgw_key": ("methods", "kgw_key"),
    "synthid_layers": ("methods", "synthid_layers"),
    "synthid_ngram_len": ("methods", "synthid_ngram_len"),
    "variants": ("methods", "variants"),
    "methods": ("table", "methods"),
    "attacks": ("table", "attacks"),
    "paraphrase_limit": ("table", "paraphrase_limit"),
    "green_share_texts": ("table", "green_share_texts"),
    "spoof_texts": ("spoofing", "texts"),
    "spoof_tokens": ("spoofing", "tokens"),
    "spoof_common": ("spoofing", "common"),
    "spoof_top": ("spoofing", "top"),
    "steal_texts": ("spoofing", "steal_texts"),
    "steal_methods": ("spoofing", "steal_methods"),
    "spoof_prompts": ("spoofing", "steal_prompts"),
    "spoof_boost": ("spoofing", "steal_boost"),
    "frontier_prompts": ("frontier", "prompts"),
    "frontier_baselines": ("frontier", "baselines"),
    "frontier": ("frontier", "cells"),
    "curve_prompts": ("curves", "prompts"),
    "curve_attacked": ("curves", "attacked"),
    "curve_negatives": ("curves", "negatives"),
    "curve_offset": ("curves", "offset"),
    "curve_detect": ("curves", "detect"),
    "curve_methods": ("curves", "methods"),
    "curve_attacks": ("curves", "attacks"),
    "curve_matched_only": ("curves", "matched_only"),
    "curve_baseline": ("curves", "baseline"),
    "curve_also_against": ("curves", "also_against"),
    "curve_rows_from": ("curves", "rows_from"),
    "map_with": ("curves", "map_with"),
    "ablation_prompts": ("ablations", "prompts"),
    "ablation_tokens": ("ablations", "tokens"),
    "ablation_attack": ("ablations", "attack"),
    "ablations": ("ablations", "vary"),
}


def is_flat(data: dict[str, Any]) -> bool:
    """Whether ``data`` is a flat config (a key that only a flat file has); raises ValueError
    where it also holds a section that no flat key shares a name with."""
    flat = sorted(k for k in data if k in FLAT and k not in SECTIONS)
    if not flat:
        return False
    sections = sorted(k for k in data if k in SECTIONS and k not in FLAT)
    if sections:
        raise ValueError(
            f"key {flat[0]!r} is a flat key beside section {sections[0]!r}: write it as "
            f"{'.'.join(FLAT[flat[0]])} (a file is either sections or flat)"
        )
    return True


def from_flat(data: dict[str, Any]) -> dict[str, Any]:
    """The sections of a flat config (its ``quick`` too); unknown keys are kept at the top,
    where reading them fails."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "quick" and isinstance(value, dict):
            out[key] = from_flat(value)
        elif key in FLAT:
            section, name = FLAT[key]
            out.setdefault(section, {})[name] = value
        else:
            out[key] = value
    return out


def sections_of(data: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``data`` in sections: a flat config read by :data:`FLAT` (with a logged note naming
    ``where``, if given), a config in sections as it is."""
    if not is_flat(data):
        return data
    if where:
        logger.warning(
            "%s is a flat evaluation config (every field at the top): read in sections; write "
            "it in sections (docs/evaluation.md lists where each flat key went)",
            where,
        )
    return from_flat(data)


def merged(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``changes`` (in sections): a section's fields replace its own one by one,
    a top-level key replaces the key."""
    out = dict(data)
    for key, value in changes.items():
        both = key in SECTIONS and isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = {**out[key], **value} if both else value
    return out


def key_values(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as a dict, each value read as YAML (``8``, ``[a, b]``, ``0.5``);
    a string without ``=`` raises ValueError."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set {item!r}: expected KEY=VALUE")
        out[key.strip()] = yaml.safe_load(value)
    return out


def settings(items: list[str]) -> dict[str, Any]:
    """``--set`` items in sections: ``SECTION.FIELD=VALUE`` or a top-level ``KEY=VALUE``; a
    flat key (``curve_prompts``) is read by :data:`FLAT`, with a note."""
    out: dict[str, Any] = {}
    for key, value in key_values(items).items():
        section, dot, name = key.partition(".")
        if not dot and key in FLAT:
            (section, name), dot = FLAT[key], "."
            logger.warning("--set %s: a flat key, read as %s.%s", key, section, name)
        if dot and section in SECTIONS:
            out.setdefault(section, {})[name] = value
        elif not dot and key in TOP:
            out[key] = value
        else:
            raise ValueError(
                f"--set {key!r}: expected SECTION.FIELD=VALUE (sections {list(SECTIONS)}) or "
                f"one of {list(TOP)}"
            )
    return out


def read_file(path: Path, quick: bool = False, overrides: list[str] | None = None) -> dict:
    """The sections of a YAML file, its ``quick`` changes applied if asked, then ``overrides``
    (``--set`` items)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of sections")
    data = sections_of(data, str(path))
    changes = data.pop("quick", None) or {}
    if not isinstance(changes, dict):
        raise ValueError(f"{path}: quick must be a mapping of sections")
    if quick:
        data = merged(data, changes)
    return merged(data, settings(overrides or []))
