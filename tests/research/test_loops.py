"""The loop diagnosis's helpers (:mod:`research.loops`): the loop entry and the summary."""

from __future__ import annotations

import json

from research import loops

first_repeat, summary = loops.first_repeat, loops.summary


def test_first_repeat_is_the_token_completing_a_repeated_4gram() -> None:
    assert first_repeat([1, 2, 3, 4, 1, 2, 3, 4]) == 7
    assert first_repeat([1, 2, 3, 4, 5]) is None
    assert first_repeat([7, 7, 7, 7, 7]) == 4  # 7 7 7 7 at 0 and at 1


def test_summary_counts_the_tail_of_the_chosen_units(tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    values = [(0, 0.5, 30), (1, 0.1, 4), (2, 0.3, 9), (9, 0.9, 99)]
    rows = [{"unit": u, "rep4": r, "longest": n} for u, r, n in values]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    found = summary(path, {0, 1, 2})
    assert found["texts"] == 3
    assert found["rep4>0.2"][0] == round(2 / 3, 4) and found["rep4>0.4"][0] == round(1 / 3, 4)
    assert found["longest"][0] == round(43 / 3, 4)
