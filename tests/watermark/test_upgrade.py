"""Upgrading from version 0.1: text watermarked under the old shipped default (the additive
rule, kept as ``configs/watermark-additive.json``) is detected with that file's settings; the new
default reads it with less evidence (its first green list is the old rule's, the other lists and
the repeats' bits are not)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from tests.helpers import SPECIAL_IDS
from watermark.config import DEFAULT_CONFIG_PATH, PREVIOUS_DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
RULE = (*PREVIOUS_DEFAULTS, "bias", "filter_first", "fresh_only")
PROMPTS = ["the river", "police said", "the price of water", "a city", "the team", "in the news"]


def rule_of(path: Path) -> dict:
    data = json.loads(path.read_text())
    return {name: data[name] for name in RULE}


def test_old_default_text_is_detected_with_the_additive_config(tiny: SimpleNamespace) -> None:
    old, new = rule_of(ROOT / "configs" / "watermark-additive.json"), rule_of(DEFAULT_CONFIG_PATH)
    assert old == {**new, **PREVIOUS_DEFAULTS, "bias": old["bias"]}  # only the rule moved
    assert old != new
    # generated with a stronger bias than the file's, as a tiny model's texts are short (the
    # bias does not enter detection); detected with exactly the file's rule
    strong = tiny.make(**{**old, "bias": 4.0}, window_sizes=[])
    texts = [o.text for o in strong.generate(tiny.gen, PROMPTS * 2, max_new_tokens=60, seed=5,
                                             suppress_tokens=SPECIAL_IDS)]  # fmt: skip
    with_old = tiny.make(**old, window_sizes=[]).detect(texts)
    with_new = tiny.make(**new, window_sizes=[]).detect(texts)
    mean = lambda rs: sum(r.z_score for r in rs) / len(rs)  # noqa: E731
    print(json.dumps({"z_old": round(mean(with_old), 2), "z_new": round(mean(with_new), 2)}))
    assert mean(with_old) > 1.5
    assert mean(with_new) < mean(with_old) - 0.5
