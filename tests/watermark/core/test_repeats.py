"""Tests for the repeats the scoring core treats specially: the loop penalty against the
step-by-step reference, and its config checks."""

from __future__ import annotations

import random

import pytest
import torch

from tests import reference
from watermark.config.watermark_config import WatermarkConfig
from watermark.core.repeats import LOOP_RUN_CAP, earlier_runs, loop_penalties


@pytest.mark.parametrize("h", [1, 2, 4])
def test_loop_penalties_match_reference(h: int) -> None:
    """Loopy random rows of several lengths: the batched penalties equal the reference's."""
    rng = random.Random(h)
    vocab = 7
    for n in (0, h, h + 1, 12, 40, 80):
        rows = []
        for _ in range(5):
            cycle = [rng.randrange(vocab) for _ in range(rng.randint(1, 6))]
            rows.append(
                [
                    cycle[i % len(cycle)] if rng.random() < 0.8 else rng.randrange(vocab)
                    for i in range(n)
                ]
            )
        gen = torch.tensor(rows, dtype=torch.long).reshape(5, n)
        got = loop_penalties(gen, earlier_runs(gen, h), h, vocab, 0.75)
        got = torch.zeros(5, vocab) if got is None else got  # None: no row repeats
        for b, row in enumerate(rows):
            want = torch.zeros(vocab)
            for token, loss in reference.loop_penalty(row, h, 0.75).items():
                want[token] = loss
            assert torch.equal(got[b], want), (n, b, row)
        # a row is penalised exactly where the context guard closes
        assert torch.equal(got.gt(0).any(1), earlier_runs(gen, h).any(-1))


def test_loop_penalty_grows_with_the_run() -> None:
    """A phrase circling for longer costs its continuation more, up to the cap."""
    phrase = [5, 6, 7, 8, 9]
    short = torch.tensor([[1, 2] + phrase + phrase[:4]])
    long = torch.tensor([[1, 2] + phrase * 10 + phrase[:4]])
    h, lam = 4, 0.5

    def penalties(gen: torch.Tensor, penalty: float) -> torch.Tensor | None:
        return loop_penalties(gen, earlier_runs(gen, h), h, 10, penalty)

    assert penalties(short, lam)[0, 9].item() == pytest.approx(lam)
    assert penalties(long, lam)[0, 9].item() == pytest.approx(lam * (LOOP_RUN_CAP - h + 1))
    assert penalties(long, 0.0) is None
    assert penalties(torch.tensor([[1, 2, 3, 4, 5, 6]]), lam) is None


def test_loop_penalty_config_checks() -> None:
    assert WatermarkConfig.of(loop_penalty=1.0).scheme.loop_penalty == 1.0
    with pytest.raises(ValueError, match="loop_penalty"):
        WatermarkConfig.of(loop_penalty=-1.0)
    assert WatermarkConfig.default().scheme.loop_penalty == 0.5  # on in the shipped default (0.7)
