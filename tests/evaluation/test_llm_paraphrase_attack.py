"""The ``llm_paraphrase`` attacks: passes, rejections and the harness's dispatch and cache keys.

The tiny random model really decodes every batch; its outputs are then replaced by scripted
ones (a rotation of the words, or unusable outputs), so that what is accepted is known.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from data import llm_paraphrase as lp
from evaluation import attacks as atk
from evaluation.attack_stage import AttackStage
from evaluation.config import EvalConfig
from evaluation.store import Store
from tests.data.test_llm_paraphrase import save_tiny_lm

GOOD, META, CUT = (
    " the storm hit the north road",
    " the bank said the price rose",
    " river city council vote on the school budget",
)


def rotate(text: str) -> str:
    words = text.split()
    return " ".join(words[1:] + words[:1])


@pytest.fixture()
def calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The texts of each ``generate`` call; outputs scripted after the real decoding."""
    seen: list[list[str]] = []
    real = lp.TextParaphraser.generate

    def scripted(self, texts):
        seen.append(list(texts))
        decoded = real(self, texts)
        assert len(decoded) == len(texts)
        script = {
            META.strip(): ("Here is the paraphrase:", True),
            CUT.strip(): (rotate(CUT), False),
        }
        return [script.get(t, (rotate(t), True)) for t in texts]

    monkeypatch.setattr(lp.TextParaphraser, "generate", scripted)
    return seen


def test_passes_apply_again_and_rejected_outputs_keep_the_text(
    tmp_path: Path, calls: list[list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    model, cache = str(save_tiny_lm(tmp_path / "lm")), tmp_path / "llm.jsonl"
    with caplog.at_level(logging.INFO, logger="evaluation.attacks"):
        once = atk.llm_paraphrase_texts([GOOD, META, CUT], cache, model)
    assert once == [" " + rotate(GOOD), META, CUT]  # leading space kept; rejections unchanged
    assert "pass 1 of 1: 2 of 3 outputs rejected" in caplog.text
    assert len(calls) == 1
    twice = atk.llm_paraphrase_texts([GOOD, META, CUT], cache, model, passes=2)
    assert twice == [" " + rotate(rotate(GOOD)), META, CUT]
    assert calls[1:] == [[rotate(GOOD)]]  # pass 1 from the cache; pass 2 decodes only what changed


def curve_attacks(attacks: list[dict]) -> EvalConfig:
    return EvalConfig.from_dict({"curves": {"attacks": attacks}})


def table_attacks(attacks: list[dict]) -> EvalConfig:
    return EvalConfig.from_dict({"table": {"attacks": attacks}})


def _evaluation(root: Path, paraphraser: str, **models) -> AttackStage:
    """The attack stage of a run whose YAML names ``paraphraser`` (no generator or methods)."""
    models = {"llm_paraphraser": paraphraser, **models}
    (root / "eval.yaml").write_text(
        yaml.safe_dump({"out_dir": str(root / "out"), "models": models})
    )
    cfg = EvalConfig.load(root / "eval.yaml")
    cache = cfg.output_path() / "cache"
    return AttackStage(
        Store(cache),
        None,
        seed=cfg.texts.seed,
        paraphraser=cfg.resolve(cfg.models.paraphraser),
        paraphrase_cache=cache / "paraphrases.jsonl",
        llm_name=cfg.models.llm_paraphraser,
        llm_path=cfg.resolve(cfg.models.llm_paraphraser),
        llm_batch=cfg.models.llm_paraphrase_batch,
        similarity_embedder=cfg.models.similarity_embedder,
        progress=False,
    )


def test_the_harness_dispatches_and_keys_the_cache_by_paraphraser(
    tmp_path: Path, calls: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    save_tiny_lm(tmp_path / "lm-a")
    save_tiny_lm(tmp_path / "lm-b", seed=3)
    ev = _evaluation(tmp_path, "lm-a")  # a folder named relative to the YAML
    attack = {"kind": "llm_paraphrase", "strength": 1.0}
    texts, humans = [GOOD, META], ["h1", "h2"]
    assert ev.attacked(attack, texts, humans) == [" " + rotate(GOOD), META]
    keys = sorted(ev.store.table("attacks"))
    assert all(k.startswith("llm_paraphrase[lm-a]|1.0|0|") for k in keys) and len(keys) == 2
    assert (ev.store.root / "llm_paraphrases.jsonl").is_file()
    assert ev.attacked({**attack, "passes": 2}, texts, humans)[0] == " " + rotate(rotate(GOOD))
    assert any(k.startswith("llm_paraphrase[lm-a]x2|") for k in ev.store.table("attacks"))
    assert len(calls) == 2

    other = _evaluation(tmp_path, "lm-b")  # same store, another paraphraser: nothing shared
    assert other.attacked(attack, texts, humans) == [" " + rotate(GOOD), META]
    assert len(calls) == 3 and any(
        k.startswith("llm_paraphrase[lm-b]|") for k in other.store.table("attacks")
    )

    class Swap:  # a stand-in thesaurus: swaps every "storm" for "rain"
        def variants(self, sentence, rng, rate):
            return [sentence.replace("storm", "rain")] if "storm" in sentence else []

    monkeypatch.setattr("data.synonyms.Thesaurus.load", lambda *a, **k: Swap())
    composite = {"kind": "llm_paraphrase_synonym", "strength": 0.5}
    swapped = ev.attacked(composite, texts, humans)
    assert swapped[0] == " " + rotate(GOOD).replace("storm", "rain") and swapped[1] == META
    assert len(calls) == 3  # the paraphrase came from the cache
    assert any(k.startswith("llm_paraphrase_synonym[lm-a]|0.5|") for k in ev.store.table("attacks"))


def test_the_yaml_sets_the_paraphrase_batch_and_the_cache_records_it(
    tmp_path: Path, calls: list[list[str]]
) -> None:
    save_tiny_lm(tmp_path / "lm")
    ev = _evaluation(tmp_path, "lm", llm_paraphrase_batch=1)
    ev.attacked({"kind": "llm_paraphrase", "strength": 1.0}, [GOOD, META], ["h1", "h2"])
    assert sorted(calls) == sorted([[GOOD.strip()], [META.strip()]])  # one text per call
    records = lp.read_cache(ev.store.root / "llm_paraphrases.jsonl").values()
    assert [r["batch"] for r in records] == [1, 1]
    with pytest.raises(ValueError, match="llm_paraphrase_batch"):
        EvalConfig.from_dict({"models": {"llm_paraphrase_batch": 0}})


def test_config_accepts_the_llm_attacks_and_pins_their_strength() -> None:
    attacks = [
        {"kind": "llm_paraphrase", "strength": 1.0, "passes": 2},
        {"kind": "llm_paraphrase_synonym", "strength": 0.5},
    ]
    cfg = curve_attacks(attacks)
    assert cfg.models.llm_paraphraser == "qwen2.5-coder-1.5b"
    with pytest.raises(ValueError, match="strength must be 1.0"):
        table_attacks([{"kind": "llm_paraphrase", "strength": 0.5}])
    loaded = EvalConfig.load(
        Path(__file__).parents[2] / "configs" / "evaluation" / "paraphrase-claim.yaml"
    )
    kinds = [(a["kind"], a["strength"], a.get("passes", 1)) for a in loaded.curves.attacks]
    assert kinds == [
        ("llm_paraphrase", 1.0, 1),
        ("llm_paraphrase", 1.0, 2),
        ("llm_paraphrase_synonym", 0.5, 1),
    ]
    assert loaded.curves.methods == [
        "unwatermarked",
        "ours",
        "kgw1-d1.0",
        "kgw1",
        "kgw0",
        "synthid",
    ]
