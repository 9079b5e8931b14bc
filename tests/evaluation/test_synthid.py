"""Tests for the SynthID-Text baseline: its generations are detected, plain text is not."""

from __future__ import annotations

import random

import pytest
import torch

from evaluation.synthid import SynthIDMethod
from tests.helpers import WORDS, tiny_llama, word_tokenizer


def test_synthid_generation_is_detected_and_text_without_it_is_not() -> None:
    tok = word_tokenizer()
    model = tiny_llama(len(tok), seed=3)
    from watermark.generate.generation import generate

    method = SynthIDMethod(list(range(101, 121)), 3, tok, top_k=40, top_p=1.0)
    proc = method.processor()
    assert proc.applies_sampling_filters  # the tournament acts on the filtered distribution
    outs = generate(
        model,
        tok,
        ["river city", "the bank"],
        proc,
        max_new_tokens=150,
        top_k=40,
        seed=0,
        min_new_tokens=140,
    )
    marked = method.detect([o.text for o in outs])
    plain = method.detect([" ".join(random.Random(i).choices(WORDS, k=150)) for i in range(3)])
    assert all(d.score > 0.53 and d.z_score > 3 for d in marked), marked
    assert all(abs(d.z_score) < 3 for d in plain)
    # score = mean g-value over the non-repeated contexts and all layers
    inner = method.config.construct_processor(vocab_size=0, device="cpu")
    x = torch.tensor([[0, 0] + tok(outs[0].text, add_special_tokens=False)["input_ids"]])
    keep = inner.compute_context_repetition_mask(x)[0].bool()
    g = inner.compute_g_values(x)[0][keep]
    assert marked[0].score == pytest.approx(float(g.double().mean()))
    assert marked[0].num_scored == int(keep.sum())
