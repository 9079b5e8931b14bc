"""Tests for the quality/power frontier helpers (evaluation.frontier)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.config_stages import expand_cells
from evaluation.frontier import cell_label, distinct_n, rule_label
from evaluation.metrics import tpr_at


def test_frontier_helpers() -> None:
    cells = expand_cells(
        [
            {"scaling": "additive", "bias": [1.0, 2.0], "context_guard": [0, 4]},
            {"scaling": "tournament", "layers": 2, "filter_first": True},
        ]
    )
    assert len(cells) == 5 and cells[1] == {"scaling": "additive", "bias": 1.0, "context_guard": 4}
    assert cell_label(cells[0]) == "additive, bias=1.0"
    assert cell_label(cells[1]) == "additive, bias=1.0, guard=4"
    assert cell_label(cells[4]) == "tournament, layers=2, filter first"
    wm = {
        "scaling": "tournament",
        "layers": 30,
        "bias": 2.0,
        "delta": 1.5,
        "filter_first": True,
        "context_guard": 4,
        "fresh_only": False,
    }
    assert rule_label(wm) == "tournament, layers=30, filter first, guard=4"
    assert rule_label({**wm, "scaling": "additive", "fresh_only": True}) == (
        "additive, bias=2.0, filter first, guard=4, fresh only"
    )
    local = {"scaling": "additive", "bias": 2.0, "embed_window": 32, "opening_steps": 0}
    assert cell_label(local) == "additive, bias=2.0, local=32, M=0"
    assert cell_label({**local, "embed_window": 0}) == "additive, bias=2.0, M=0"
    assert distinct_n([[1, 2, 1, 2], [1, 2, 3]]) == pytest.approx(3 / 5)  # (1,2) (2,1) (2,3)
    humans = np.array([[float(i) for i in range(100)]])
    marked = np.array([[97.5, 98.0, 98.5, 99.5]])
    assert tpr_at(marked, humans, 0.01)[0] == 0.5  # above 98: one of 100 (1%) lies above
    assert tpr_at(marked, humans[:, :10], 0.01)[0] == 1.0  # 10 texts: nothing may lie above 9
