"""The one rule that turns a relative path in a config or on a command line into a real path.

A relative path means the first place where it exists, in this order:

1. next to the config file that names it;
2. the current directory;
3. the installed ``watermark`` package, found with :mod:`importlib.resources`: it ships the
   default mapper as package data (``checkpoints/mapper-minilm``), so the shipped config finds it
   from a wheel as well as from a clone;
4. the repository root (the folder holding ``pyproject.toml``, ``mapper/`` and ``watermark/``),
   only when the package runs from a clone.

A value that exists in none of them is returned as written, so model short names and hub ids pass
through, and a new output path is relative to the current directory. ``~`` is expanded; absolute
paths are kept.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

PACKAGE_DIR = Path(str(files("watermark")))  # an installed wheel is a folder, never a zip
REPO_ROOT = PACKAGE_DIR.parent
DEFAULT_MAPPER = "checkpoints/mapper-minilm"  # the shipped mapper, relative to PACKAGE_DIR


def in_clone() -> bool:
    """Whether the package runs from a clone of the repository (editable install or cwd)."""
    return (REPO_ROOT / "pyproject.toml").is_file() and (REPO_ROOT / "mapper").is_dir()


def search_dirs(config_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """The folders a relative path is looked up in, in the rule's order."""
    bases = [Path(config_dir)] if config_dir else []
    bases += [Path.cwd(), PACKAGE_DIR]
    return [*bases, REPO_ROOT] if in_clone() else bases


def resolve_path(
    value: str | os.PathLike[str], config_dir: str | os.PathLike[str] | None = None
) -> str:
    """``value`` resolved by the rule above (``config_dir``: folder of the naming config)."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    for base in search_dirs(config_dir):
        if (base / path).exists():
            return str((base / path).resolve())
    return str(value)
