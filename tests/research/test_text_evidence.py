""":mod:`research.text_evidence`: the simulated rewrite and the texts' exact test."""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch

from research import text_evidence as text
from research.common import section_keys
from watermark.config.watermark_config import WatermarkConfig
from watermark.sentences.significance import two_point_sf


def test_the_rewrite_keeps_or_flips_by_margin_bin() -> None:
    v = torch.tensor([[3.0, -0.1, 1.0, -1.0]])  # margins 2.4, 0.08, 0.8, 0.8
    rng = torch.Generator().manual_seed(0)
    assert torch.equal(text.rewritten(v, torch.ones(4), rng), v)
    assert torch.equal(text.rewritten(v, torch.zeros(4), rng), -v)
    only_far = text.rewritten(v, torch.tensor([1.0, 1.0, 1.0, 0.0]), rng)
    assert torch.equal(only_far, v * torch.tensor([-1.0, 1.0, 1.0, 1.0]))


def test_a_text_whose_sentences_share_a_sign_is_one_coin_per_output() -> None:
    """One target set, two sentences with the same signs hitting every target: each output is
    one coin (hits 2 or 0), so p = 2^-b, not the 2^-2b of independent sentences; with nothing
    flipped the rewrite leaves it."""
    cfg = WatermarkConfig.of(bits=3, test="hits")
    docs = [[torch.ones(2, 6), torch.ones(2, 6)]]
    key = section_keys(cfg.sentences, 1, 6)[0]
    hit = torch.where(key.targets[0], 1.0, -1.0)
    v = torch.ones(2, 6)
    v[:, key.dims] = hit
    assert math.isclose(text.text_p(key, v), 2**-3)
    assert math.isclose(text.text_p(key, v), two_point_sf(6, [(2, 0)] * 3))
    docs = [[v, v]]  # two pools of the same candidates: the text is v twice
    found = text.measure(cfg, docs, torch.ones(4), SimpleNamespace(keys=1, draws=2))
    assert found["z"] == found["z_after"] == round(text.probit(2**-3), 4)
