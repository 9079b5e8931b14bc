"""Where a watermark's parts run and in which dtype.

:func:`resolve_device` places the measurement model (MM), the sentence embedder (SE), the mapper
and the token maps on one device. The MM and the SE compute in the config's ``compute_dtype``, one
of :data:`watermark.config.sections.COMPUTE_DTYPES` (the one list of dtype names; each is the
name of a torch dtype, :func:`torch_dtype`). The mapper always runs in float32.
"""

from __future__ import annotations

import torch

from watermark.base import UserError
from watermark.config.sections import COMPUTE_DTYPES


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a compute dtype name (``"bfloat16"`` -> ``torch.bfloat16``)."""
    if name not in COMPUTE_DTYPES:
        raise UserError(f"compute_dtype must be one of {COMPUTE_DTYPES}, got {name!r}")
    return getattr(torch, name)


def dtype_name(dtype: str | torch.dtype) -> str:
    """The compute dtype name of a torch dtype or a name (``torch.float16`` -> ``"float16"``)."""
    return str(dtype).removeprefix("torch.")


def resolve_device(
    device: str | torch.device | None, generator: torch.nn.Module | None = None
) -> torch.device:
    """The device of the watermark's parts.

    ``None``: the generator's device if one is given, else the CPU. ``"auto"``: CUDA when
    available, else the CPU. Anything else must name an available device.
    """
    if device is None:
        return model_device(generator) if generator is not None else torch.device("cpu")
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        found = torch.device(device)
    except RuntimeError as err:
        raise UserError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N") from err
    if found.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {device!r}: CUDA is not available here; use cpu or auto")
    if (
        found.type == "cuda"
        and found.index is not None
        and found.index >= torch.cuda.device_count()
    ):
        raise UserError(f"device {device!r}: only {torch.cuda.device_count()} CUDA devices")
    return found


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of a model's first parameter."""
    return next(model.parameters()).device


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    """The dtype of a model's first floating-point parameter."""
    return next(p.dtype for p in model.parameters() if p.is_floating_point())
