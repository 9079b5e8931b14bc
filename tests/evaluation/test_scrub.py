"""The query-counting scrubber on a tiny watermark: word mapping, query counts, stopping rule."""

from __future__ import annotations

from types import SimpleNamespace

from evaluation.scrub import green_words, scrub


class NoSynonyms:
    """A thesaurus without synonyms: every edit is a deletion."""

    def replacements(self, token: str) -> list[str]:
        return []


def test_green_words_are_the_words_of_green_tested_tokens(tiny: SimpleNamespace) -> None:
    wm = tiny.make(rule="additive", bias=4.0, alpha=0.0, opening_steps=0)
    text = wm.generate(["river city council"], max_new_tokens=40, seed=3)[0].text
    result = wm.detect([text])[0]
    words = text.split(" ")
    flagged = green_words(result, text, lists=1)
    # the tiny tokenizer has one token per word: the flagged words are the green tested tokens
    expected = {i for i, (t, g) in enumerate(zip(result.tested, result.green)) if t and g}
    offset = len(words) - len(result.tokens)  # a leading empty word when the text starts blank
    assert {w - offset for w in flagged} == expected and flagged


def test_scrub_counts_queries_and_stops_at_the_target(tiny: SimpleNamespace) -> None:
    wm = tiny.make(rule="additive", bias=4.0, alpha=0.0, opening_steps=0)
    text = wm.generate(["the storm hit the north road"], max_new_tokens=60, seed=1)[0].text
    start = wm.detect([text])[0].p_value
    calls = []

    def detect(texts: list[str]) -> list:
        calls.append(len(texts))
        return wm.detect(texts)

    for guided in (True, False):
        calls.clear()
        out = scrub(
            text,
            detect,
            NoSynonyms(),
            guided,
            target=max(start * 10, 0.05),
            max_queries=40,
            proposals=3,
        )
        assert out["queries"] == sum(calls) <= 40 + 3
        assert out["scrubbed"] == (out["p_value"] >= max(start * 10, 0.05))
        assert 0 <= out["words_kept"] <= 1
    capped = scrub(text, detect, NoSynonyms(), False, target=1.1, max_queries=5, proposals=2)
    assert not capped["scrubbed"] and capped["queries"] <= 5 + 2
