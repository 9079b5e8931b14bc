"""What an evaluation config may name, and the checks its fields pass.

The method and attack names (:data:`METHODS`, :data:`ATTACKS`, ...) and :func:`check_config`,
which :class:`evaluation.config.EvalConfig` runs on every instance: known methods, well-formed
attacks, variants of a known base, known watermark config fields, and the simple ranges. The
checks read the config's fields only (``cfg`` is an ``EvalConfig``, not imported here: that
module imports this one).
"""

from __future__ import annotations

import re
from typing import Any

from evaluation.config_fields import field_names

METHODS = ("unwatermarked", "ours", "kgw0", "kgw1", "kgw2", "synthid")
KGW_BASES = ("kgw0", "kgw1", "kgw2")  # baselines a variant may sweep
ATTACKS = (
    "deletion",
    "synonym",
    "paraphrase",
    "copy_paste",
    "truncate",
    "paraphrase_synonym",
    "llm_paraphrase",
    "llm_paraphrase_synonym",
    "llm_round_trip",
    "llm_forced",
)
WHOLE_TEXT = ("llm_paraphrase", "llm_round_trip", "llm_forced")  # rewrite the whole text


def check_config(cfg: Any) -> None:
    """Raise ValueError on the first field of ``cfg`` that is out of bounds."""
    _check_methods(cfg)
    extra = [cfg.ablation_attack] if cfg.ablation_attack else []
    for attack in cfg.attacks + cfg.curve_attacks + extra:
        _check_attack(attack)
    _check_variants_and_fields(cfg)
    if cfg.unit_pool not in ("long", "short"):
        raise ValueError(f"unit_pool must be 'long' or 'short', got {cfg.unit_pool!r}")
    if cfg.device != "auto" and not re.fullmatch(r"cpu|cuda(:\d+)?", cfg.device):
        raise ValueError(f"device must be cpu, cuda, cuda:N or auto, got {cfg.device!r}")
    if cfg.oracle == cfg.generator:
        raise ValueError("the perplexity oracle must not be the generator")
    if cfg.llm_paraphrase_batch < 1:
        raise ValueError(f"llm_paraphrase_batch must be >= 1, got {cfg.llm_paraphrase_batch}")
    if not 0 < cfg.min_new_tokens <= cfg.new_tokens:
        raise ValueError("need 0 < min_new_tokens <= new_tokens")


def _check_methods(cfg: Any) -> None:
    clash = sorted(set(cfg.variants) & set(METHODS))
    if clash:
        raise ValueError(f"variant names {clash} clash with methods {list(METHODS)}")
    unknown = sorted(set(cfg.methods + cfg.frontier_baselines) - set(METHODS))
    unknown += sorted(set(cfg.curve_methods) - set(METHODS) - set(cfg.variants))
    named = set(cfg.curve_also_against) | ({cfg.curve_baseline} - {""})
    missing = sorted(named - set(cfg.curve_methods))
    if missing and not cfg.curve_rows_from:
        raise ValueError(f"curve_baseline/curve_also_against {missing} are not in curve_methods")
    if unknown:
        raise ValueError(
            f"unknown methods {unknown}; known: {list(METHODS)}, variants {list(cfg.variants)}"
        )


def _check_attack(attack: dict[str, Any]) -> None:
    """Raise ValueError unless ``attack`` is a known kind with a strength and valid options."""
    passes = attack.get("passes", 1)
    if attack.get("kind") not in ATTACKS or "strength" not in attack:
        raise ValueError(f"bad attack {attack!r}: need a kind in {list(ATTACKS)} and a strength")
    if not isinstance(passes, int) or isinstance(passes, bool) or passes < 1:
        raise ValueError(f"bad attack {attack!r}: passes must be an integer >= 1")
    if attack["kind"] in WHOLE_TEXT and float(attack["strength"]) != 1.0:
        raise ValueError(
            f"bad attack {attack!r}: {attack['kind']} rewrites the whole "
            "text, its strength must be 1.0"
        )
    if not isinstance(attack.get("paraphrase_after", False), bool):
        raise ValueError(f"bad attack {attack!r}: paraphrase_after must be true or false")
    sampled = attack.get("temperature", 0.0), attack.get("retries", 0)
    if not isinstance(attack.get("list_facts", False), bool):
        raise ValueError(f"bad attack {attack!r}: list_facts must be true or false")
    if (sampled[1] or attack.get("list_facts")) and attack["kind"] != "llm_forced":
        raise ValueError(f"bad attack {attack!r}: only llm_forced is retried or lists facts")
    if sampled[0] and attack["kind"] not in ("llm_forced", "paraphrase"):
        raise ValueError(f"bad attack {attack!r}: only llm_forced and paraphrase are sampled")
    if not (isinstance(sampled[0], (int, float)) and 0 <= sampled[0] <= 2):
        raise ValueError(f"bad attack {attack!r}: temperature must be in [0, 2]")
    if not isinstance(sampled[1], int) or sampled[1] < 0 or (sampled[1] and not sampled[0]):
        raise ValueError(
            f"bad attack {attack!r}: retries is an integer >= 0, for a temperature > 0"
        )


def _check_variants_and_fields(cfg: Any) -> None:
    known = set(field_names())
    several = [v for values in cfg.ablations.values() for v in values if isinstance(v, dict)]
    ours = [v for name, v in cfg.variants.items() if cfg.base_method(name) == "ours"]
    for name, spec in cfg.variants.items():
        base = cfg.base_method(name)
        if base not in ("ours", *KGW_BASES):
            raise ValueError(f"variant {name}: base {base!r} is not ours or {KGW_BASES}")
        bad = sorted(set(spec) - {"base", "kgw_gamma", "kgw_delta"})
        if base != "ours" and bad:
            raise ValueError(
                f"variant {name}: a {base} variant sets kgw_gamma / kgw_delta, not {bad}"
            )
    for spec in (
        [cfg.ablations]
        + several
        + cfg.frontier
        + [{k: v for k, v in spec.items() if k != "base"} for spec in ours]
    ):
        bad = sorted(set(spec) - known)
        if bad:
            raise ValueError(f"unknown watermark config fields {bad}; known: {sorted(known)}")
