"""Tests for the small model's sentence paraphrases (data.paraphrase, data.paraphrase_cleaning)."""

from __future__ import annotations

import pytest
import torch

from data.paraphrase_cleaning import clean_paraphrase


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


def test_pass_modes_of_greedy_and_sampled_runs() -> None:
    from data.paraphrase import BAN_FIRST, PLAIN, mode_temperature, passes_of

    assert passes_of(0.0, 3) == (PLAIN, BAN_FIRST)
    assert passes_of(1.2, 3) == ("sampled-t1.2-s3", "sampled-t1.2-s4")
    assert mode_temperature("sampled-t1.2-s4") == (1.2, False)
    assert mode_temperature(BAN_FIRST) == (0.0, True) and mode_temperature(PLAIN) == (0.0, False)


@pytest.mark.slow
def test_sampled_paraphrases_are_cached_per_seed_and_drawn_alike(tmp_path) -> None:
    from data.paraphrase import Paraphraser, read_cache, run_paraphrases

    items = [
        ("a", "The council met on Tuesday to discuss the budget for the coming year."),
        ("b", "Heavy rain flooded the north of the country overnight."),
    ]
    model = Paraphraser(dtype=torch.float32)
    run = lambda name, seed: run_paraphrases(  # noqa: E731
        items, tmp_path / name, 2, temperature=1.0, seed=seed, paraphraser=model
    )
    first = run("one.jsonl", 0)
    assert run("two.jsonl", 0) == first  # each batch seeded by its sentences: a fresh run alike
    modes = {mode for _, mode in read_cache(tmp_path / "one.jsonl")}
    assert modes <= {"sampled-t1-s0", "sampled-t1-s1"} and "sampled-t1-s0" in modes
    other = run("one.jsonl", 7)
    assert "sampled-t1-s7" in {mode for _, mode in read_cache(tmp_path / "one.jsonl")}
    assert run("one.jsonl", 0) == first  # read from the cache
    assert other != first or all(v is None for v in first.values())
