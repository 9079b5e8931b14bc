"""Tests for SemanticMapper: save/load, structure and strict loading
(watermark.models.semantic_mapper)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from watermark.models.semantic_mapper import MapperConfig, SemanticMapper


def small() -> SemanticMapper:
    torch.manual_seed(0)
    return SemanticMapper(MapperConfig(input_dim=8, hidden_dim=16, output_dim=12, embedder="x"))


def test_roundtrip_is_exact(tmp_path):
    m = small()
    m.center.copy_(torch.arange(8.0))
    m.save_pretrained(tmp_path)
    loaded = SemanticMapper.from_pretrained(tmp_path)
    x = torch.randn(5, 8)
    assert torch.equal(m.eval()(x), loaded(x))
    assert loaded.config.embedder == "x"
    assert json.loads((tmp_path / "config.json").read_text())["output_dim"] == 12


def test_structure_matches_paper():
    m = small()
    assert isinstance(m.inp, torch.nn.Linear) and isinstance(m.out, torch.nn.Linear)
    assert len(m.blocks) == 2
    h = torch.randn(3, 16)
    block = m.blocks[0]
    assert torch.allclose(block(h), h + block.fc2(block.act(block.fc1(block.norm(h)))))


def test_missing_files_fail_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        SemanticMapper.from_pretrained(tmp_path)
    small().save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        SemanticMapper.from_pretrained(tmp_path)


def test_mismatched_weights_fail_clearly(tmp_path):
    m = small()
    m.save_pretrained(tmp_path)
    state = {k: v for k, v in m.state_dict().items() if k != "inp.bias"}
    save_file(state, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError, match="inp.bias"):
        SemanticMapper.from_pretrained(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["output_dim"] = 99
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="wrong_shape"):
        SemanticMapper.from_pretrained(tmp_path)


def test_wrong_embedding_width_names_the_embedder():
    with pytest.raises(ValueError, match="embedder 'x'"):
        small()(torch.randn(2, 9))
