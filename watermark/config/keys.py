"""Secret keys: where a key comes from, fresh keys, and the public demo key's warning.

A key slot of the config (``key``, and each of ``old_keys`` for rotation) holds one of

* ``"env:NAME"``: the value of the environment variable ``NAME``;
* ``"file:PATH"``: the first line of the file ``PATH`` (relative paths follow the config's path
  rule), e.g. a file written by ``python -m watermark keygen --key-file``;
* anything else: the key itself.

So a config can be committed with ``"key": "env:WATERMARK_KEY"`` and the secret kept out of it.
Keys never appear in ``repr``, logs or error messages: errors name the variable or the file.
What does appear is a key's public id (:func:`key_id`): a keyed hash that tells two keys apart
and reveals nothing usable about either.
Generating under the public demo key logs one warning per process (detection stays quiet).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from watermark.base import UserError

logger = logging.getLogger(__name__)

DEMO_KEY = "adaptive-watermark-demo-key-not-secret"
KEY_ID_LABEL = b"adaptive-watermark key id 1"  # the fixed, public message a key id signs
DEMO_OPENING = "The lighthouse keeper counted the ships that passed before dawn."
# words drawn for a fresh secret opening sentence (only embedded when opening_steps > 0)
WORDS = (
    "amber anchor autumn beacon birch canyon cedar cobalt coral crimson delta ember falcon fern "
    "glacier granite harbor hazel heron indigo island jasper juniper lagoon lantern maple meadow "
    "mesa nectar north oasis olive onyx orchard pebble pine prairie quartz quiet raven reef river "
    "saffron sage signal silver slate sparrow spruce summit tide timber topaz tundra valley velvet "
    "violet walnut willow winter zephyr"
).split()
_warned = False


def resolve_key(ref: str, resolve_path: Callable[[str], str] = str) -> str:
    """The key a slot holds (see the module docstring).

    Args:
        ref: The slot's value.
        resolve_path: Resolves a relative key-file path (the config's path rule).

    Raises:
        ValueError: If the variable is unset or empty, or the file is missing or empty; the
            message names the variable or file, never a key.
    """
    if ref.startswith("env:"):
        name = ref[4:]
        value = os.environ.get(name, "").strip()
        if not value:
            raise UserError(f"the key's environment variable {name} is not set or empty")
        return value
    if ref.startswith("file:"):
        path = Path(resolve_path(ref[5:])).expanduser()
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            raise UserError(f"key file {path} cannot be read ({type(err).__name__})") from None
        value = lines[0].strip() if lines else ""
        if not value:
            raise UserError(f"key file {path} is empty; its first line must hold the key")
        return value
    return ref


def key_id(key: str) -> str:
    """``"key-<12 hex>"``: the first 48 bits of HMAC-SHA256 of :data:`KEY_ID_LABEL` under
    ``key`` (the key itself, not its ``env:`` / ``file:`` reference).

    Without the key, HMAC's output looks random, so the id tells nothing about the key; it is
    cut to 48 bits, so it cannot even pin one down. All it lets anyone do is check a guessed key,
    which watermarked text already allows (detect it under the guess): a key of keygen's 256
    random bits stays out of reach. Green lists hash the key with other inputs, never this
    label, so the id says nothing about them either.
    """
    return "key-" + hmac.new(key.encode("utf-8"), KEY_ID_LABEL, hashlib.sha256).hexdigest()[:12]


def fresh_key() -> str:
    """A new random key: 256 bits from :mod:`secrets`, as 64 hex digits."""
    return secrets.token_hex(32)


def fresh_opening_sentence(words: int = 10) -> str:
    """A new random opening sentence of ``words`` words drawn with :mod:`secrets`."""
    return " ".join(secrets.choice(WORDS) for _ in range(words)).capitalize() + "."


def write_private(path: str | os.PathLike[str], text: str, overwrite: bool = False) -> Path:
    """Writes ``text`` to a new file readable by its owner only (mode 0600), creating a missing
    folder with mode 0700.

    Raises:
        FileExistsError: If the file exists and ``overwrite`` is false.
    """
    path = Path(path).expanduser()
    if not path.parent.exists():  # e.g. ~/.secrets/: a new folder readable by its owner only
        path.parent.mkdir(mode=0o700, parents=True)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, 0o600)  # an existing file keeps its old mode through O_TRUNC
    return path


def warn_demo_key() -> None:
    """Logs, once per process, that generation uses the public demo key."""
    global _warned
    if not _warned:
        _warned = True
        logger.warning(
            "generating with the public demo key: anyone with this package can detect and forge "
            "this watermark; make your own with `python -m watermark keygen --out my-config.json`"
        )
