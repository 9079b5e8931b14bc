"""The sentence layer's rules: sentences from text, the key, the candidates' score, the exact
test and the combination with the token-level test."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
import torch

from watermark.detect.verdict import fisher
from watermark.sentences.key import SentenceKey, margin_weights
from watermark.sentences.significance import sentence_test, text_test, two_point_sf
from watermark.sentences.spans import ends_sentence, sentence_spans


def test_sentences_end_at_a_mark_followed_by_whitespace() -> None:
    text = ' Mr. Smith said "yes." It cost 3.5 million!  Then (a pause.) And then'
    pieces = [(text[a:b], done) for a, b, done in sentence_spans(text)]
    assert pieces == [
        ("Mr.", True),
        ('Smith said "yes."', True),
        ("It cost 3.5 million!", True),
        ("Then (a pause.)", True),
        ("And then", False),
    ]
    assert sentence_spans("") == [] and sentence_spans("   ") == []
    assert [done for *_, done in sentence_spans("One. Two.")] == [True, True]
    assert all(map(ends_sentence, [".", " end.", '!"', "?)", ".\n\n", "...", "\u201cno.\u201d"]))
    assert not any(map(ends_sentence, ["3", " and", ".5", "", "  "]))


def test_the_key_is_a_function_of_the_secret() -> None:
    a, b = SentenceKey.of("k1", 64, 8, 2), SentenceKey.of("k2", 64, 8, 2)
    again = SentenceKey.of("k1", 64, 8, 2)
    assert torch.equal(a.dims, again.dims) and torch.equal(a.targets, again.targets)
    assert not torch.equal(a.dims, b.dims)
    assert a.targets.shape == (4, 8) and not set(a.dims.tolist()) & set(a.context_dims.tolist())
    with pytest.raises(ValueError):
        SentenceKey.of("k", 8, 8, 1)


def test_groups_come_from_the_previous_sentences_signs() -> None:
    key = SentenceKey.of("k", 16, 4, 2)
    previous = torch.zeros(3, 16)
    previous[1, key.context_dims[0]] = 1.0
    previous[2, key.context_dims] = 1.0
    assert key.groups(torch.zeros(3, 16), previous).tolist() == [0, 1, 3]
    assert key.groups(torch.zeros(3, 16), None).tolist() == [0, 0, 0]
    assert SentenceKey.of("k", 16, 4).groups(torch.zeros(2, 16), previous[:2]).tolist() == [0, 0]


def test_own_keying_reads_each_sentences_own_signs_and_tests_the_first_in_its_group() -> None:
    key = SentenceKey.of("k", 16, 4, 2, keying="own")
    assert torch.equal(key.dims, SentenceKey.of("k", 16, 4, 2).dims)  # the same outputs
    v = torch.zeros(3, 16)
    v[1, key.context_dims[0]] = 1.0
    v[2, key.context_dims] = 1.0
    assert key.groups(v, None).tolist() == [0, 1, 3]
    assert key.groups(v, torch.ones(3, 16)).tolist() == [0, 1, 3]  # the predecessor is ignored
    spans = [(0, 1, True), (2, 3, True)]
    own = text_test(key, spans, "a b", v[[2, 1]])  # the first sentence keeps group 3
    before = text_test(SentenceKey.of("k", 16, 4, 2), spans, "a b", v[[2, 1]])
    assert own.num_sentences == before.num_sentences == 2
    hits = key.hits(v[[2, 1]], torch.tensor([3, 1])).sum()
    assert own.hits == int(hits)
    with pytest.raises(ValueError, match="keying"):
        SentenceKey.of("k", 16, 4, 2, keying="next")


def test_the_score_prefers_the_targets_with_a_margin() -> None:
    key = SentenceKey.of("k", 16, 4)
    signs = torch.where(key.targets[0], 1.0, -1.0)
    v = torch.zeros(3, 16)
    v[0, key.dims] = signs * 0.1  # every target hit, near zero
    v[1, key.dims] = signs * 2.0  # every target hit, far from zero
    v[2, key.dims] = -signs * 2.0  # every target missed
    scores = key.scores(v, torch.zeros(3, dtype=torch.long))
    assert scores[1] > scores[0] > scores[2]
    assert key.hits(v, torch.zeros(3, dtype=torch.long)).sum(dim=1).tolist() == [4, 4, 0]


def test_a_sentences_evidence_is_its_z_in_the_test_alone() -> None:
    """Hits: (hits - b/2) / (sqrt(b)/2); margin: the weighed sum over the weights' norm."""
    torch.manual_seed(0)
    v, groups = torch.randn(5, 16), torch.zeros(5, dtype=torch.long)
    hits_key, margin_key = SentenceKey.of("k", 16, 4), SentenceKey.of("k", 16, 4, test="margin")
    hits = hits_key.hits(v, groups).sum(dim=1).float()
    assert torch.allclose(hits_key.evidence(v, groups), (hits - 2) / 1.0)
    w, signed = margin_weights(v, margin_key.dims).float(), 2 * hits_key.hits(v, groups) - 1
    for i in range(5):
        z = (w[i] * signed[i]).sum() / math.sqrt((w[i] ** 2).sum())
        assert math.isclose(margin_key.evidence(v, groups)[i].item(), z.item(), rel_tol=1e-5)


def test_the_two_point_law_matches_enumeration() -> None:
    pairs = [(0, 3), (2, 1), (4, 0), (1, 1)]
    for observed in range(0, 12):
        brute = sum(sum(choice) >= observed for choice in itertools.product(*pairs)) / 2 ** len(
            pairs
        )
        assert two_point_sf(observed, pairs) == pytest.approx(brute)


def test_the_sentence_test_is_exact_over_keys_whatever_the_sentences_share() -> None:
    """Every target assignment of a random key, for texts whose sentences agree strongly: the
    share of keys with p <= alpha is at most alpha, at every alpha."""
    torch.manual_seed(0)
    for _ in range(5):
        base = torch.rand(1, 5) > 0.5
        positive = base.expand(6, 5) ^ (torch.rand(6, 5) > 0.85)  # six sentences, one topic
        groups = torch.zeros(6, dtype=torch.long)
        ps = []
        for targets in itertools.product([False, True], repeat=5):
            hits = positive == torch.tensor(targets)
            ps.append(sentence_test(hits, groups, positive))
        for alpha in sorted(set(ps)):
            assert sum(p <= alpha for p in ps) / len(ps) <= alpha + 1e-12


@pytest.mark.parametrize("context, power", [(1, 1), (0, 4), (1, 3)])
def test_the_margin_test_is_exact_over_keys_and_weighs_far_signs_more(context, power) -> None:
    """Every target assignment of a key with its groups from each sentence's own signs (or one
    target set): the margin test's p-value, its weights to any power, is the share of
    assignments that weigh at least as much, and its level holds at every alpha."""
    v = torch.randn(6, 20, generator=torch.Generator().manual_seed(3))
    v[:, :4] += 1.5  # the sentences share a lean on some outputs
    key = SentenceKey.of("k", 20, 3 + 2 * (1 - context), context, "own", "margin", power)
    spans, text = [(i, i + 1, True) for i in range(6)], "abcdef"  # six distinct sentences
    groups = key.text_groups(v)
    w = margin_weights(v, key.dims, power)
    assert torch.equal(w, key.weights(v))
    observed = int((w * key.hits(v, groups)).sum())
    ps, at_least = [], 0
    for bits in itertools.product([False, True], repeat=key.targets.numel()):
        other = replace(key, targets=torch.tensor(bits).reshape(key.targets.shape))
        at_least += int((w * other.hits(v, groups)).sum()) >= observed
        ps.append(text_test(other, spans, text, v).p_value)
    assert text_test(key, spans, text, v).p_value == pytest.approx(at_least / len(ps))
    for alpha in sorted(set(ps)):  # the level holds at every alpha
        assert sum(p <= alpha for p in ps) / len(ps) <= alpha + 1e-12
    # the margin |v| / mean |v|: below 0.5, 0.5-1, 1-2, above 2 -> 0.62, 1.54, 2.56, 3.84
    row = torch.tensor([[-0.4, 0.7, -1.5, 3.0, 0.6, -0.6, 0.6, 0.6]])  # mean |v| = 1
    assert margin_weights(row, torch.arange(4)).tolist() == [[5, 12, 20, 31]]
    hits = SentenceKey.of("k", 20, key.bits, context, "own")
    assert (
        not hits.margin
        and text_test(hits, spans, text, v).hits == text_test(key, spans, text, v).hits
    )  # the same hits, another weighing
    with pytest.raises(ValueError, match="test must be one of"):
        SentenceKey.of("k", 20, 3, test="margins")


def test_fisher_combines_independent_p_values() -> None:
    assert fisher([0.3]) == pytest.approx(0.3)
    assert fisher([0.1, 0.1]) == pytest.approx(0.01 * (1 - math.log(0.01)))
    assert fisher([1.0, 1.0]) == pytest.approx(1.0)
    assert fisher([1e-12, 0.5]) < 1e-10
