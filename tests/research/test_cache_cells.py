"""The committed evaluation caches stay found (:mod:`research.cache_cells`): every cached cell
of our method has the key that today's code computes for a config the YAMLs name."""

from __future__ import annotations

import json

import pytest

from research import cache_cells


def test_every_committed_cell_is_found(capsys: pytest.CaptureFixture) -> None:
    assert cache_cells.main([]) == 0
    total = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert total["found"] == total["cells"] >= 863  # the seeds committed by 0.8


def test_a_changed_key_is_counted_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a cache key that no longer names the cached fields misses them."""
    monkeypatch.setattr(cache_cells, "generation_key", lambda cfg: "ours-changed")
    assert cache_cells.main([]) == 1
