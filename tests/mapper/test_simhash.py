"""Tests for the SimHash mapper checkpoint (mapper.simhash)."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from mapper.metrics import simhash_codes
from mapper.simhash import main, simhash_mapper
from tests.helpers import tiny_mapper
from watermark.models.semantic_mapper import SemanticMapper


def test_simhash_mapper_signs_equal_simhash_codes(tmp_path: Path, capsys) -> None:
    like = tiny_mapper(16, 40)
    like.center.normal_()
    emb = torch.randn(200, 16)
    assert (
        main(
            [
                "--like",
                str(like.save_pretrained(tmp_path / "m")),
                "--out",
                str(tmp_path / "s"),
                "--seed",
                "3",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["seed"] == 3
    loaded = SemanticMapper.from_pretrained(tmp_path / "s")
    assert torch.equal(loaded.signs(emb), simhash_codes(emb, like.center, 40, seed=3))
    assert torch.equal(simhash_mapper(like, 3).signs(emb), loaded.signs(emb))
    assert loaded.config.extra["kind"] == "simhash" and loaded.config.num_blocks == 0
    assert main(["--like", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")]) == 2
