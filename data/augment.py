"""Rule-based sentence augmentations: shortened and expanded variants.

* :func:`shorten` compresses a sentence while keeping its core meaning, by deleting parentheticals,
  non-restrictive clauses between commas, trailing subordinate clauses, sentence-initial discourse
  markers, trailing attributions ("..., officials said."), time adjuncts, some adverbs and a final
  prepositional phrase (keeping at least 60% of the words).
* :func:`expand` adds words without changing the meaning: discourse markers, hedges, verbose
  paraphrases of connectives, intensifiers after auxiliaries, expanded contractions.

Synonym swaps with the Moby thesaurus live in :mod:`data.synonyms`.

Every function takes a ``random.Random`` so results are reproducible; each returns a list that
holds one variant, or is empty when the rule could not change the sentence.
"""

from __future__ import annotations

import random
import re

MIN_KEEP = 0.6
WORD = re.compile(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)?")

_STOPWORD_TEXT = """
a about above after again against all also although am among an and any are as at be because
been before being below between both but by can could did do does doing down during each either
even every few for from further had has have having he her here hers herself him himself his how
however i if in into is it its itself just least less let like many may me might more most much
must my myself neither no nor not now of off on once one only or other others our ours ourselves
out over own per perhaps rather same several shall she should since so some such than that the
their theirs them themselves then there these they this those though through thus to too under
until up upon us very was we well were what whatever when where whether which while who whom
whose why will with within without would yet you your yours yourself yourselves
despite whereas toward towards across along around behind beside besides beyond near onto via
said says say told mr mrs ms dr st two three four five six seven eight nine ten first second
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _words(text: str) -> int:
    return len(text.split())


def _tidy(text: str, template: str) -> str:
    """Fix spacing and punctuation after edits; restore the capital and the final mark."""
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([,.;:!?)])", r"\1", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r",\s*,+", ",", text)
    text = re.sub(r"^[\s,;:]+|[\s,;:]+$", "", text)
    text = re.sub(r"[,;:]+([.!?])", r"\1", text)
    if text and template[:1].isupper():
        text = text[0].upper() + text[1:]
    end = re.search(r"[.!?][\"'\u201d)]*$", template)
    if end and not re.search(r"[.!?][\"'\u201d)]*$", text):
        text += end.group(0)
    return text


# --------------------------------------------------------------------------- shortened

_OPENERS = re.compile(
    r"^(?:However|Meanwhile|Moreover|Furthermore|Additionally|In addition|Also|Nevertheless|"
    r"Nonetheless|Indeed|In fact|Of course|For example|For instance|As a result|Consequently|"
    r"Therefore|Thus|Instead|Similarly|Likewise|Still|Today|Currently|Eventually|Finally|"
    r"Later|Subsequently|Traditionally|Historically|Generally|Typically|Overall|"
    r"At the same time|On the other hand|In particular|In general|In contrast)\s*,\s*"
)
_CLAUSE_START = (
    r"(?:who|whom|whose|which|where|including|such as|especially|particularly|although|though|"
    r"whereas|according to|mainly|mostly|usually|a|an|the|also|now|then|formerly|previously|"
    r"once|known as|born|based)"
)
# a clause between two commas, unless the second comma continues a list ("..., a, b and c")
_INNER = re.compile(rf",\s+({_CLAUSE_START})\b([^,;()\"]*?),\s+(?!(?:and|or|but|nor)\b)")
_VERBISH = re.compile(
    r"\b(?:is|was|are|were|has|have|had|be|been|will|would|can|could|do|does|did)\b"
)
_SUBORDINATE_START = re.compile(
    r"^(?:When|If|Although|Though|While|After|Before|As|Since|Because|Once|Until|Unless|Whereas)\b"
)


def _drop_inner(sentence: str) -> str:
    """Delete the first clause between commas that looks non-restrictive (an appositive)."""
    for match in _INNER.finditer(sentence):
        opener, rest = match.group(1).lower(), match.group(2)
        if opener in {"a", "an", "the"}:
            # "Lithium, the lightest metal, is ..." but not "When seen, the sea is blue, as ..."
            if _VERBISH.search(rest) or len(rest.split()) > 8:
                continue
            if _SUBORDINATE_START.match(sentence):
                continue
        return sentence[: match.start()] + " " + sentence[match.end() :]
    return sentence


_TRAILING = re.compile(
    rf",\s+(?:{_CLAUSE_START}|while|with|because|since|as|after|before|when|until|despite|"
    r"making|leading|resulting|giving|allowing|causing)\b[^;\"]*?(?=[.!?][\"'\u201d)]*$)"
)
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
)
_TIME = re.compile(
    rf",?\s+\b(?:in|on|during|by|since|until|from)\s+(?:(?:early|late|mid-?)\s*)?"
    rf"(?:{_MONTH}(?:\s+\d{{1,2}})?(?:,?\s+\d{{4}})?|\d{{4}}s?)\b,?(?=[\s.!?])"
)
# trailing attribution: "..., officials say." / "..., Mr Smith said." / "..., said the minister."
_ATTRIBUTION = re.compile(
    r",\s+(?:(?:[A-Za-z.'\u2019-]+\s+){1,5}(?:said|says|say|added|reported|told\s+\w+)|"
    r"(?:said|says|added)\s+(?:[A-Za-z.'\u2019-]+\s*){1,5})(?=[.!?]$)"
)
_PARENS = re.compile(r"\s*[(\[][^()\[\]]*[)\]]")
_TIME_START = re.compile(
    rf"^(?:In|On|During|By|Since|From)\s+(?:(?:early|late|mid-?)\s*)?"
    rf"(?:{_MONTH}(?:\s+\d{{1,2}})?(?:,?\s+\d{{4}})?|\d{{4}}s?),\s+"
)
_ADVERBS = re.compile(
    r"\b(?:very|also|still|just|really|quite|rather|fairly|largely|mostly|generally|usually|"
    r"typically|often|always|currently|eventually|recently|finally|already|even|actually|"
    r"especially|particularly|widely|highly|relatively|approximately|roughly|nearly|almost|"
    r"originally|formally|officially|initially|(?!(?:only|early|family|italy|july|apply|reply|"
    r"supply|rely|fly|ally|holy|likely|daily|weekly|monthly|yearly|assembly|anomaly|belly|"
    r"bully|jelly|lily|rally|silly|ugly|tally|folly|sully|emily|billy|sally|kelly|molly|"
    r"lovely|elderly|friendly|costly|deadly|lonely|lively|orderly|monopoly)\b)[a-z]{3,}ly)\b\s*"
)
_FINAL_PP = re.compile(
    r"\s+(?:in|on|at|for|from|during|after|since|with|by|near|across|around|within|over|"
    r"throughout)\s+[^,;()]{2,40}?(?=[.!?][\"'\u201d)]*$)"
)


def _drop_time(match: re.Match[str]) -> str:
    """Delete a time adjunct but keep a comma that separated clauses around it."""
    found = match.group(0)
    return "," if found.startswith(",") or found.endswith(",") else ""


def shorten(text: str, rng: random.Random) -> list[str]:
    """Compress a sentence by deleting removable parts, keeping at least 60% of its words.

    Deletion rules are tried in a seeded order; a rule is applied only if the sentence still keeps
    ``MIN_KEEP`` of its original words afterwards.

    Args:
        text: The sentence.
        rng: Random source (controls the rule order and how many rules apply).

    Returns:
        ``[shortened]``, or ``[]`` when no rule removed a word.
    """
    original = _words(text)
    rules = [
        lambda s: _PARENS.sub("", s),
        lambda s: _ATTRIBUTION.sub("", s, count=1),
        _drop_inner,
        lambda s: _TRAILING.sub("", s, count=1),
        lambda s: _OPENERS.sub("", s),
        lambda s: _TIME.sub(_drop_time, _TIME_START.sub("", s, count=1), count=1),
        lambda s: _ADVERBS.sub("", s),
        lambda s: _FINAL_PP.sub("", s, count=1),
    ]
    order = list(range(len(rules)))
    rng.shuffle(order)
    order.sort(key=lambda i: i >= 6)  # structural deletions first, word deletions after
    budget = rng.randint(2, len(rules))
    current = text
    for index in order:
        if budget == 0:
            break
        candidate = _tidy(rules[index](current), text)
        if _words(candidate) < _words(current) and _words(candidate) >= MIN_KEEP * original:
            current = candidate
            budget -= 1
    return [current] if _words(current) < original else []


# --------------------------------------------------------------------------- expanded

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

    def intro(s: str) -> str:
        if re.match(r"^[\"'\u201c]", s) or _OPENERS.match(s):
            return s
        return f"{rng.choice(_INTRO)} {_lower_first(s, vocabulary)}"

    def outro(s: str) -> str:
        match = re.search(r"([.!?])$", s)
        if not match or s.endswith(('"', "'", "?", "!")):
            return s
        return s[: match.start()] + rng.choice(_OUTRO) + match.group(1)

    def verbose(s: str) -> str:
        options = [(p, r) for p, r in _VERBOSE if re.search(p, s)]
        if not options:
            return s
        pattern, replacement = rng.choice(options)
        return re.sub(pattern, replacement, s, count=1)

    def auxiliary(s: str) -> str:
        matches = list(_AUXILIARY.finditer(s))
        if not matches:
            return s
        m = rng.choice(matches)
        adverbs = [a for a in _AUX_ADVERBS if a not in s.lower()] or _AUX_ADVERBS
        return f"{s[: m.end()]} {rng.choice(adverbs)}{s[m.end() :]}"

    def contractions(s: str) -> str:
        s = re.sub(r"\bcan't\b", "cannot", s)
        s = re.sub(r"\bwon't\b", "will not", s)
        for short, long in _CONTRACTIONS.items():
            s = re.sub(rf"(?<=[a-z]){re.escape(short)}\b", long, s)
        return s

    inner, outer = [verbose, auxiliary], [intro, outro]
    rng.shuffle(inner)
    rng.shuffle(outer)
    edits = inner + outer
    picked = set(rng.sample(range(len(edits)), rng.randint(2, 3)))
    current = contractions(text)
    # word-level edits before the sentence-level ones, so they never edit an inserted opener
    for index, edit in enumerate(edits):
        if index in picked:
            current = edit(current)
    for edit in edits:  # nothing applied: fall back to any edit that changes the sentence
        if _words(current) > _words(text):
            break
        current = edit(current)
    current = _tidy(current, text)
    return [current] if _words(current) > _words(text) else []
