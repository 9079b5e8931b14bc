"""The configs that ship in the package, by name, and the one rule that finds a config file.

The wheel ships four configs, each the file ``watermark/<name>_config.json``:

* ``default``: the token-level watermark (what :meth:`WatermarkConfig.default` loads);
* ``robust``: the default with the sentence layer on, in its measured setting;
* ``paper``: the paper's rule and order (``delta``, the opening sentence, no windows);
* ``additive``: 0.1's default, the additive rule.

Wherever a config file is taken (``--config``, :meth:`WatermarkConfig.load`, ``Watermark.load``,
the service) a name of this list is taken too. An existing file wins: ``--config robust`` loads
a file named ``robust`` in the current directory where there is one (and warns that it hides
the shipped config), else the shipped ``robust``. A value that is neither an existing file nor a
shipped name is refused with one line that lists the names.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from watermark.config.paths import PACKAGE_DIR

logger = logging.getLogger("watermark.config")

SHIPPED = ("default", "robust", "paper", "additive")


def shipped_path(name: str) -> Path:
    """The file of the shipped config ``name`` (one of :data:`SHIPPED`)."""
    if name not in SHIPPED:
        raise KeyError(f"no shipped config {name!r}; shipped: {', '.join(SHIPPED)}")
    return PACKAGE_DIR / f"{name}_config.json"


def find_config(value: str | os.PathLike[str]) -> Path:
    """The config file that ``value`` (a path or a shipped name) means, by the module's rule.

    Raises:
        FileNotFoundError: If it is neither an existing file nor a shipped name; the message
            lists the shipped names.
    """
    path = Path(value).expanduser()
    name = str(value)
    if path.is_file():
        if name in SHIPPED:
            logger.warning(
                "loading the file %s, not the shipped config %r of the same name (a file wins; "
                "give ./%s to say so, or run elsewhere)",
                path.resolve(),
                name,
                name,
            )
        return path
    if name in SHIPPED:
        return shipped_path(name)
    hint = ""
    for shipped in SHIPPED:
        if path.name == f"watermark-{shipped}.json":  # where 0.10 and earlier kept it
            hint = f" (the package ships it by name: {shipped!r})"
    raise FileNotFoundError(
        f"watermark config {name} not found{hint}: give a shipped config by name "
        f"({', '.join(SHIPPED)}) or a JSON file written by WatermarkConfig.save"
    )
