"""Every committed evaluation config keeps the cache keys it had as a flat file.

``eval_cache_keys.json`` was written by the flat config's code (before the sections), from each
``configs/evaluation/*.yaml`` with and without ``--quick``: what the keys of the generation,
attack, perplexity and similarity caches are made of, our method's generation and detection
keys for every config of ours the run makes, and the baselines' keys. The cells that the flat
files named but could not run (the floor rule, removed in 0.8; quick frontier cells without
``fresh_only`` under the default's bigram repeats) have no keys there.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evaluation.attack_stage import cache_name
from evaluation.cache_keys import detection_key, generation_key
from evaluation.config import EvalConfig
from evaluation.config_fields import evolve
from evaluation.config_stages import expand_cells

ROOT = Path(__file__).resolve().parents[2]
PINNED = json.loads((Path(__file__).parent / "eval_cache_keys.json").read_text())
# our cells that run now and did not before (their quick cells name fresh_only: true)
NEW_CELLS = {
    "eval quick": {
        'frontier {"bias": 2.0, "context_guard": 0, "filter_first": true, "fresh_only": true, '
        '"scaling": "additive"}',
        'frontier {"bias": 2.0, "context_guard": 4, "filter_first": true, "fresh_only": true, '
        '"scaling": "additive"}',
    }
}


def baseline_key(cfg: EvalConfig, name: str) -> str:
    """The cache key of a baseline (a KGW variant at its own strength), as its class makes it."""
    methods, spec = cfg.methods, cfg.methods.variants.get(name) or {}
    base = methods.base_method(name)
    gamma, delta = (
        spec.get("kgw_gamma", methods.kgw_gamma),
        spec.get("kgw_delta", methods.kgw_delta),
    )
    if base in ("kgw0", "kgw1", "kgw2"):
        return f"{base}-g{gamma}-d{delta}-k{methods.kgw_key}"
    if base == "synthid":
        keys = [(methods.kgw_key * 7919 + i) % 2**31 for i in range(methods.synthid_layers)]
        blob = ",".join(map(str, keys)).encode()
        return f"synthid-n{methods.synthid_ngram_len}-{hashlib.sha256(blob).hexdigest()[:12]}"
    return "unwatermarked"


def material(cfg: EvalConfig) -> dict:
    """What the run's cache keys are made of (the pinned file's layout)."""
    base, variants = cfg.watermark_base(), cfg.methods.variants
    names = set(cfg.table.methods) | set(cfg.frontier.baselines) | set(cfg.curves.methods)
    names |= set(cfg.spoofing.steal_methods) | set(variants)
    specs = {"ours": {}}
    for name in sorted(names):
        if cfg.methods.base_method(name) == "ours" and name != "ours":
            specs[name] = {k: v for k, v in variants[name].items() if k != "base"}
    for field, values in cfg.ablations.vary.items():
        for v in values:
            specs[f"ablation {field}={json.dumps(v, sort_keys=True)}"] = (
                v if isinstance(v, dict) else {field: v}
            )
    for cell in expand_cells(cfg.frontier.cells):
        specs[f"frontier {json.dumps(cell, sort_keys=True)}"] = cell
    ours = {}
    for label, spec in specs.items():
        wm = evolve(base, **spec)
        ours[label] = [generation_key(wm), detection_key(wm)]
    extra = [cfg.ablations.attack] if cfg.ablations.attack else []
    texts, models = cfg.texts, cfg.models
    return {
        "generation": f"{models.generator}|{texts.seed}|{texts.new_tokens}|"
        f"{texts.min_new_tokens}|{texts.batch_size}",
        "lengths": {
            "ablation_tokens": cfg.ablations.tokens,
            "spoof_tokens": cfg.spoofing.tokens,
            "spoof_boost": cfg.spoofing.steal_boost,
        },
        "oracle": models.oracle,
        "similarity": models.similarity_embedder,
        "units": [
            texts.heldout,
            texts.sources,
            texts.human_tokens,
            texts.unit_pool,
            texts.prompts,
            cfg.curves.offset,
            cfg.curves.prompts,
            cfg.curves.negatives,
            cfg.frontier.prompts,
            cfg.ablations.prompts,
            cfg.spoofing.texts,
            cfg.spoofing.steal_texts,
            cfg.spoofing.steal_prompts,
        ],
        "ours": ours,
        "baselines": {n: baseline_key(cfg, n) for n in sorted(names) if n not in specs},
        "attacks": [
            f"{cache_name(a, models.llm_paraphraser)}|{float(a['strength'])}|{texts.seed}"
            for a in cfg.table.attacks + cfg.curves.attacks + extra
        ],
        "paraphrase_limit": cfg.table.paraphrase_limit,
        "cache_seeds": cfg.cache_seeds,
    }


def test_every_committed_config_is_pinned() -> None:
    names = {p.stem for p in (ROOT / "configs" / "evaluation").glob("*.yaml")}
    assert set(PINNED) == names | {f"{n} quick" for n in names}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_cache_keys_of_a_committed_config_are_the_flat_files(name: str) -> None:
    stem, _, quick = name.partition(" ")
    cfg = EvalConfig.load(ROOT / "configs" / "evaluation" / f"{stem}.yaml", quick=bool(quick))
    got, pinned = material(cfg), dict(PINNED[name])
    ours, pinned_ours, new = got.pop("ours"), pinned.pop("ours"), NEW_CELLS.get(name, set())
    assert set(ours) - set(pinned_ours) == new
    assert {k: v for k, v in ours.items() if k not in new} == pinned_ours
    assert got == pinned
