"""Tests for sentence splitting, filtering and wiki cleanup (data.sources)."""

from __future__ import annotations

import pytest

from data.sources import clean_wiki_paragraph, keep_sentence, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
        (
            "The U.S. Senate voted. It passed 3.5 to 1.",
            ["The U.S. Senate voted.", "It passed 3.5 to 1."],
        ),
        (
            "Lee surrendered to Ulysses S. Grant in 1865. Robert E. Lee went home.",
            ["Lee surrendered to Ulysses S. Grant in 1865.", "Robert E. Lee went home."],
        ),
        ("Prices rose 2.5% in Jan. and fell later.", ["Prices rose 2.5% in Jan. and fell later."]),
        (
            'He said "stop!" Then he left. Was it over? Yes.',
            ['He said "stop!"', "Then he left.", "Was it over?", "Yes."],
        ),
        ("He moved to the U.S. The move was hard.", ["He moved to the U.S.", "The move was hard."]),
        ("It ends at 4 p.m. on Friday.", ["It ends at 4 p.m. on Friday."]),
    ],
)
def test_split_sentences_tricky_cases(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_keep_sentence_filters_length_and_junk() -> None:
    assert keep_sentence("The council will meet again next week to discuss the plan.")
    assert not keep_sentence("Too short to keep.")
    assert not keep_sentence(" ".join(["word"] * 61) + ".")
    assert not keep_sentence("lower case start is not a sentence we keep here at all.")
    assert not keep_sentence("The table | has pipes | and other | junk in it, sadly.")


def test_clean_wiki_paragraph_strips_markup_and_drops_lists() -> None:
    raw = "'''Albedo''' () is the ''reflection coefficient'' of a surface. " + "word " * 40
    cleaned = clean_wiki_paragraph(raw)
    assert cleaned is not None and "'" not in cleaned and "()" not in cleaned
    assert cleaned.startswith("Albedo is the reflection coefficient")
    assert clean_wiki_paragraph("* a list item " + "word " * 50) is None
    assert clean_wiki_paragraph("Short paragraph.") is None
