"""Packaged GGUF models (watermark.models.gguf): registration and the one-time conversion."""

from __future__ import annotations

from pathlib import Path

import pytest

from watermark.models import gguf as gguf_models_module


def test_the_runtime_knows_no_attack_model_until_the_evaluation_registers_it() -> None:
    import subprocess
    import sys

    code = (
        "from watermark.models.gguf import KNOWN_LMS as K; a = sorted(K); "
        "import data.paraphraser_model; print(a, sorted(K))"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.stdout.split("] [")[0] == "['gemma3-270m', 'smollm2-135m'"
    assert "qwen2.5-coder-1.5b" in out.stdout.split("] [")[1]


def test_conversion_parses_each_gguf_file_once_and_restores_gguf(tmp_path: Path) -> None:
    """Inside the block a file is parsed once and the name map built once (the converted
    SmolLM2-135M folder is byte-identical either way: 23-26 s -> 9-11 s); outside it, and after
    an error, gguf's own functions are back."""
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "t.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("test.value", 7)
    writer.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    for write in (
        writer.write_header_to_file,
        writer.write_kv_data_to_file,
        writer.write_tensors_to_file,
        writer.close,
    ):
        write()
    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with gguf_models_module._gguf_parsed_once():
        first, again = gguf.GGUFReader(path), gguf.GGUFReader(str(path))
        assert first is again and isinstance(first, reader_class)
        assert int(first.fields["test.value"].parts[-1][0]) == 7
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 2) is gguf.get_tensor_name_map(arch, 2)
    assert gguf.GGUFReader is reader_class and gguf.get_tensor_name_map is name_map
    assert gguf.GGUFReader(path) is not gguf.GGUFReader(path)
    with pytest.raises(RuntimeError), gguf_models_module._gguf_parsed_once():
        raise RuntimeError("a failed conversion")
    assert gguf.GGUFReader is reader_class and gguf.get_tensor_name_map is name_map
