"""``research/paraphrase_units.py``: the kept-token window stability of ``--spans``."""

from __future__ import annotations

import pytest

from tests.helpers import experiment_script

units = experiment_script("paraphrase_units")
TEXT = "the river ran past the old mill and the town kept its bridge over the water all year"
OTHER = "a quiet field of wheat lay under grey clouds while the farmer counted his sheep again"


def test_first_tested_is_each_tokens_first_tested_step(tiny) -> None:
    res = tiny.make(alpha=-1.0, opening_steps=0).detect([TEXT])[0]
    first = units.first_tested(res)
    assert first and all(res.tested[step - 1] for step in first.values())
    for token, step in first.items():
        assert res.token_ids[step - 1] == token
        assert not any(t == token and ok for t, ok in zip(res.token_ids[: step - 1], res.tested))


def test_span_stability_of_a_text_and_itself_and_of_a_rewrite(tiny) -> None:
    wm = tiny.make(alpha=-1.0, opening_steps=0, embed_window=4)
    same = units.span_stability(wm, [(TEXT, TEXT)])
    assert same["kept_tokens"] == len(units.first_tested(wm.detect([TEXT])[0]))
    assert same["window_cosine"] == pytest.approx(1.0, abs=1e-5)
    assert same["signs_kept"] == 1.0 and same["bits_kept"] == 1.0
    assert [b["tokens"] for b in same["bins"]] == [same["kept_tokens"]]
    # another text sharing a few words: they are kept, in other contexts
    moved = units.span_stability(wm, [(TEXT, OTHER + " the town kept its bridge")])
    assert moved["kept_tokens"] > 0 and moved["window_cosine"] < 1.0 and moved["signs_kept"] < 1.0
    assert sum(b["tokens"] for b in moved["bins"]) == moved["kept_tokens"]


def test_synthid_units_are_its_hashed_ngrams_and_a_copy_keeps_them_all() -> None:
    from evaluation.synthid import SynthIDMethod
    from tests.helpers import word_tokenizer
    from watermark.core.text import encode_text

    tok = word_tokenizer()
    method = SynthIDMethod(list(range(101, 111)), 3, tok, top_k=0, top_p=1.0)
    found = units.synthid_units(method, tok, TEXT)
    ids = [0, 0] + encode_text(tok, TEXT)
    assert set(found) == {tuple(ids[i : i + 3]) for i in range(len(ids) - 2)}
    assert 0 < sum(found.values()) < len(found)  # mean g-values fall on both sides of 1/2
    assert units.synthid_units(method, tok, TEXT) == found  # keyed, not random
    kept = set(found) & set(units.synthid_units(method, tok, OTHER + " the town kept its bridge"))
    assert 0 < len(kept) < len(found)  # a shared phrase keeps only its own n-grams
