"""Tests for the scheme classes and the repeat policy (watermark.core.schemes)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from watermark.core.config import WatermarkConfig
from watermark.core.schemes import RULES, RepeatPolicy, Tournament, scheme_class, scheme_for


def test_each_rule_names_one_class_with_its_strength_field() -> None:
    cfg = WatermarkConfig(delta=0.5, bias=3.0, layers=4)
    fields = {name: scheme_class(name).strength_field for name in RULES}
    assert fields == {
        "paper": "delta",
        "floor": "delta",
        "additive": "bias",
        "tournament": "layers",
    }
    for name in RULES:
        scheme = scheme_for(replace(cfg, scaling=name))
        assert type(scheme).name == name
        assert scheme.strength == getattr(cfg, scheme.strength_field)
        assert scheme.lists(cfg.layers) == (4 if name == "tournament" else 1)
    with pytest.raises(ValueError, match="unknown rule 'kgw'"):
        scheme_class("kgw")


def test_scores_of_the_scored_bits() -> None:
    bits = torch.tensor([[1, 0, 1], [0, 0, 1], [1, 1, 1], [0, 0, 0]], dtype=torch.bool)
    assert Tournament(3).score(bits) == 6 / 12  # the share of all bits
    assert scheme_class("additive")(2.0).score(bits) == 2.0 * 2 / 4  # strength x first list
    empty = torch.zeros(0, 3, dtype=torch.bool)
    assert all(scheme_class(name)(1.0).score(empty) == 0.0 for name in RULES)


def test_marks_against_hand_values() -> None:
    logits = torch.tensor([[2.0, -1.0, 0.5]])
    green = torch.tensor([[[1.0, 1.0, 0.0]]])  # (B, L, N)
    assert scheme_class("paper")(1.0).mark(logits, green, 0).tolist() == [[4.0, -2.0, 0.5]]
    assert scheme_class("additive")(2.0).mark(logits, green, 0).tolist() == [[4.0, 1.0, 0.5]]
    # floor f = -1 (smallest finite logit): (l - f) * (1 + v) + f
    assert scheme_class("floor")(1.0).mark(logits, green, 0).tolist() == [[5.0, -1.0, 0.5]]
    probs = Tournament(1).mark(logits, green, 0).exp()
    assert torch.allclose(probs.sum(), torch.tensor(1.0))


def test_repeat_policy_follows_the_config() -> None:
    shipped = WatermarkConfig().repeat_policy
    assert shipped == RepeatPolicy(
        guard=4, fresh_only=True, bigram=True, keep_neutral=True, unique_tokens=True
    )
    old = WatermarkConfig().evolve(repeats="neutral", neutral="half", context_guard=0)
    assert (old.repeat_policy.bigram, old.repeat_policy.keep_neutral) == (False, False)
    assert old.repeat_policy.guard == 0
