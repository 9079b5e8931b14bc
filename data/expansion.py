"""Rule-based sentence expansion: :func:`expand` adds words without changing what a sentence
says (discourse markers, hedges, verbose paraphrases of connectives, adverbs after auxiliaries,
expanded contractions). Its shortening counterpart and the shared helpers are in
:mod:`data.augment`.
"""

from __future__ import annotations

import random
import re

from data.augment import OPENERS, STOPWORDS, tidy, word_count

_INTRO = [
    "In fact,",
    "Indeed,",
    "Notably,",
    "As it happens,",
    "It is worth noting that",
    "As a matter of fact,",
    "It should be noted that",
    "Interestingly,",
]
_OUTRO = [
    ", according to reports",
    ", as reported",
    ", it was noted",
    ", as it turns out",
    ", by all accounts",
    ", as is often noted",
]
_VERBOSE = [
    (r"\bbecause\b(?!\s+of)", "due to the fact that"),
    (r"\bif\b", "in the event that"),
    (r"\balthough\b", "even though"),
    (r"\bnow\b", "at this point in time"),
    (r"\bwhen\b", "at the time when"),
    (r"\bmany\b", "a great many"),
    (
        r"\bto(?=\s+(?:help|ensure|prevent|avoid|make|allow|provide|protect|reduce|support)\b)",
        "in order to",
    ),
    (r"\boften\b", "quite often"),
]
# an auxiliary followed by a verb form: "was built", "has been", "will go" (not "have life-cycles")
_AUXILIARY = re.compile(
    r"\b(?:(?:is|was|are|were)(?=\s+[a-z])|(?:has|have|had)(?=\s+(?:been|[a-z]+(?:ed|en)\b))|"
    r"(?:will|would|can|could)(?=\s+[a-z]))(?!\s+not\b)"
)
_AUX_ADVERBS = ["indeed", "actually", "reportedly", "also", "certainly", "in fact"]
_CONTRACTIONS = {"n't": " not", "'re": " are", "'ve": " have", "'ll": " will", "'m": " am"}


def _lower_first(text: str, vocabulary: frozenset[str] | set[str] | None) -> str:
    """Lower-case the first word unless it looks like a name (not a known lower-case word)."""
    first = re.sub(r"[^A-Za-z]", "", text.split(" ", 1)[0])
    lower = first.lower()
    common = lower in STOPWORDS or (
        vocabulary is not None and (lower in vocabulary or lower.rstrip("s") in vocabulary)
    )
    if first and first[1:].islower() and common:
        return text[0].lower() + text[1:]
    return text


def expand(
    text: str, rng: random.Random, vocabulary: frozenset[str] | set[str] | None = None
) -> list[str]:
    """Lengthen a sentence without changing what it says.

    Two or three of these edits are applied (in a seeded choice): a sentence-initial discourse
    marker, a trailing hedge ("according to reports"), a verbose paraphrase of a connective
    ("because" -> "due to the fact that"), an adverb after an auxiliary ("was" -> "was indeed"),
    expanded contractions.

    Args:
        text: The sentence.
        rng: Random source.
        vocabulary: Known lower-case words; a sentence-initial word in it is lower-cased after
            an inserted opener (others are kept, as they may be names). Without it, only
            stopwords are lower-cased.

    Returns:
        ``[expanded]``, or ``[]`` if no edit applied.
    """
    inner = [lambda s: _verbose(s, rng), lambda s: _auxiliary(s, rng)]
    outer = [lambda s: _intro(s, rng, vocabulary), lambda s: _outro(s, rng)]
    rng.shuffle(inner)
    rng.shuffle(outer)
    edits = inner + outer
    picked = set(rng.sample(range(len(edits)), rng.randint(2, 3)))
    current = _contractions(text)
    # word-level edits before the sentence-level ones, so they never edit an inserted opener
    for index, edit in enumerate(edits):
        if index in picked:
            current = edit(current)
    for edit in edits:  # nothing applied: fall back to any edit that changes the sentence
        if word_count(current) > word_count(text):
            break
        current = edit(current)
    current = tidy(current, text)
    return [current] if word_count(current) > word_count(text) else []


def _intro(s: str, rng: random.Random, vocabulary: frozenset[str] | set[str] | None) -> str:
    if re.match(r"^[\"'\u201c]", s) or OPENERS.match(s):
        return s
    return f"{rng.choice(_INTRO)} {_lower_first(s, vocabulary)}"


def _outro(s: str, rng: random.Random) -> str:
    match = re.search(r"([.!?])$", s)
    if not match or s.endswith(('"', "'", "?", "!")):
        return s
    return s[: match.start()] + rng.choice(_OUTRO) + match.group(1)


def _verbose(s: str, rng: random.Random) -> str:
    options = [(p, r) for p, r in _VERBOSE if re.search(p, s)]
    if not options:
        return s
    pattern, replacement = rng.choice(options)
    return re.sub(pattern, replacement, s, count=1)


def _auxiliary(s: str, rng: random.Random) -> str:
    matches = list(_AUXILIARY.finditer(s))
    if not matches:
        return s
    m = rng.choice(matches)
    adverbs = [a for a in _AUX_ADVERBS if a not in s.lower()] or _AUX_ADVERBS
    return f"{s[: m.end()]} {rng.choice(adverbs)}{s[m.end() :]}"


def _contractions(s: str) -> str:
    s = re.sub(r"\bcan't\b", "cannot", s)
    s = re.sub(r"\bwon't\b", "will not", s)
    for short, long in _CONTRACTIONS.items():
        s = re.sub(rf"(?<=[a-z]){re.escape(short)}\b", long, s)
    return s
