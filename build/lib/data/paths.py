"""The one rule that turns a relative path in a config or on a command line into a real path.

A relative path means the first place where it exists, in this order: next to the config file
that names it, the current directory, the repository root (the folder holding ``data/``,
``mapper/`` and ``watermark/``). A value that exists in none of them is returned as written, so
model short names and hub ids pass through, and a new output path is relative to the current
directory. ``~`` is expanded; absolute paths are kept.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def resolve_path(
    value: str | os.PathLike[str], config_dir: str | os.PathLike[str] | None = None
) -> str:
    """``value`` resolved by the rule above (``config_dir``: folder of the naming config)."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    bases = [Path(config_dir)] if config_dir else []
    for base in [*bases, Path.cwd(), REPO_ROOT]:
        if (base / path).exists():
            return str((base / path).resolve())
    return str(value)
