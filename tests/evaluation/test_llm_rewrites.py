"""The meaning-keeping rewrites (data.llm_rewrites) as attacks: the round trip through French,
the forced rewrite, their judges, the harness's dispatch and cache keys, and the facts check
(evaluation.meaning).

The tiny random model really decodes every batch; its outputs are then replaced by scripted
ones, so that what is accepted is known.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from data import llm_paraphrase as lp
from data import llm_rewrites as rw
from evaluation.config import EvalConfig
from evaluation.meaning import facts, facts_kept, keeps_facts
from tests.data.test_llm_paraphrase import save_tiny_lm
from tests.evaluation.test_llm_paraphrase_attack import _evaluation

EN = " the storm hit the north road and the bridge in Leeds on Tuesday"
FR = "la tempete a frappe la route du nord et le pont de Leeds mardi"
BACK = "on Tuesday a storm struck the northern road and the Leeds bridge"


@pytest.fixture()
def legs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """Each ``generate`` call's task label and texts; outputs scripted after real decoding."""
    seen: list[tuple[str, list[str]]] = []
    real = lp.TextParaphraser.generate

    def scripted(self, texts):
        seen.append((self.task.label, list(texts)))
        assert len(real(self, texts)) == len(texts)
        script = {
            rw.TO_FRENCH.label: {EN.strip(): FR},
            rw.TO_ENGLISH.label: {FR: BACK},
        }.get(self.task.label, {EN.strip(): BACK})
        return [(script.get(t, t.upper() + " again"), True) for t in texts]

    monkeypatch.setattr(lp.TextParaphraser, "generate", scripted)
    return seen


def test_the_round_trip_goes_through_french_and_caches_each_leg(tmp_path: Path, legs: list) -> None:
    model, cache = str(save_tiny_lm(tmp_path / "lm")), tmp_path / "llm.jsonl"
    assert rw.round_trip([EN.strip()], cache, model) == [BACK]
    assert [label for label, _ in legs] == [rw.TO_FRENCH.label, rw.TO_ENGLISH.label]
    keys = set(lp.read_cache(cache))
    assert lp.cache_key(model, EN.strip(), rw.TO_FRENCH) in keys
    assert lp.cache_key(model, FR, rw.TO_ENGLISH) in keys
    assert lp.cache_key(model, EN.strip()) not in keys  # not the paraphrase's entry
    assert rw.round_trip([EN.strip()], cache, model) == [BACK] and len(legs) == 2  # cached
    assert rw.forced_rewrite([EN.strip()], cache, model) == [BACK]
    assert legs[-1][0] == rw.FORCED.label


def test_a_first_leg_still_in_english_is_rejected() -> None:
    assert rw.clean_translation(FR, EN) == FR
    assert rw.clean_translation(BACK, EN) is None  # English: not a translation
    assert rw.english_share(BACK) > rw.ENGLISH_SHARE > rw.english_share(FR)


def test_the_harness_runs_the_rewrites_and_a_paraphrase_after(tmp_path: Path, legs: list) -> None:
    save_tiny_lm(tmp_path / "lm")
    ev = _evaluation(tmp_path, "lm")
    texts, humans = [EN, " short text here"], ["h1", "h2"]
    out = ev.attacked({"kind": "llm_round_trip", "strength": 1.0}, texts, humans)
    assert out[0] == " " + BACK  # leading space kept
    after = ev.attacked(
        {"kind": "llm_round_trip", "strength": 1.0, "paraphrase_after": True}, texts, humans
    )
    assert after[0] == " " + BACK.upper() + " again"  # the scripted paraphrase of the round trip
    keys = set(ev.store.table("attacks"))
    assert any(k.startswith("llm_round_trip[lm]|1.0|") for k in keys)
    assert any(k.startswith("llm_round_trip[lm]+llm_paraphrase|1.0|") for k in keys)
    forced = ev.attacked({"kind": "llm_forced", "strength": 1.0}, texts, humans)
    assert forced[0] == " " + BACK
    with pytest.raises(ValueError, match="strength must be 1.0"):
        EvalConfig(curve_attacks=[{"kind": "llm_forced", "strength": 0.5}])
    with pytest.raises(ValueError, match="paraphrase_after must be true or false"):
        EvalConfig(curve_attacks=[{"kind": "llm_forced", "strength": 1.0, "paraphrase_after": 1}])


def test_facts_are_numbers_and_names_and_a_rewrite_must_keep_them() -> None:
    text = "The council voted 7 to 2 on Tuesday. Mayor Anne Price said 1,200 cars use it."
    assert facts(text) == {"7", "2", "tuesday", "anne", "price", "1200"}
    assert facts("The NSW crews and I went.") == {"nsw"}  # acronyms count; "I" does not
    kept = "By 7 votes to 2 on Tuesday the council agreed; 1200 cars use it, said Anne Price."
    assert facts_kept(text, kept) == 1.0 and keeps_facts(text, kept)
    lost = "The council voted on Tuesday. The mayor said many cars use it."
    assert facts_kept(text, lost) == pytest.approx(1 / 6) and not keeps_facts(text, lost)
    assert facts_kept("no names or numbers here.", "anything") == 1.0


def test_the_rewrites_run_from_yaml() -> None:
    path = Path(__file__).parents[2] / "configs" / "evaluation" / "rewrites.yaml"
    cfg = EvalConfig.load(path)
    cells = [(a["kind"], a.get("paraphrase_after", False)) for a in cfg.curve_attacks]
    assert cells == [
        ("llm_round_trip", False),
        ("llm_round_trip", True),
        ("llm_forced", False),
        ("llm_forced", True),
    ]
    assert cfg.curve_negatives == 256 and cfg.curve_attacked >= 64
    assert {"ours", "kgw1-d1.0", "kgw1", "kgw0", "synthid"} <= set(cfg.curve_methods)


def test_a_sampled_rewrite_has_its_own_key_and_repeats_for_the_same_batch(tmp_path: Path) -> None:
    assert rw.FORCED_WARM.prompt_id != rw.FORCED.prompt_id  # cached apart from the greedy one
    assert lp.PARAPHRASE.prompt_id == lp.PROMPT_ID == "ab97b68e"  # the paraphrase cache holds
    model = str(save_tiny_lm(tmp_path / "lm"))
    warm = lp.TextParaphraser(model, task=rw.FORCED_WARM)
    texts = [EN.strip(), "the bank said the price rose ."]
    assert warm.generate(texts) == warm.generate(texts)  # seeded by the batch
