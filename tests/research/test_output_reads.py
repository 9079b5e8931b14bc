"""``research/output_reads.py``: the three statistics of one text's bits, by hand."""

from __future__ import annotations

import math

import pytest

from tests.helpers import experiment_script
from watermark.core.stats import green_test

reads = experiment_script("output_reads")


def test_with_one_read_per_output_all_three_statistics_agree() -> None:
    bits, gammas, dims = [1, 0, 1, 1, 0, 1], [0.5, 0.4, 0.5, 0.6, 0.5, 0.5], [3, 1, 4, 0, 5, 9]
    found = reads.score(bits, gammas, dims)
    assert found["all"] == found["once"] == green_test(bits, gammas)
    assert found["mean"][0] == pytest.approx(found["all"][0])
    assert found["bits"] == found["outputs"] == 6


def test_repeated_outputs_are_kept_once_or_averaged() -> None:
    bits, gammas, dims = [1, 1, 0, 1, 0], [0.5] * 5, [7, 7, 7, 2, 2]
    found = reads.score(bits, gammas, dims)
    assert found["once"] == green_test([1, 1], [0.5, 0.5])  # the first read of outputs 7 and 2
    # output 7: 2/3 green, output 2: 1/2; each against a null variance of 1/4
    z = ((2 / 3 - 0.5) + (0.5 - 0.5)) / math.sqrt(0.5)
    assert found["mean"][0] == pytest.approx(z)
    assert found["mean"][1] == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)))
    assert (found["bits"], found["outputs"]) == (5, 2)


def test_every_bit_of_a_span_is_kept_with_its_output() -> None:
    dims = [[5, 6], [5, 8], [9, 6]]
    assert reads._first_reads(dims, [0, 1, 2], once=True) == [0, 1, 2, 3, 4, 5]
    assert reads.READ_DIMS == [5, 6, 5, 8, 9, 6]
    assert reads.mean_test([], [], []) == (0.0, 1.0)
