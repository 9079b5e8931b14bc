"""Tests for the KGW baselines: statistics, green lists, generation vs detection."""

from __future__ import annotations

import random

import pytest
import torch

from evaluation.methods import KGWGreenLists, KGWMethod
from tests.helpers import WORDS, tiny_llama, word_tokenizer


def test_kgw_green_lists() -> None:
    lists = KGWGreenLists(1000, 0.5, key=7, context=2)
    a, b = lists.mask([1, 2, 3]), lists.mask([9, 2, 3])
    assert int(a.sum()) == 500 and torch.equal(a, b)  # only the last two ids matter
    assert not torch.equal(a, lists.mask([2, 4]))
    fixed = KGWGreenLists(1000, 0.5, key=7, context=0)
    assert torch.equal(fixed.mask([1]), fixed.mask([5, 6, 7]))
    assert not torch.equal(fixed.mask([]), KGWGreenLists(1000, 0.5, key=8, context=0).mask([]))


def test_transformers_lefthash_ignores_all_but_the_last_token() -> None:
    """Why KGW-2 is ours: transformers' lefthash seeds with input_seq[-1] whatever the width."""
    from transformers.generation.logits_process import WatermarkLogitsProcessor

    proc = WatermarkLogitsProcessor(500, "cpu", greenlist_ratio=0.5, context_width=2)
    one = proc._get_greenlist_ids(torch.tensor([11, 42]))
    other = proc._get_greenlist_ids(torch.tensor([99, 42]))
    assert torch.equal(torch.sort(one).values, torch.sort(other).values)


def test_kgw_generation_is_detected_and_text_without_it_is_not() -> None:
    tok = word_tokenizer()
    model = tiny_llama(len(tok), seed=3)
    from watermark.generate.generation import generate

    for name, context in (("kgw0", 0), ("kgw2", 2)):
        method = KGWMethod(name, tok, len(tok), 0.5, 6.0, key=5, context=context)
        outs = generate(
            model,
            tok,
            ["river city", "the bank"],
            method.processor(),
            max_new_tokens=60,
            top_k=20,
            seed=0,
            min_new_tokens=50,
        )
        marked = method.detect([o.text for o in outs])
        plain = method.detect([" ".join(random.Random(i).choices(WORDS, k=60)) for i in range(3)])
        assert all(d.z_score > 3 for d in marked), (name, marked)
        assert all(abs(d.z_score) < 3 for d in plain)
        # z recomputed by hand from the green lists over distinct (context, token) units
        ids = tok(outs[0].text, add_special_tokens=False)["input_ids"]
        units = {tuple(ids[i - context : i + 1]) for i in range(context, len(ids))}
        green = sum(bool(method.green_mask(u[:-1])[u[-1]]) for u in units)
        n = len(units)
        assert marked[0].z_score == pytest.approx((green - 0.5 * n) / (0.25 * n) ** 0.5)
