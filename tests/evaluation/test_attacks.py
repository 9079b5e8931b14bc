"""Tests for the deletion, copy-paste and synonym attacks (evaluation.attacks)."""

from __future__ import annotations

from evaluation import attacks
from evaluation.cache_keys import text_hash


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


def test_the_registry_of_kinds_is_what_the_checks_and_the_stage_read(tmp_path) -> None:
    from evaluation.attack_stage import KINDS, AttackStage, attack_problems, cache_name
    from evaluation.store import Store

    for kind in KINDS:  # every kind runs through the registry at strength 1.0 and its name
        assert attack_problems({"kind": kind, "strength": 1.0}) == []
        assert cache_name({"kind": kind, "strength": 1.0}, "lm").startswith(kind)
    assert "unknown options" in attack_problems({"kind": "deletion", "strength": 0.3, "pass": 2})[0]
    assert (
        "and 1 for deletion"
        in attack_problems({"kind": "deletion", "strength": 0.3, "passes": 2})[0]
    )
    assert attack_problems({"kind": "paraphrase", "strength": 1.0, "paraphrase_after": True})
    assert attack_problems({"kind": "deletion", "strength": "high"}) == [
        "bad attack {'kind': 'deletion', 'strength': 'high'}: strength must be a number"
    ]
    stage = AttackStage(
        Store(tmp_path),
        None,
        seed=1,
        paraphraser="p",
        paraphrase_cache=tmp_path / "p.jsonl",
        llm_name="lm",
        llm_path="lm",
        llm_batch=1,
        similarity_embedder="e",
    )
    text = " " + " ".join(f"w{i}" for i in range(20))
    cut = stage.attacked({"kind": "deletion", "strength": 0.25}, [text], [""])
    assert cut == [attacks.delete_words(text, 0.25, seed=1)]
    assert list(stage.store.table("attacks")) == [f"deletion|0.25|1|{text_hash(text)}"]
