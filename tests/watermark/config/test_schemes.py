"""Tests for the scheme classes and the repeat policy (watermark.config.schemes)."""

from __future__ import annotations

import pytest
import torch

from watermark.config.schemes import RULES, RepeatPolicy, Tournament, scheme_class
from watermark.config.watermark_config import WatermarkConfig


def test_each_rule_names_one_class_with_its_strength_field() -> None:
    fields = {name: scheme_class(name).strength_field for name in RULES}
    assert fields == {"paper": "delta", "additive": "bias", "tournament": "layers"}
    for name, strength in (("paper", 0.5), ("additive", 3.0), ("tournament", 4)):
        cfg = WatermarkConfig.of(rule=name, **{fields[name]: strength})
        assert type(cfg.scheme).rule == name and cfg.scheme.strength == strength
        assert cfg.scheme.lists() == (4 if name == "tournament" else 1)
    with pytest.raises(ValueError, match="unknown rule 'kgw'"):
        scheme_class("kgw")


def test_scores_of_the_scored_bits() -> None:
    bits = torch.tensor([[1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 0, 0]], dtype=torch.bool)
    assert Tournament(layers=3).score(bits) == 6 / 12  # the share of all bits
    assert scheme_class("additive")(bias=2.0).score(bits) == 2.0 * 2 / 4  # strength x first list
    empty = torch.zeros(0, 3, dtype=torch.bool)
    assert all(scheme_class(name)().score(empty) == 0.0 for name in RULES)


def test_repeat_policy_follows_the_config() -> None:
    shipped = WatermarkConfig().repeat_policy
    assert shipped == RepeatPolicy(
        guard=4, fresh_only=True, bigram=True, keep_neutral=True, unique_tokens=True
    )
    old = WatermarkConfig().evolve(repeats="neutral", neutral="half", context_guard=0)
    assert (old.repeat_policy.bigram, old.repeat_policy.keep_neutral) == (False, False)
    assert old.repeat_policy.guard == 0
