"""Tests for GreenLists (watermark.core.green_lists), against brute force."""

from __future__ import annotations

import torch

from watermark.core.green_lists import GreenLists
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
        [
            [[bool(g.signs[i, g.token_maps[k, v]]) for v in range(vocab)] for k in range(layers)]
            for i in range(n)
        ]
    )
    assert torch.equal(g.mask(), brute)
    tokens = torch.tensor([0, 5, 19, 7, 7])
    assert torch.equal(g.contains(tokens), brute[torch.arange(n), :, tokens])
    assert torch.allclose(g.vocab_fraction(), brute.double().mean(-1))
    part = g.select([3, 1])
    assert torch.equal(part.signs, g.signs[[3, 1]]) and len(part) == 2
    assert g.num_lists == layers and g.vocab_size == vocab


def test_read_gathers_every_read_of_the_drawn_tokens() -> None:
    g = lists()
    shifts = torch.randint(0, 6, g.token_maps.shape, generator=torch.Generator().manual_seed(2))
    g = GreenLists(g.signs, g.token_maps, g.dim_counts, shifts)
    tokens, previous = torch.tensor([0, 5, 19, 7, 7]), torch.tensor([3, 0, 5, 19, 2])
    reads = g.read(tokens, previous)
    assert torch.equal(reads.green, g.contains(tokens))
    assert torch.equal(reads.vocab, g.vocab_fraction())
    assert torch.equal(reads.dims, g.dims(tokens))
    assert torch.equal(reads.repeat_green, g.contains_repeat(tokens, previous))
    assert torch.equal(reads.repeat_null, g.repeat_fraction())
    assert torch.equal(reads.repeat_dims, g.repeat_dims(tokens, previous))
    part = reads.select(slice(1, 3))
    assert torch.equal(part.dims, reads.dims[1:3]) and torch.equal(part.green, reads.green[1:3])
    assert g.read(tokens).repeat_green is None  # no previous tokens: first reads only
