"""The FPR summaries of :mod:`research.sentence_tail` against direct counting."""

from __future__ import annotations

import numpy as np

from research import sentence_tail


def test_summary_counts_each_key_and_the_first_three() -> None:
    p = np.array([[0.001, 0.5, 0.02, 0.2], [0.5, 0.004, 0.03, 0.009], [0.9, 0.9, 0.9, 0.9]])
    out = sentence_tail.summary(p)
    assert out["per_key_count_p<0.01"] == [1, 1, 0, 1]
    assert out["p<0.01"]["first3_mean"] == round(2 / 9, 5)
    assert out["p<0.01"]["mean"] == round(3 / 12, 5)
    assert out["p<0.05"]["worst"] == round(2 / 3, 5)


def test_uniform_parts_combine_to_the_nominal_rate() -> None:
    rng = np.random.default_rng(0)
    token, window, sent = (rng.uniform(size=(3000, 4)) for _ in range(3))
    out = sentence_tail.table(token, window, sent)
    for part in ("sentence", "combined_whole", "combined_windowed"):
        assert abs(out[part]["p<0.05"]["mean"] - 0.05) < 0.006
    assert out["combined_whole"]["p<0.01"]["mean"] < 0.015
    strong = sentence_tail.table(token, window, sent / 1000)  # a sentence part far below
    assert strong["combined_whole"]["p<0.01"]["mean"] > 0.3


def test_setting_parses_keying_context_bits_the_test_and_the_power() -> None:
    assert sentence_tail.setting("own:2:32") == ("own", 2, 32, "hits", 1)
    assert sentence_tail.setting("own:4:16:margin") == ("own", 4, 16, "margin", 1)
    assert sentence_tail.setting("own:0:32:margin:4") == ("own", 0, 32, "margin", 4)
