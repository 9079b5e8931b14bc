"""The sentence test of one text under one key: exact over keys, given the text.

The test counts hits: h_{g,i} = the number of distinct sentences of group g whose output d_i has
the target sign, T = sum h_{g,i}. Given the text, a random key's target for (g, i) is +1 or -1
with probability 1/2 each, independently, so h_{g,i} is c or n_g - c (c: the sentences of g with
v_{d_i} > 0) with probability 1/2 each. That null is exact over keys whatever the sentences share
(topic, style): the p-value P(T' >= T) is a convolution of two-point laws. For one fixed key it
holds only as far as the keyed outputs are balanced over text (the worst of 20 keys flagged 3.1%
of 353 human texts at p < 0.01: docs/research/sentence-layer.md).

With the margin test each hit weighs its integer margin weight
(:func:`~watermark.sentences.key.margin_weights`). The weights are a function of the text and of
which outputs are keyed, not of the targets, so each (g, i) still adds the weights of its
positive or of its negative sentences with probability 1/2 each: the same exact convolution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from watermark.sentences.key import SentenceKey


@dataclass
class SentenceTest:
    """The sentence test of one text.

    Attributes:
        p_value: Exact P(T' >= T) given the text (1.0 when no sentence is tested).
        hits: T, the hits over the tested sentences and outputs.
        expected: E[T'] under the null.
        num_sentences: Distinct complete sentences tested.
        spans: ``[start, end, hits]`` per tested sentence (characters of the text).
    """

    p_value: float = 1.0
    hits: int = 0
    expected: float = 0.0
    num_sentences: int = 0
    spans: list[list[int]] | None = None


def two_point_sf(observed: int, pairs: Sequence[tuple[int, int]]) -> float:
    """P(sum X_j >= observed) for independent X_j equal to a_j or b_j with probability 1/2."""
    law = np.ones(1)
    for a, b in pairs:
        step = np.zeros(max(a, b) + 1)
        step[a] += 0.5
        step[b] += 0.5
        law = np.convolve(law, step)
    return float(min(1.0, law[observed:].sum())) if observed < len(law) else 0.0


def sentence_test(
    hits: torch.Tensor,
    groups: torch.Tensor,
    positive: torch.Tensor,
    weights: torch.Tensor | None = None,
) -> float:
    """Exact p-value of the hits (N, b) of N distinct sentences in their groups (N,), given
    which tested outputs were positive (N, b), each hit counting 1 or its integer weight
    (N, b) (module docstring)."""
    w = torch.ones_like(hits, dtype=torch.long) if weights is None else weights.long()
    pairs = []
    for g in groups.unique().tolist():
        rows = groups == g
        up, down = (w[rows] * positive[rows]).sum(0), (w[rows] * ~positive[rows]).sum(0)
        pairs += [(int(a), int(b)) for a, b in zip(up.tolist(), down.tolist())]
    return two_point_sf(int((w * hits).sum()), pairs)


def text_test(
    key: SentenceKey, spans: Sequence[tuple[int, int, bool]], text: str, v: torch.Tensor
) -> SentenceTest:
    """The sentence test of ``text`` cut into ``spans`` (:func:`sentence_spans`) whose outputs
    are ``v`` (N, D): each distinct complete sentence in its group (the first occurrence of a
    sentence in a group); keyed by the previous sentence, the first sentence in group 0."""
    groups = key.text_groups(v)
    seen, rows = set(), []
    for i, (a, b, complete) in enumerate(spans):
        if complete and (text[a:b], int(groups[i])) not in seen:
            seen.add((text[a:b], int(groups[i])))
            rows.append(i)
    if not rows:
        return SentenceTest(spans=[])
    index = torch.tensor(rows)
    hits = key.hits(v[index], groups[index])
    positive = v[index][:, key.dims] > 0
    return SentenceTest(
        p_value=sentence_test(hits, groups[index], positive, key.weights(v[index])),
        hits=int(hits.sum()),
        expected=len(rows) * key.bits / 2,
        num_sentences=len(rows),
        spans=[[spans[i][0], spans[i][1], int(h.sum())] for i, h in zip(rows, hits)],
    )
