"""``research/sentence_rewrite_sim.py``: aligning rewrites, the choice and the rewritten test."""

from __future__ import annotations

import random

import torch

from tests.helpers import experiment_script
from watermark.sentences.key import SentenceKey

sim = experiment_script("sentence_rewrite_sim")
ORIGINAL = "The bridge opened in May. It carries two lanes. Tolls pay for it."
REWRITE = "Tolls fund the crossing. Opened in May, the bridge carries two lanes."


def test_alignment_pairs_each_sentence_with_its_nearest_rewrite_and_counts_merges(tiny) -> None:
    wm = tiny.make()
    vo, vr, moved = sim.align(wm.core.semantic, [(ORIGINAL, REWRITE, 0.5)])
    assert vo.shape == vr.shape == (3, wm.core.semantic.num_dims)
    assert moved["sentences"] == 3 and moved["chains"] == 2
    assert moved["merged"] == 3 - len({tuple(r.tolist()) for r in vr})
    same, _, kept = sim.align(wm.core.semantic, [(ORIGINAL, ORIGINAL, 0.5)])
    assert kept["merged"] == 0 and kept["kept_predecessor"] == 2  # a copy keeps its order
    figures = sim.sign_figures(same, same.clone(), kept)
    assert figures["signs_kept"] == 1.0 and figures["predecessor_kept"] == 1.0


def test_the_choice_lowers_p_and_own_groups_ignore_the_predecessor() -> None:
    v = torch.randn(300, 40, generator=torch.Generator().manual_seed(0))
    for keying in ("previous", "own"):
        key = SentenceKey.of("k", 40, 16, 2, keying)
        rng = random.Random(0)
        chosen = [sim.chosen(v, key, 6, 8, rng) for _ in range(40)]
        plain = [rng.sample(range(300), 6) for _ in range(40)]
        p = sorted(sim.p_value(v[r], v[r].roll(1, 0), key) for r in chosen)
        q = sorted(sim.p_value(v[r], v[r].roll(1, 0), key) for r in plain)
        assert p[20] < q[20] / 4  # medians
    rows = chosen[0]
    shuffled = v[rows].roll(2, 0)  # other predecessors: only the previous keying cares
    assert sim.p_value(v[rows], shuffled, key) == sim.p_value(v[rows], v[rows].roll(1, 0), key)


def test_the_weighted_tests_are_exact_over_the_keys_targets() -> None:
    import itertools
    from dataclasses import replace

    v = torch.randn(5, 12, generator=torch.Generator().manual_seed(1))
    scale = v.abs().mean(0)
    for kind, context in (("linear", 0), ("llr", 1)):
        key = SentenceKey.of("k", 12, 3, context, "own")
        groups = key.text_groups(v)
        w = sim.weights(v[:, key.dims].abs() / scale[key.dims], kind)
        observed = int((w * key.hits(v, groups)).sum())
        cells = key.targets.numel()
        as_high = 0
        for bits in itertools.product([False, True], repeat=cells):  # every target assignment
            other = replace(key, targets=torch.tensor(bits).reshape(key.targets.shape))
            as_high += int((w * other.hits(v, groups)).sum()) >= observed
        assert sim.p_value(v, None, key, kind, scale) == as_high / 2**cells
    assert sim.weights(torch.tensor([0.2, 0.7, 1.5, 9.0]), "llr").tolist() == [5, 12, 20, 31]
