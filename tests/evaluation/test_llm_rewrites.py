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
from evaluation.curves import attack_label
from evaluation.meaning import (
    draws_table,
    facts,
    facts_kept,
    keeps_facts,
    ngrams_kept,
    rewrite_figures,
    words_kept_share,
)
from tests.data.test_llm_paraphrase import save_tiny_lm
from tests.evaluation.test_llm_paraphrase_attack import _evaluation, curve_attacks

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
        curve_attacks([{"kind": "llm_forced", "strength": 0.5}])
    with pytest.raises(ValueError, match="paraphrase_after must be true or false"):
        curve_attacks([{"kind": "llm_forced", "strength": 1.0, "paraphrase_after": 1}])


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
    cells = [(a["kind"], a.get("paraphrase_after", False)) for a in cfg.curves.attacks]
    assert cells == [
        ("llm_forced", False),
        ("llm_forced", True),
        ("llm_round_trip", False),
        ("llm_round_trip", True),
    ]
    assert all(a["temperature"] == 1.0 for a in cfg.curves.attacks if a["kind"] == "llm_forced")
    assert cfg.curves.negatives == 256 and cfg.curves.attacked >= 64
    assert {"ours", "kgw1-d1.0", "kgw1", "kgw0", "synthid"} <= set(cfg.curves.methods)


def test_a_sampled_rewrite_has_its_own_key_and_repeats_for_the_same_batch(tmp_path: Path) -> None:
    assert rw.forced_task(0.7).prompt_id != rw.FORCED.prompt_id  # cached apart from the greedy one
    assert lp.PARAPHRASE.prompt_id == lp.PROMPT_ID == "ab97b68e"  # the paraphrase cache holds
    model = str(save_tiny_lm(tmp_path / "lm"))
    warm = lp.TextParaphraser(model, task=rw.forced_task(0.7))
    texts = [EN.strip(), "the bank said the price rose ."]
    assert warm.generate(texts) == warm.generate(texts)  # seeded by the batch


LOST = "a storm hit a road somewhere and a bridge there"  # Leeds and Tuesday gone


def test_a_draw_that_fails_the_meaning_checks_is_drawn_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Draw 0 loses the facts, draw 1 keeps them: the harness keeps draw 1; a text whose every
    draw fails stays as it was; each draw has its own cache entry and attack key."""
    seeds: list[int] = []
    real = lp.TextParaphraser.generate

    def scripted(self, texts):
        seeds.append(self.task.seed)
        assert self.task.temperature == 1.0 and len(real(self, texts)) == len(texts)
        return [(LOST if self.task.seed == 0 or "short" in t else BACK, True) for t in texts]

    monkeypatch.setattr(lp.TextParaphraser, "generate", scripted)
    checked: list[tuple[list[str], list[str]]] = []

    def facts_only(name: str, originals: list[str], rewrites: list[str]) -> list[bool]:
        checked.append((list(originals), list(rewrites)))
        return [keeps_facts(o, r) for o, r in zip(originals, rewrites)]

    monkeypatch.setattr("evaluation.meaning.meaning_kept", facts_only)
    save_tiny_lm(tmp_path / "lm")
    ev = _evaluation(tmp_path, "lm")
    texts, humans = [EN, " short text in York here"], ["h1", "h2"]
    attack = {"kind": "llm_forced", "strength": 1.0, "temperature": 1.0, "retries": 2}
    assert ev.attacked(attack, texts, humans) == [" " + BACK, texts[1]]
    assert seeds == [0, 1, 2]  # the second text failed every draw
    assert [len(o) for o, _ in checked] == [2, 2, 1]
    keys = set(ev.store.table("attacks"))
    assert any(k.startswith("llm_forced[lm]@t1r2|1.0|") for k in keys)
    cache = set(lp.read_cache(ev.store.root / "llm_paraphrases.jsonl"))
    model = str(tmp_path / "lm")
    for seed in (0, 1, 2):
        assert lp.cache_key(model, EN.strip(), rw.forced_task(1.0, seed)) in cache or seed == 2
    assert rw.forced_task(1.0, 0).prompt_id == rw.forced_task(1.0).prompt_id
    assert rw.forced_task(1.0, 1).prompt_id != rw.forced_task(1.0).prompt_id
    assert rw.forced_task(0.0, 1).prompt_id == rw.FORCED.prompt_id  # greedy: no draws
    label = attack_label({**attack, "paraphrase_after": True})
    assert label == "llm_forced@1.0t1+llm_paraphrase"
    # the draw log, read back from the cache with nothing drawn again
    monkeypatch.setattr("evaluation.meaning.cosines", lambda name, a, b: [0.9, 0.5][: len(a)])
    log = ev.draw_log(attack, texts)
    assert seeds == [0, 1, 2] and [d["texts"] for d in log] == [2, 2, 1]
    assert log[0]["facts_rejects"] == 1.0 and log[0]["passed"] == 0.0  # LOST twice
    assert log[1]["facts_rejects"] == 0.5 and log[1]["passed"] == 0.5  # BACK for the first
    assert log[1]["similarity_rejects"] == 0.5 and log[2]["judge_rejects"] == 0.0
    assert draws_table([{"method": "ours", "attack": label, "draws": log}])[2].startswith(
        f"| ours | {label} | 0 | 2 | 0.000 | 0.500 | 1.000 | 0.000 |"
    )


def test_only_the_forced_rewrite_is_retried_and_it_and_the_paraphrase_sampled() -> None:
    with pytest.raises(ValueError, match="only llm_forced and paraphrase are sampled"):
        curve_attacks([{"kind": "llm_round_trip", "strength": 1.0, "temperature": 1}])
    with pytest.raises(ValueError, match="only llm_forced is retried"):
        curve_attacks([{"kind": "paraphrase", "strength": 1.0, "temperature": 1, "retries": 1}])
    second = {
        "kind": "paraphrase",
        "strength": 1.0,
        "temperature": 1.0,
    }  # issue 89's second rewrite
    assert curve_attacks([second]).curves.attacks == [second]
    with pytest.raises(ValueError, match="for a temperature > 0"):
        curve_attacks([{"kind": "llm_forced", "strength": 1.0, "retries": 2}])
    with pytest.raises(ValueError, match="temperature must be in"):
        curve_attacks([{"kind": "llm_forced", "strength": 1.0, "temperature": 5}])


def test_the_figures_of_a_rewrite_cell() -> None:
    assert words_kept_share("a b c d", "a b x") == 0.5
    assert ngrams_kept("one two three four five six", "One two three four five. Seven") == 0.5
    assert ngrams_kept("too short", "anything") == 1.0
    # a text left as it was passes no check; the medians describe the rewrites only
    figures = rewrite_figures([EN, EN, EN], [EN, LOST, BACK], [1.0, 0.8, 0.9])
    assert figures["rewritten"] == pytest.approx(2 / 3)
    assert figures["facts_pass"] == pytest.approx(1 / 3)  # BACK keeps Leeds and Tuesday
    assert figures["similarity_pass"] == pytest.approx(1 / 3) == figures["meaning_pass"]
    assert figures["similarity_median"] == pytest.approx(0.85)
    assert figures["words_kept_median"] == pytest.approx(
        (words_kept_share(EN, LOST) + words_kept_share(EN, BACK)) / 2
    )
    # after a paraphrase, the first rewrite decides which texts were rewritten
    after = rewrite_figures([EN, EN], [LOST, BACK], [0.8, 0.9], done=[False, True])
    assert after["rewritten"] == 0.5 and after["meaning_pass"] == 0.5


def test_the_forced_rewrite_may_list_the_facts_in_its_prompt(tmp_path: Path) -> None:
    listed = rw.listed_facts("In 2015 the Leeds council met Smith twice. Smith said 3,500 came.")
    assert (
        listed
        == "These names and numbers must all appear in the rewrite: 2015, Leeds, Smith, 3,500."
    )
    assert {"2015", "leeds", "smith", "3500"} == facts(
        "In 2015 the Leeds council met Smith twice. Smith said 3,500 came."
    )
    assert rw.listed_facts("no names here at all") == ""
    plain, listing = rw.forced_task(1.0), rw.forced_task(1.0, list_facts=True)
    assert plain.prompt_id != listing.prompt_id  # its own cache entries
    assert rw.forced_task(1.0, 1, list_facts=True).prompt_id != listing.prompt_id
    save_tiny_lm(tmp_path / "lm")
    writer = lp.TextParaphraser(str(tmp_path / "lm"), task=listing)
    assert "must all appear in the rewrite: Leeds, Tuesday." in writer.prompt(EN.strip())
    assert "must all appear" not in lp.TextParaphraser(str(tmp_path / "lm"), task=plain).prompt(EN)
    attack = {"kind": "llm_forced", "strength": 1.0, "temperature": 1.0, "list_facts": True}
    assert attack_label(attack) == "llm_forced@1.0t1+facts"
    curve_attacks([attack])
    with pytest.raises(ValueError, match="only llm_forced"):
        curve_attacks([{"kind": "llm_round_trip", "strength": 1.0, "list_facts": True}])
    with pytest.raises(ValueError, match="list_facts must be"):
        curve_attacks([{**attack, "list_facts": "yes"}])
