"""Text conventions shared by generation, detection and the reference implementation.

Generation and detection must derive every quantity from identical text, so the few places where
token ids become text (or text becomes token ids) are defined once, here:

* ``decode_ids``: ``tokenizer.decode(ids, skip_special_tokens=True,
  clean_up_tokenization_spaces=False)``; used for the generated prefix S_{0:t-1} fed to the
  sentence embedder (and to a cross-tokenizer MM), and for the continuation text returned by
  ``generate``.
  :func:`decode_many` gives the same strings for many id lists at once.
* ``encode_text``: ``tokenizer(text, add_special_tokens=False)``; detection tokenizes a candidate
  text this way, and a cross-tokenizer MM encodes decoded prefixes this way.

Continuations are returned unstripped: a leading space is part of the first token.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence


def decode_ids(tokenizer: object, ids: Sequence[int]) -> str:
    """Decodes generator token ids to text (the one decoding convention of the package)."""
    return tokenizer.decode(
        [int(i) for i in ids], skip_special_tokens=True, clean_up_tokenization_spaces=False
    )


def decode_many(tokenizer: object, id_lists: Sequence[Sequence[int]]) -> list[str]:
    """:func:`decode_ids` of each list, in one batched call where the tokenizer is a plain
    ``tokenizers``-backed one (its ``decode`` is then exactly the backend's, so the strings are
    the same; a tokenizer class with its own decoding goes one list at a time)."""
    backend = _plain_backend(tokenizer)
    if backend is None:
        return [decode_ids(tokenizer, ids) for ids in id_lists]
    return backend.decode_batch([[int(i) for i in ids] for ids in id_lists], True)


def _plain_backend(tokenizer: object) -> object | None:
    """The ``tokenizers.Tokenizer`` behind a transformers tokenizer whose decoding is the
    backend's own, else None."""
    try:
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError:  # another transformers: decode one list at a time
        return None
    cls = type(tokenizer)
    if not isinstance(tokenizer, TokenizersBackend) or any(
        getattr(cls, name) is not getattr(TokenizersBackend, name)
        for name in ("decode", "_decode", "batch_decode")
    ):
        return None
    return tokenizer._tokenizer


def encode_text(tokenizer: object, text: str) -> list[int]:
    """Encodes text to token ids without special tokens."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def script_of(char: str) -> str:
    """Unicode script of a letter, approximated by the first word of its name (e.g. ``LATIN``)."""
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def unsupported_reason(text: str, allowed_scripts: Iterable[str]) -> str | None:
    """Why a text cannot be scored at all, or ``None`` if it can.

    Args:
        text: Candidate text.
        allowed_scripts: Accepted scripts (see :func:`script_of`).

    Returns:
        ``"empty text"``, ``"whitespace only"``, ``"no letters"``, ``"unsupported script"`` (most
        letters outside ``allowed_scripts``), or ``None``.
    """
    if not isinstance(text, str) or len(text) == 0:
        return "empty text"
    if not text.strip():
        return "whitespace only"
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "no letters"
    allowed = set(allowed_scripts)
    if not allowed:
        return None
    inside = sum(script_of(c) in allowed for c in letters)
    if inside * 2 < len(letters):
        return "unsupported script"
    return None
