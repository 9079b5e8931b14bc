"""SemanticMapper save/load, strict loading, metrics and the SimHash baseline."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from mapper.metrics import agreement, code_metrics, simhash_codes
from mapper.semantic_mapper import MapperConfig, SemanticMapper


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


def test_simhash_is_deterministic_and_centred():
    emb = torch.randn(20, 8)
    center = emb.mean(0)
    a = simhash_codes(emb, center, 32, seed=3)
    assert torch.equal(a, simhash_codes(emb, center, 32, seed=3))
    assert not torch.equal(a, simhash_codes(emb, center, 32, seed=4))
    gen = torch.Generator().manual_seed(3)
    proj = torch.randn(8, 32, generator=gen)
    assert torch.equal(a, (emb - center) @ proj > 0)


def test_code_metrics_hand_computed():
    codes = torch.tensor(
        [
            [1, 1, 0, 0],  # s0: balanced
            [1, 1, 1, 0],  # s1: 3/4 positive
            [1, 1, 0, 1],  # aug of s0: 3/4 bits agree
            [0, 0, 1, 1],  # unrelated to s0: 0 agree
        ],
        dtype=torch.bool,
    )
    emb = torch.tensor([[0.0], [1.0], [0.1], [3.0]])
    pairs = {
        "paraphrase": (torch.tensor([0]), torch.tensor([2])),
        "unrelated": (torch.tensor([0, 1]), torch.tensor([3, 3])),
    }
    m = code_metrics(codes, emb, torch.tensor([0, 1]), pairs)
    assert m["sent_balance_mean"] == pytest.approx(0.125)
    assert m["agree_paraphrase"] == pytest.approx(0.75)
    assert m["agree_unrelated"] == pytest.approx((0.0 + 0.25) / 2)
    # dims over s0, s1: fractions 1, 1, .5, 0 -> deviations .5 .5 0 .5; within 0.2: 1/4
    assert m["dim_within_tol"] == pytest.approx(0.25)
    assert m["dim_balance_max"] == pytest.approx(0.5)
    # emb distances .1, 3, 2 vs hamming .25, 1, .75: same order -> spearman 1
    assert m["spearman"] == pytest.approx(1.0, abs=1e-4)
    assert agreement(codes, torch.tensor([0]), torch.tensor([1])).item() == pytest.approx(0.75)
