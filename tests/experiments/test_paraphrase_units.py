"""``experiments/paraphrase_units.py``: the kept-token window stability of ``--spans``."""

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
    wm = tiny.make(alpha=-1.0, opening_steps=0, embed_window=4, layers=3)
    same = units.span_stability(wm, [(TEXT, TEXT)])
    assert same["kept_tokens"] == len(units.first_tested(wm.detect([TEXT])[0]))
    assert same["window_cosine"] == pytest.approx(1.0, abs=1e-5)
    assert same["signs_kept"] == 1.0 and same["bits_kept"] == 1.0
    assert [b["tokens"] for b in same["bins"]] == [same["kept_tokens"]]
    # another text sharing a few words: they are kept, in other contexts
    moved = units.span_stability(wm, [(TEXT, OTHER + " the town kept its bridge")])
    assert moved["kept_tokens"] > 0 and moved["window_cosine"] < 1.0 and moved["signs_kept"] < 1.0
    assert sum(b["tokens"] for b in moved["bins"]) == moved["kept_tokens"]
