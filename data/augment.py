"""Rule-based sentence augmentations: shortened and expanded variants.

* :func:`shorten` compresses a sentence while keeping its core meaning, by deleting parentheticals,
  non-restrictive clauses between commas, trailing subordinate clauses, sentence-initial discourse
  markers, trailing attributions ("..., officials said."), time adjuncts, some adverbs and a final
  prepositional phrase (keeping at least 60% of the words).
* :func:`data.expansion.expand` adds words without changing the meaning: discourse markers,
  hedges, verbose paraphrases of connectives, intensifiers after auxiliaries, expanded
  contractions. It shares this module's helpers (:func:`tidy`, :data:`OPENERS`).

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


def word_count(text: str) -> int:
    """The number of whitespace-separated words."""
    return len(text.split())


def tidy(text: str, template: str) -> str:
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

OPENERS = re.compile(
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
    original = word_count(text)
    rules = [
        lambda s: _PARENS.sub("", s),
        lambda s: _ATTRIBUTION.sub("", s, count=1),
        _drop_inner,
        lambda s: _TRAILING.sub("", s, count=1),
        lambda s: OPENERS.sub("", s),
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
        candidate = tidy(rules[index](current), text)
        kept = word_count(candidate)
        if kept < word_count(current) and kept >= MIN_KEEP * original:
            current = candidate
            budget -= 1
    return [current] if word_count(current) < original else []
