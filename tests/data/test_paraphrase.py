"""Tests for LLM paraphrase cleanup (data.paraphrase)."""

from __future__ import annotations

from data.paraphrase import clean_paraphrase


def test_clean_paraphrase_rejects_copies_and_meta_answers() -> None:
    src = "The victim was hit in the stomach and died three hours later in hospital."
    good = "Struck in the stomach, the victim died in hospital three hours afterwards."
    assert clean_paraphrase(good, src) == good
    assert clean_paraphrase(f'"{good}"\nExplanation: ...', src) == good
    assert clean_paraphrase(f"Here is the paraphrased sentence: {good}", src) == good
    assert clean_paraphrase(src.upper(), src) is None
    assert clean_paraphrase("", src) is None
    assert clean_paraphrase("Died.", src) is None
    assert clean_paraphrase("The sentence can be rephrased as follows:", src) is None
    assert clean_paraphrase(clean_paraphrase(good, src) or "", src) == good
