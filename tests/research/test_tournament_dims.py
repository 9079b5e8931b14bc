"""``research/tournament_dims.py``: the bits it reads back are the detector's, and the second
test keeps the first bit of each mapper output only."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import experiment_script
from watermark.core.green_lists import GreenLists
from watermark.core.stats import green_test

dims = experiment_script("tournament_dims")


def test_coded_bits_are_the_green_lists_bits() -> None:
    g = torch.Generator().manual_seed(0)
    signs = torch.rand(5, 8, generator=g) > 0.5
    maps = torch.randint(0, 8, (3, 20), generator=g)
    shifts = torch.randint(0, 8, (3, 20), generator=g)
    lists = GreenLists(signs, maps, torch.bincount(maps[0], minlength=8).expand(3, 8), shifts)
    tokens, prev = torch.tensor([1, 4, 9, 9, 19]), torch.tensor([0, 1, 4, 9, 9])
    coded = dims._contains(lists, tokens)
    assert torch.equal(coded & 1, lists.contains(tokens).long())
    assert torch.equal(coded >> 1, maps[:, tokens].T)
    again = dims._contains_repeat(lists, tokens, prev)
    assert torch.equal(again & 1, lists.contains_repeat(tokens, prev).long())


def test_each_output_counts_once() -> None:
    dims.RECORDS.clear()
    z, p = dims._green_test([2 * 5 + 1, 2 * 5 + 1, 2 * 7 + 0, 2 * 3 + 1], [0.5] * 4)
    assert (z, p) == green_test([1, 1, 0, 1], [0.5] * 4)  # the detector gets the shipped test
    (rec,) = dims.RECORDS
    assert (rec["bits"], rec["bits_once"]) == (4, 3)
    assert rec["p_once"] == pytest.approx(green_test([1, 0, 1], [0.5] * 3)[1])
