"""The cleaning of one raw sentence paraphrase of the small instruction model
(:mod:`data.paraphrase`): :func:`clean_paraphrase` keeps the sentence it wrote and rejects what
is no paraphrase; :func:`word_key` says whether two texts say the same words.
"""

from __future__ import annotations

import re

_PREFIX = re.compile(
    r"^(?:here(?:'s| is) (?:the |a |my )?(?:paraphrased? )?"
    r"(?:sentence|version|paraphrase)?\s*[:\-]?|"
    r"paraphrased? (?:sentence|version)?\s*:|paraphrase\s*:|sentence\s*:|answer\s*:)\s*",
    re.IGNORECASE,
)


_META = re.compile(
    r"\b(?:sentences?|paraphras\w*|rephras\w*|rewr[io]t\w*|reword\w*|original text)\b",
    re.IGNORECASE,
)


def word_key(text: str) -> str:
    """``text`` lower-cased with every run of other characters than letters and digits one space
    (two texts with the same key say the same words)."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def clean_paraphrase(output: str, source: str) -> str | None:
    """Post-process a raw model output; return ``None`` if it is not a usable paraphrase.

    Keeps the first non-empty line, strips "Here is ..."-style prefixes and wrapping quotes, and
    rejects outputs that are empty, identical to the source (ignoring case and punctuation), far
    off in length (outside 0.5-1.8 times the source's word count), or talk about the task
    ("The sentence can be rephrased as:") instead of doing it. The function is idempotent on its
    accepted outputs, so cached paraphrases can be re-checked with it.

    Args:
        output: The decoded generated text.
        source: The sentence that was paraphrased.

    Returns:
        The cleaned paraphrase, or ``None``.
    """
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    if not lines:
        return None
    text = lines[0]
    if _PREFIX.match(text) and len(_PREFIX.sub("", text, count=1).strip()) < 3 and len(lines) > 1:
        text = lines[1]  # "Here is the paraphrase:" on its own line
    text = _PREFIX.sub("", text, count=1).strip()
    if len(text) >= 2 and text[0] in "\"'\u201c" and text[-1] in "\"'\u201d":
        text = text[1:-1].strip()
    elif text[:1] in '"\u201c' and text.count(text[0]) == 1:
        text = text[1:].strip()
    if not text or word_key(text) == word_key(source) or text.endswith(":"):
        return None
    if _META.search(text) and not _META.search(source):
        return None
    ratio = len(text.split()) / max(1, len(source.split()))
    if not 0.5 <= ratio <= 1.8:
        return None
    return text
