"""Tests for the keyed, balanced token-to-dimension map (watermark.core.token_map)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from watermark.core.token_map import build_token_map


def test_token_map_keyed_balanced_deterministic() -> None:
    V, D = 1003, 24
    a = build_token_map("k1", V, D)
    assert a.shape == (V,) and int(a.min()) >= 0 and int(a.max()) < D
    counts = torch.bincount(a, minlength=D)
    assert int(counts.max() - counts.min()) <= 1  # balanced: V // D or V // D + 1
    assert torch.equal(a, build_token_map("k1", V, D))
    assert not torch.equal(a, build_token_map("k2", V, D))
    assert sorted(build_token_map("k", 50, 50).tolist()) == list(
        range(50)
    )  # D == V keyed: a permutation
    with pytest.raises(ValueError, match="exceeds"):
        build_token_map("k", 10, 20)
    code = (
        "from watermark.core.token_map import build_token_map as b; "
        "print(b('k1', 1003, 24).tolist())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(other.stdout) == a.tolist()  # identical in another process
