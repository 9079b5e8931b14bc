"""A second meaning check beside the embedder's similarity: the facts a rewrite keeps.

A text's facts are its numbers and its names: the capitalised words that do not open a
sentence. A rewrite that keeps the meaning keeps them (in any order and any wording around them),
so :func:`facts_kept`, the share of the original's facts found in the rewrite, is a check a reader
can verify by eye and that no embedder decides. :func:`keeps_facts` applies the threshold.
"""

from __future__ import annotations

import re

from data.sources import split_sentences

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
FACTS_KEPT = 0.8  # the share of facts a rewrite must keep to pass


def facts(text: str) -> set[str]:
    """The numbers (digits only, separators dropped) and the capitalised words (acronyms too)
    that do not open a sentence, lowercased."""
    found = {re.sub(r"[.,]", "", n) for n in NUMBER.findall(text)}
    for sentence in split_sentences(text):
        words = WORD.findall(sentence)
        found |= {w.lower() for w in words[1:] if w[0].isupper() and (len(w) > 1 or w != "I")}
    return found


def facts_kept(original: str, rewrite: str) -> float:
    """The share of ``original``'s facts found among ``rewrite``'s words or numbers (1.0 when
    the original has none)."""
    wanted = facts(original)
    if not wanted:
        return 1.0
    there = {re.sub(r"[.,]", "", n) for n in NUMBER.findall(rewrite)}
    there |= {w.lower() for w in WORD.findall(rewrite)}
    return len(wanted & there) / len(wanted)


def keeps_facts(original: str, rewrite: str, share: float = FACTS_KEPT) -> bool:
    """Whether the rewrite keeps at least ``share`` of the original's facts."""
    return facts_kept(original, rewrite) >= share
