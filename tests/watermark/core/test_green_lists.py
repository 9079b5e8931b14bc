"""Tests for GreenLists (watermark.core.green_lists) and the core's StageTimer, against brute
force."""

from __future__ import annotations

import torch

from watermark.core.green_lists import GreenLists
from watermark.core.timer import StageTimer
from watermark.core.token_map import tokens_per_dim


def lists(n: int = 5, dims: int = 6, vocab: int = 20, layers: int = 2) -> GreenLists:
    gen = torch.Generator().manual_seed(0)
    maps = torch.randint(0, dims, (layers, vocab), generator=gen)
    counts = torch.stack([tokens_per_dim(m, dims) for m in maps])
    return GreenLists(torch.rand(n, dims, generator=gen) > 0.5, maps, counts)


def test_operations_match_brute_force() -> None:
    g = lists()
    n, (layers, vocab) = len(g), g.token_maps.shape
    brute = torch.tensor(
        [[[bool(g.signs[i, g.token_maps[k, v]]) for v in range(vocab)] for k in range(layers)]
         for i in range(n)]
    )  # fmt: skip
    assert torch.equal(g.mask(), brute)
    tokens = torch.tensor([0, 5, 19, 7, 7])
    assert torch.equal(g.contains(tokens), brute[torch.arange(n), :, tokens])
    assert torch.allclose(g.vocab_fraction(), brute.double().mean(-1))
    probs = torch.softmax(torch.randn(n, vocab, generator=torch.Generator().manual_seed(1)), -1)
    expected = (brute.double() * probs.double()[:, None, :]).sum(-1)
    assert torch.allclose(g.green_mass(probs), expected)
    part = g.select([3, 1])
    assert torch.equal(part.signs, g.signs[[3, 1]]) and len(part) == 2
    assert g.num_lists == layers and g.vocab_size == vocab


def test_core_timer(tiny) -> None:
    wm = tiny.make()
    wm.core.timer.reset()
    wm.detect(["river bank city water stone tree river bank city water stone tree " * 2])
    assert {"mm", "embed", "map"} <= set(wm.core.timer.totals())


def test_stage_timer_accumulates() -> None:
    timer = StageTimer()
    for _ in range(2):
        with timer.stage("a"):
            pass
    assert set(timer.totals()) == {"a"} and timer.totals()["a"] >= 0
    timer.reset()
    assert timer.totals() == {}
