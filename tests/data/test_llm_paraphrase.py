"""Tests for the whole-text LLM paraphraser (data.llm_paraphrase, its cleaning) on a tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data import llm_paraphrase as lp
from data.llm_paraphrase_cleaning import clean_text_paraphrase
from tests.helpers import tiny_llama, word_tokenizer
from watermark.models.devices import dtype_name

TEMPLATE = "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
TEXTS = [
    "the storm hit the north road and the bridge .",
    "the bank said the price rose .",
    "river city council vote on the school budget .",
]


def save_tiny_lm(root: Path, chat: bool = True, seed: int = 0) -> Path:
    """A tiny random Llama and the word tokenizer (with a trivial chat template if ``chat``)."""
    tok = word_tokenizer()
    if chat:
        tok.chat_template = TEMPLATE
    tiny_llama(len(tok), seed=seed).save_pretrained(root)
    tok.save_pretrained(root)
    return root


def test_clean_text_paraphrase_strips_meta_talk_and_rejects_unusable_outputs() -> None:
    src = "The council voted 7 to 2 on Tuesday to close the old bridge in Leeds."
    good = "On Tuesday, by 7 votes to 2, councillors in Leeds decided the old bridge will close."
    clean = clean_text_paraphrase
    assert clean(good, src) == good
    wrapped = f'Sure! Here is the rewritten text:\n\n"{good}"\n\nNote: I kept every fact.'
    assert clean(wrapped, src) == good
    assert clean(f"```\n{good}\n```", src) == good
    assert clean(f"Rewritten text: {good}", src) == good
    assert clean(clean(wrapped, src) or "", src) == good  # idempotent on accepted outputs
    assert clean(src.upper() + "!", src) is None  # a copy
    assert clean("", src) is None and clean("Here is the paraphrase:", src) is None
    assert clean("Leeds bridge shut.", src) is None  # under half the words
    assert clean(" ".join([good] * 3), src) is None  # over twice the words
    assert clean(f"{good} This paraphrased version keeps the facts.", src) is None
    refusal = "As an AI, I cannot rewrite texts about bridges in Leeds today, sorry."
    assert clean(refusal, src) is None


def test_prompt_uses_the_chat_template_or_a_plain_fallback(tmp_path: Path) -> None:
    chat = lp.TextParaphraser(str(save_tiny_lm(tmp_path / "chat")))
    plain = lp.TextParaphraser(str(save_tiny_lm(tmp_path / "plain", chat=False)))
    text = TEXTS[0]
    assert chat.chat and not plain.chat
    assert chat.prompt(text) == f"<user> {lp.INSTRUCTION}\n\nText:\n{text} "
    assert plain.prompt(text) == f"{lp.INSTRUCTION}\n\nText:\n{text}\n\nRewritten text:\n"
    assert 3 in chat.stop_ids  # [EOS]
    for paraphraser in (chat, plain):  # both decode, greedily: the same output twice
        first = paraphraser.generate(TEXTS[:2])
        assert first == paraphraser.generate(TEXTS[:2])
        assert all(isinstance(o, str) and isinstance(f, bool) for o, f in first)


def test_cache_is_written_per_batch_and_a_rerun_decodes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = str(save_tiny_lm(tmp_path / "lm"))
    cache = tmp_path / "cache" / "llm.jsonl"
    calls: list[list[str]] = []
    real = lp.TextParaphraser.generate

    def counted(self, texts):
        calls.append(list(texts))
        return real(self, texts)

    monkeypatch.setattr(lp.TextParaphraser, "generate", counted)
    first = lp.run_text_paraphrases(TEXTS + [TEXTS[0], "  "], cache, model, batch_size=2)
    assert [len(c) for c in calls] == [2, 1]  # three distinct texts, batches of 2
    records = [json.loads(line) for line in cache.read_text().splitlines()]
    assert sorted(r["text"] for r in records) == sorted(TEXTS)
    assert all(r["model"] == model and r["key"] == lp.cache_key(model, r["text"]) for r in records)
    assert {r["dtype"] for r in records} == {dtype_name(lp.default_dtype())}
    assert first[3] == first[0] and first[4] is None  # a repeated text; an empty one
    for text, out in zip(TEXTS, first):  # the tiny model's random words are judged when read
        record = next(r for r in records if r["text"] == text)
        assert out == lp.judged(record, text)
        assert out is None or out != text

    with cache.open("a") as handle:  # a run killed mid-write leaves a truncated line
        handle.write('{"key": "x", "tex')
    monkeypatch.setattr(lp.TextParaphraser, "__init__", lambda *a, **k: pytest.fail("loaded"))
    assert lp.run_text_paraphrases(TEXTS, cache, model) == first[:3]  # nothing to decode
    assert len(calls) == 2

    other = str(save_tiny_lm(tmp_path / "lm2", seed=5))  # another model: its own entries
    assert lp.cache_key(other, TEXTS[0]) != lp.cache_key(model, TEXTS[0])
    with pytest.raises(pytest.fail.Exception, match="loaded"):
        lp.run_text_paraphrases(TEXTS[:1], cache, other)


def test_cut_off_outputs_are_rejected() -> None:
    text, good = TEXTS[1], "the price rose , the bank said ."
    record = {"key": "k", "text": text, "output": good, "finished": True}
    assert lp.judged(record, text) == good
    assert lp.judged({**record, "finished": False}, text) is None  # stopped at the token limit
    assert lp.judged({**record, "text": "another text"}, text) is None
