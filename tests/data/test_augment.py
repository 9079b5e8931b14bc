"""Tests for the rule-based augmentations (data.augment, data.expansion, data.synonyms)."""

from __future__ import annotations

import random

import pytest

from data.augment import MIN_KEEP, shorten
from data.expansion import expand
from data.synonyms import Thesaurus

SENTENCES = [
    "The government said on Tuesday that it would spend $3.5 million on new bushfire defences.",
    "Lithium, the lightest of the alkali metals, is the only metal which reacts with nitrogen.",
    "In 2009, President Karzai created two anti-corruption units within the Interior Ministry.",
    "Hoping for another victory, on October 4 Washington mounted a surprise assault at Germantown.",
    "The victim was hit in the upper body (police said) and died about three hours later.",
    "Volunteers hope to clean up the last of the oil at Phillip Island today, officials say.",
]


@pytest.mark.parametrize("sentence", SENTENCES)
def test_shortened_removes_words_and_keeps_most(sentence: str) -> None:
    out = shorten(sentence, random.Random(0))
    assert len(out) == 1
    n_in, n_out = len(sentence.split()), len(out[0].split())
    assert n_out < n_in
    assert n_out >= MIN_KEEP * n_in
    assert out[0][0].isupper() and out[0].endswith(".")


def test_shortened_is_empty_when_nothing_is_removable() -> None:
    assert shorten("Cats sleep a lot.", random.Random(0)) == []


@pytest.mark.parametrize("sentence", SENTENCES)
def test_expanded_adds_words(sentence: str) -> None:
    out = expand(sentence, random.Random(1))
    assert len(out) == 1
    assert len(out[0].split()) > len(sentence.split())
    assert out[0].endswith((".", "!", "?"))


def test_expanded_varies_with_seed_and_is_deterministic() -> None:
    sentence = SENTENCES[0]
    variants = {expand(sentence, random.Random(seed))[0] for seed in range(20)}
    assert len(variants) > 3
    assert expand(sentence, random.Random(7)) == expand(sentence, random.Random(7))


@pytest.fixture(scope="module")
def tiny_thesaurus() -> Thesaurus:
    pairs = {
        "government": ["administration", "regime"],
        "administration": ["government", "regime"],
        "regime": ["government", "administration"],
        "spend": ["expend", "disburse"],
        "expend": ["spend", "disburse"],
        "disburse": ["spend", "expend"],
        "defences": ["protections"],
        "new": ["novel", "fresh"],
        "novel": ["new", "fresh"],
        "fresh": ["new", "novel"],
    }
    return Thesaurus(pairs)


def test_synonym_swap_changes_some_words_deterministically(tiny_thesaurus: Thesaurus) -> None:
    sentence = SENTENCES[0]
    first = tiny_thesaurus.variants(sentence, random.Random(3))
    again = tiny_thesaurus.variants(sentence, random.Random(3))
    assert first == again and len(first) == 1
    before, after = sentence.split(), first[0].split()
    assert len(before) == len(after)
    changed = sum(a != b for a, b in zip(before, after))
    assert 1 <= changed <= len(before) // 2
    assert after[0] == "The" and after[-1] == "defences."  # stopwords and one-way entries kept


def test_synonym_swap_keeps_capitalisation(tiny_thesaurus: Thesaurus) -> None:
    out = tiny_thesaurus.variants("Government plans were new and costly overall.", random.Random(0))
    assert out and out[0].split()[0] in {"Government", "Administration", "Regime"}
    assert tiny_thesaurus.variants("Nothing here matches at all.", random.Random(0)) == []
