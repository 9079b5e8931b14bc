"""Tests for strength rules, filters and the context guard (watermark.core.rules,
watermark.core.scoring)."""

from __future__ import annotations

import itertools

import pytest
import torch
from transformers import TopKLogitsWarper, TopPLogitsWarper

from tests.reference import repeated
from watermark.config.schemes import Tournament, scheme_class
from watermark.core.repeats import earlier_runs, repeated_steps
from watermark.core.rules.logits import apply_rule as marked_logits
from watermark.core.rules.logits import filter_logits

INF = float("inf")


def tournament(logits: torch.Tensor, green: torch.Tensor) -> torch.Tensor:
    """The tournament's update over all the layers of ``green`` (B, L, N)."""
    return Tournament(layers=green.shape[1]).mark(logits, green)


def apply_rule(
    logits,
    green,
    maps,
    gated,
    rule,
    strength,
    top_k=50,
    top_p=1.0,
    filter_first=False,
    neutral=None,
    temperature=1.0,
    repeated=None,
    repeat_shift=None,
    keep_neutral=False,
):
    """The scheme named ``rule`` with ``strength`` and these sampling settings on a batch
    (``apply_rule`` of the core, which reads them from the scheme)."""
    settings = {"top_k": top_k, "top_p": top_p, "filter_first": filter_first}
    settings.update(temperature=temperature, neutral="kept" if keep_neutral else "half")
    scheme = scheme_class(rule)(**{scheme_class(rule).strength_field: strength, **settings})
    return marked_logits(logits, scheme, green, maps, gated, neutral, repeated, repeat_shift)


def one_list(size: int) -> torch.Tensor:
    """An identity token map: the "mapper signs" are the green bits themselves."""
    return torch.arange(size)[None]


def bare(logits, green, gated, rule, strength, **kw):
    """A rule with one green list and no filters."""
    maps = one_list(logits.shape[-1])
    return apply_rule(logits, green, maps, gated, rule, strength, top_k=0, top_p=1.0, **kw)


def test_biasing_rules_against_hand_values() -> None:
    logits = torch.tensor([[3.0, 1.0, -1.0, -2.0, -INF], [3.0, 1.0, -1.0, -2.0, 0.0]])
    green = torch.tensor([[True, False, True, True, True], [True, True, True, True, True]])
    gated = torch.tensor([True, False])
    paper = bare(logits, green, gated, "paper", 1.0)
    assert paper[0].tolist() == [6.0, 1.0, -2.0, -4.0, -INF]  # negative green logits drop
    assert torch.equal(paper[1], logits[1])  # closed gate: untouched
    additive = bare(logits, green, gated, "additive", 2.0)
    assert additive[0].tolist() == [5.0, 1.0, 1.0, 0.0, -INF]
    neutral = torch.tensor([[True, True, False, False, False], [False] * 5])
    half = bare(logits, green, gated, "additive", 2.0, neutral=neutral)
    assert half[0].tolist() == [4.0, 2.0, 1.0, 0.0, -INF]  # neutral tokens get bias / 2
    # filtered first, an additive bias keeps the top-k set (it only moves their logits)
    x = torch.randn(6, 200) * 4
    g = torch.rand(6, 200) > 0.5
    gated = torch.ones(6, dtype=torch.bool)
    y = apply_rule(x, g, one_list(200), gated, "additive", 1.5, 20, 1.0, filter_first=True)
    for a, b in zip(x, y):
        assert set(torch.topk(a, 20).indices.tolist()) == set(
            torch.isfinite(b).nonzero()[:, 0].tolist()
        )


def test_filters_match_transformers_warpers() -> None:
    torch.manual_seed(0)
    x = torch.randn(8, 300) * 3
    for k, p in [(50, 0.9), (0, 0.7), (10, 1.0), (300, 0.95)]:
        ref = x.clone()
        if k:
            ref = TopKLogitsWarper(k)(None, ref)
        if p < 1:
            ref = TopPLogitsWarper(p)(None, ref)
        assert torch.equal(torch.isfinite(filter_logits(x, k, p)), torch.isfinite(ref))


def test_filter_order() -> None:
    # a tail token (p ~ 0.05) is green: boosted before the filter it enters the nucleus; filtered
    # first, it is already gone and the rule only re-weights the nucleus
    logits = torch.log(torch.tensor([[0.5, 0.45, 0.05]]))
    green, maps = torch.tensor([[False, False, True]]), one_list(3)
    gated = torch.tensor([True])
    after = apply_rule(logits, green, maps, gated, "additive", 4.0, top_k=0, top_p=0.9)
    first = apply_rule(logits, green, maps, gated, "additive", 4.0, 0, 0.9, filter_first=True)
    assert torch.isfinite(after[0, 2]) and not torch.isfinite(first[0, 2])


def test_tournament_preserves_the_distribution_over_keys() -> None:
    # every assignment of green bits to 4 tokens and 2 layers, equally likely (a random key):
    # the expected output distribution is the input distribution
    p = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)
    logits = p.log().float()[None]
    total = torch.zeros(4, dtype=torch.float64)
    assignments = list(itertools.product([False, True], repeat=8))
    for bits in assignments:
        green = torch.tensor(bits).reshape(1, 2, 4)
        total += torch.softmax(tournament(logits, green).double(), -1)[0]
    assert torch.allclose(total / len(assignments), p, atol=1e-6)
    # a neutral token (already in the text) has g = 1/2 in every layer: still unbiased
    maps = torch.arange(8).reshape(2, 4)
    neutral = torch.tensor([[False, True, False, True]])
    total = torch.zeros(4, dtype=torch.float64)
    for bits in assignments:
        dims = torch.tensor(bits)[None]
        out = apply_rule(
            logits,
            dims,
            maps,
            torch.tensor([True]),
            "tournament",
            2,
            0,
            1.0,
            filter_first=True,
            neutral=neutral,
        )
        total += torch.softmax(out.double(), -1)[0]
    assert torch.allclose(total / len(assignments), p, atol=1e-6)
    # one layer: green tokens x (2 - G), red tokens x (1 - G)
    green = torch.tensor([[[True, False, True, False]]])
    out = torch.softmax(tournament(logits, green).double(), -1)[0]
    g_mass = 0.65
    expected = torch.tensor(
        [0.5 * (2 - g_mass), 0.3 * (1 - g_mass), 0.15 * (2 - g_mass), 0.05 * (1 - g_mass)]
    )
    assert torch.allclose(out, expected.double(), atol=1e-6)
    # 30 layers: rounding in the green mass must not make a probability negative (NaN logs);
    # without the clamp about 3% of these rows fail
    torch.manual_seed(0)
    deep = tournament(torch.randn(300, 50) * 4, torch.rand(300, 30, 50) > 0.5)
    assert not torch.isnan(deep).any()
    assert torch.allclose(torch.softmax(deep.double(), -1).sum(-1), torch.ones(300).double())
    # filtered tokens stay impossible
    logits = torch.tensor([[1.0, 0.5, -INF]])
    out = tournament(logits, torch.ones(1, 3, 3, dtype=torch.bool))
    assert out[0, 2] == -INF and torch.isfinite(out[0, :2]).all()


def test_kept_neutral_tokens_keep_their_probability() -> None:
    # "kept": whatever the bits, a neutral token (a pair already in the text) has the model's
    # probability, so the rule cannot push a text into repeating itself; over every key the
    # output is still the input distribution. "half" moves mass onto the neutral tokens when
    # the fresh ones are red: the 0.4 default's loops.
    p = torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64)
    logits, maps = p.log().float()[None], torch.arange(8).reshape(2, 4)
    neutral, gated = torch.tensor([[True, False, False, True]]), torch.tensor([True])
    total = torch.zeros(4, dtype=torch.float64)
    assignments = list(itertools.product([False, True], repeat=8))
    for top_k in (0, 4):  # the whole vocabulary, and the candidates path
        total.zero_()
        for bits in assignments:
            dims = torch.tensor(bits)[None]
            out = apply_rule(
                logits,
                dims,
                maps,
                gated,
                "tournament",
                2,
                top_k,
                1.0,
                filter_first=True,
                neutral=neutral,
                keep_neutral=True,
            )
            probs = torch.softmax(out.double(), -1)[0]
            assert torch.allclose(probs[[0, 3]], p[[0, 3]], atol=1e-6)
            total += probs
        assert torch.allclose(total / len(assignments), p, atol=1e-6)
    red = torch.zeros(1, 8, dtype=torch.bool)  # the fresh tokens are red in both lists
    half = apply_rule(
        logits, red, maps, gated, "tournament", 2, 0, 1.0, filter_first=True, neutral=neutral
    )
    assert torch.softmax(half.double(), -1)[0, [0, 3]].sum() > 0.6  # 0.5 from the model
    kept = apply_rule(
        logits, red, maps, gated, "additive", 2.0, 0, 1.0, neutral=neutral, keep_neutral=True
    )
    assert torch.allclose(torch.softmax(kept.double(), -1)[0], p, atol=1e-6)  # all red: as is
    # a row whose every candidate is neutral is the model's distribution
    everything = torch.ones(1, 4, dtype=torch.bool)
    out = apply_rule(
        logits,
        red,
        maps,
        gated,
        "tournament",
        2,
        4,
        1.0,
        filter_first=True,
        neutral=everything,
        keep_neutral=True,
    )
    assert torch.allclose(torch.softmax(out.double(), -1)[0], p, atol=1e-6)


def test_tournament_on_candidates_equals_full_vocabulary() -> None:
    torch.manual_seed(1)
    B, V, D, L = 5, 300, 24, 6
    logits, dims = torch.randn(B, V) * 3, torch.rand(B, D) > 0.5
    maps = torch.stack([torch.randperm(V) % D for _ in range(L)])
    gated = torch.tensor([True, True, False, True, True])
    fast = apply_rule(logits, dims, maps, gated, "tournament", L, 20, 0.9, filter_first=True)
    base = filter_logits(logits, 20, 0.9)
    full = torch.where(gated[:, None], tournament(base, dims[:, maps]), base)
    assert torch.equal(torch.isfinite(fast), torch.isfinite(full))
    assert torch.allclose(fast[torch.isfinite(full)], full[torch.isfinite(full)], atol=1e-6)


@pytest.mark.parametrize("h", [0, 1, 2, 3])
def test_context_guard_batched_and_per_text_match_reference(h: int) -> None:
    torch.manual_seed(h)
    rows = torch.randint(0, 4, (6, 40))  # small alphabet: many repeats
    for row in rows:
        ids = row.tolist()
        per_text = repeated_steps(ids, h).tolist()
        for t in range(1, len(ids) + 1):
            prefix = ids[: t - 1]
            expected = repeated(prefix, h)
            assert per_text[t - 1] == expected
            assert (
                bool(earlier_runs(torch.tensor([prefix], dtype=torch.long).reshape(1, -1), h).any())
                == expected
            )
    assert repeated([5, 6, 7, 5, 6], 2) and not repeated([5, 6, 7, 6, 5], 2)
    assert repeated([1, 1, 1], 2)  # an overlapping earlier run counts


def test_nucleus_on_top_k_candidates_equals_sorting_the_vocabulary() -> None:
    from tests.reference import top_k_top_p

    torch.manual_seed(1)
    x = torch.randn(16, 500) * 3
    x[0, :60] = 1.0  # ties at the k-th value: every tie is kept (the full-sort path)
    x[1, 10:] = float("-inf")  # fewer than k finite logits (the full-sort path)
    for k, p in [(50, 0.9), (20, 0.5), (50, 0.99), (5, 0.3)]:
        for batch in (x, x[2:]):  # x[2:]: no ties, k finite logits per row (the candidates path)
            fast = filter_logits(batch, k, p)
            assert torch.equal(fast, torch.stack([top_k_top_p(row, k, p) for row in batch]))


def test_temperature_divides_logits_before_filters_and_rule() -> None:
    """Temperature T acts first, on every row: the same as the rule on logits / T."""
    logits = torch.tensor([[3.0, 1.0, -1.0, -2.0, -INF], [2.0, 1.5, 1.0, 0.0, -1.0]])
    green = torch.tensor([[True, False, True, False, True], [False, True, True, False, True]])
    gated = torch.tensor([True, False])
    maps = one_list(5)
    for rule in ("additive", "tournament"):
        hot = apply_rule(
            logits,
            green,
            maps,
            gated,
            rule,
            2.0,
            top_k=3,
            top_p=0.8,
            filter_first=True,
            temperature=2.0,
        )
        want = apply_rule(
            logits / 2.0, green, maps, gated, rule, 2.0, top_k=3, top_p=0.8, filter_first=True
        )
        assert torch.equal(hot, want)
        # a higher temperature widens the nucleus of the closed-gate row
        cold = apply_rule(
            logits, green, maps, gated, rule, 2.0, top_k=3, top_p=0.8, filter_first=True
        )
        assert torch.isfinite(hot[1]).sum() > torch.isfinite(cold[1]).sum()


def test_marks_against_hand_values() -> None:
    logits = torch.tensor([[2.0, -1.0, 0.5]])
    green = torch.tensor([[[1.0, 1.0, 0.0]]])  # (B, L, N)
    assert scheme_class("paper")(delta=1.0).mark(logits, green).tolist() == [[4.0, -2.0, 0.5]]
    assert scheme_class("additive")(bias=2.0).mark(logits, green).tolist() == [[4.0, 1.0, 0.5]]
    probs = scheme_class("tournament")(layers=1).mark(logits, green).exp()
    assert torch.allclose(probs.sum(), torch.tensor(1.0))
