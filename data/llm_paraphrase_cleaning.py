"""The cleaning and judging of a raw whole-text paraphrase (:mod:`data.llm_paraphrase`).

:func:`clean_text_paraphrase` strips what an instruction LLM wraps around its answer (openers,
introductions, closing notes, quotes) and rejects outputs that are no usable paraphrase.
"""

from __future__ import annotations

import re

from data.paraphrase_cleaning import word_key

MIN_RATIO, MAX_RATIO = 0.5, 2.0  # accepted length of a paraphrase, in the source's words

_OPENER = re.compile(r"^(?:sure|certainly|of course|okay|ok)\b[!,.]*\s*", re.IGNORECASE)
_INTRO = re.compile(
    r"^(?:here(?:'s| is| are)\b[^:\n]{0,80}:|"
    r"(?:the )?(?:rewritten|paraphrased|reworded|revised)(?: text| version| paragraph)?\s*:|"
    r"(?:the )?(?:french |english )?(?:paraphrase|rewrite|text|answer|output|translation)\s*:)\s*",
    re.IGNORECASE,
)
_OUTRO = re.compile(
    r"^(?:note|explanation|changes)\b\s*:|^(?:i hope|let me know|this (?:rewritten|revised|"
    r"paraphrased) (?:text|version))",
    re.IGNORECASE,
)
_META = re.compile(
    r"\b(?:paraphras\w*|rephras\w*|rewritten|reworded|original text|as an ai|i cannot|i can't)\b",
    re.IGNORECASE,
)


def clean_text_paraphrase(output: str, source: str) -> str | None:
    """Post-process a raw whole-text paraphrase; ``None`` if it is not usable.

    Strips code fences, openers ("Sure!"), introductions ("Here is the rewritten text:"),
    closing notes ("Note: ...", "Let me know ...") and wrapping quotes. Rejects outputs that are
    empty, identical to the source (ignoring case and punctuation), outside 0.5-2.0 times the
    source's word count, or that still talk about the task ("paraphrased", "as an AI") when the
    source does not. Idempotent on accepted outputs.
    """
    text = output.strip().strip("`").strip()
    text = re.sub(r"^(?:text|plaintext|markdown)\n", "", text)
    for _ in range(2):  # "Sure! Here is the rewritten text:"
        text = _INTRO.sub("", _OPENER.sub("", text, count=1), count=1).strip()
    lines = text.splitlines()
    end = next((i for i, line in enumerate(lines) if i and _OUTRO.match(line.strip())), None)
    text = "\n".join(lines[:end]).strip()
    if len(text) >= 2 and text[0] in "\"'\u201c" and text[-1] in "\"'\u201d":
        text = text[1:-1].strip()
    if not text or word_key(text) == word_key(source):
        return None
    if _META.search(text) and not _META.search(source):
        return None
    ratio = len(text.split()) / max(1, len(source.split()))
    return text if MIN_RATIO <= ratio <= MAX_RATIO else None
