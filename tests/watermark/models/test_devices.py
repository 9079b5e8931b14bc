"""Tests for device and dtype placement (watermark.models.devices); CUDA tests skip without
a GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests.helpers import PROMPTS, sentences
from watermark.models.devices import model_device, model_dtype, resolve_device

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_resolve_device() -> None:
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("toaster")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda:0")


def test_compute_dtype_moves_mm_and_embedder_not_the_mapper(tiny: SimpleNamespace) -> None:
    wm = tiny.make(measurement_model="other")  # an MM of its own, so the generator stays fp32
    assert wm.config.runtime.compute_dtype == "float32"
    import copy

    from watermark.api import Watermark

    bf16 = Watermark.load(
        wm.config,
        tokenizer=tiny.gtok,
        generator=tiny.gen,
        measurement_model=copy.deepcopy(tiny.mm),
        mm_tokenizer=tiny.gtok,
        embedder=copy.deepcopy(tiny.emb),
        mapper=tiny.mapper,
        dtype="bfloat16",
    )
    assert bf16.config.runtime.compute_dtype == "bfloat16"
    assert model_dtype(bf16.core.measurement.model) == torch.bfloat16
    assert model_dtype(bf16.embedder) == torch.bfloat16
    assert model_dtype(bf16.mapper) == torch.float32 and model_dtype(tiny.gen) == torch.float32
    texts = sentences(2, seed=5, length=20)
    same = [a.scored == b.scored for a, b in zip(wm.detect(texts), bf16.detect(texts))]
    assert len(same) == 2  # runs end to end in bfloat16
    with pytest.raises(ValueError, match="compute_dtype"):
        Watermark.load(wm.config, tokenizer=tiny.gtok, generator=tiny.gen, dtype="int8")


@needs_cuda
def test_cuda_detection_and_generation_match_cpu(tiny: SimpleNamespace) -> None:
    import copy

    from watermark.api import Watermark
    from watermark.generate.generation import generate

    def on(device: str) -> tuple[Watermark, torch.nn.Module]:
        gen = copy.deepcopy(tiny.gen).to(device)
        wm = Watermark.load(
            tiny.make().config,
            tokenizer=tiny.gtok,
            generator=gen,
            measurement_model=copy.deepcopy(tiny.mm).to(device),
            mm_tokenizer=tiny.gtok,
            embedder=copy.deepcopy(tiny.emb).to(device),
            mapper=copy.deepcopy(tiny.mapper),
            device=device,
        )
        return wm, gen

    (cpu, cpu_gen), (gpu, gpu_gen) = on("cpu"), on("cuda")
    assert model_device(gpu.core.measurement.model).type == "cuda"
    assert gpu.token_maps.device.type == "cuda"
    assert model_device(cpu.core.measurement.model).type == "cpu"
    texts = sentences(3, seed=7, length=20)
    for a, b in zip(cpu.detect(texts), gpu.detect(texts)):
        assert a.scored == b.scored and a.green == b.green
        assert a.p_value == pytest.approx(b.p_value, rel=1e-4)
    outs = {}
    for name, wm, model in (("cpu", cpu, cpu_gen), ("cuda", gpu, gpu_gen)):
        proc = wm.logits_processor()
        outs[name] = generate(model, tiny.gtok, PROMPTS, proc, max_new_tokens=16, do_sample=False)
    assert [o.token_ids for o in outs["cpu"]] == [o.token_ids for o in outs["cuda"]]
