"""Tests for the deletion, copy-paste and synonym attacks (evaluation.attacks)."""

from __future__ import annotations

from evaluation import attacks


def test_attacks() -> None:
    text = " " + " ".join(f"w{i}" for i in range(20))
    out = attacks.delete_words(text, 0.25, seed=1)
    assert len(out.split()) == 15 and set(out.split()) <= set(text.split())
    assert out == attacks.delete_words(text, 0.25, seed=1)
    human = " ".join(f"h{i}" for i in range(40))
    mixed = attacks.copy_paste(text, human, 0.5, seed=0).split()
    assert len(mixed) == 20 and mixed.count("w0") == 1
    assert sum(w.startswith("w") for w in mixed) == 10  # the first half of the marked text
    start = mixed.index("w0")
    assert mixed[start : start + 10] == [f"w{i}" for i in range(10)]

    class Swap:  # a stand-in thesaurus: swaps every "storm" for "tempest"
        def variants(self, sentence, rng, rate):
            return [sentence.replace("storm", "tempest")] if "storm" in sentence else []

    swapped = attacks.substitute_synonyms(" The storm came. It rained.", 0.5, Swap())
    assert swapped == " The tempest came. It rained."
