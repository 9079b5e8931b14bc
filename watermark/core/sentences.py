"""The sentence layer: a watermark in the meaning of each sentence (off unless configured).

**Sentences** are found from text alone, by one rule (:func:`sentence_spans`): a sentence ends
after ``.``, ``!`` or ``?`` (and any closing quotes or brackets) where whitespace follows, or at
the end of the text. Generation stops a candidate at the token that ends with such a mark
(:func:`ends_sentence`), so the sentences it chose are the ones detection cuts.

**Sentence bits.** A sentence's embedding u (the watermark's SE) is mapped by the SM to v (D
outputs). The key picks ``bits`` outputs d_1..d_b and, per context group g, a target sign
t_{g,i} for each (:class:`SentenceKey`). The group is 0 for every sentence (``context_bits = 0``:
a global key) or the signs of ``context_bits`` other keyed outputs (2^c groups, harder to learn
from many texts than one), read from the previous sentence (``keying = "previous"``: a
sentence's test then needs its predecessor to keep those signs) or from the sentence itself
(``"own"``: no predecessor needed, so a reordering rewrite keeps the groups).

**Generation** samples N candidates per sentence and keeps the one with the highest
:meth:`SentenceKey.scores`: sum_i tanh(t_i v_{d_i} / tau), tau the mean |v| of the candidates'
keyed outputs. The tanh rewards a sign that sits far from zero (a margin against a rewrite's
move) and saturates, so one huge output does not buy the others.

**The test** (:func:`sentence_test`) counts hits: h_{g,i} = the number of distinct sentences of
group g whose output d_i has the target sign, T = sum h_{g,i}. Given the text, a random key's
target for (g, i) is +1 or -1 with probability 1/2 each, independently, so h_{g,i} is c or n_g - c
(c: the sentences of g with v_{d_i} > 0) with probability 1/2 each. That null is exact over keys
whatever the sentences share (topic, style): the p-value P(T' >= T) is a convolution of two-point
laws. For one fixed key it holds only as far as the keyed outputs are balanced over text (the
worst of 20 keys flagged 3.1% of 353 human texts at p < 0.01: docs/research/sentence-layer.md).

**The margin test** (``test = "margin"``) weighs each hit by how far its output sits from zero,
since a rewrite flips a sign far from zero less often: the margin m = |v_{d_i}| / (the
sentence's mean |v| over all D outputs) gets weight log((1 - q) / q) for the share q of signs a
meaning-keeping rewrite flipped at that margin (:data:`MARGIN_WEIGHTS`). The weights are a
function of the text and of which outputs are keyed, not of the targets, so each (g, i) still
adds the weights of its positive or of its negative sentences with probability 1/2 each: the
same exact convolution, over integer weights (in 1/:data:`WEIGHT_STEPS`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)")
_CLOSERS = "\"'\u201d\u2019)] \n\t\r"


def sentence_spans(text: str) -> list[tuple[int, int, bool]]:
    """``(start, end, complete)`` character spans of ``text``'s sentences, stripped of
    surrounding whitespace; ``complete`` is false for a last piece with no end mark."""
    spans, start = [], 0
    for match in _END.finditer(text):
        spans.append((start, match.end(), True))
        start = match.end()
    spans.append((start, len(text), False))
    out = []
    for a, b, complete in spans:
        piece = text[a:b]
        lead = len(piece) - len(piece.lstrip())
        if piece.strip():
            out.append((a + lead, a + len(piece.rstrip()), complete))
    return out


def ends_sentence(piece: str) -> bool:
    """Whether generated text ending with ``piece`` has just ended a sentence: it ends with an
    end mark (closing quotes or brackets after it allowed)."""
    return piece.rstrip(_CLOSERS)[-1:] in (".", "!", "?") if piece.strip() else False


# (margin below, weight): log((1 - q) / q) of the flip rates q measured under the forced rewrite
# (docs/research/sentence-layer.md, "Under the forced rewrite": 0.651, 0.824, 0.928 and 0.979 of
# the signs kept below a margin of 0.5, 0.5-1, 1-2 and above 2)
MARGIN_WEIGHTS = ((0.5, 0.62), (1.0, 1.54), (2.0, 2.56), (math.inf, 3.84))
WEIGHT_STEPS = 8  # weights are whole eighths, so the weighted null is an exact convolution
TESTS = ("hits", "margin")


def weigh_margins(margin: torch.Tensor) -> torch.Tensor:
    """Long, the shape of ``margin``: each margin's :data:`MARGIN_WEIGHTS` weight, in
    1/:data:`WEIGHT_STEPS`."""
    weight = torch.full_like(margin, MARGIN_WEIGHTS[-1][1])
    for below, value in reversed(MARGIN_WEIGHTS[:-1]):
        weight = torch.where(margin < below, torch.full_like(margin, value), weight)
    return (weight * WEIGHT_STEPS).round().long()


def margin_weights(v: torch.Tensor, dims: torch.Tensor) -> torch.Tensor:
    """Long (N, b): the weight of each sentence's tested outputs ``dims`` by their margins
    |v_d| / mean_D |v| (module docstring), in 1/:data:`WEIGHT_STEPS`."""
    v = v.float().cpu()
    return weigh_margins(v[:, dims].abs() / v.abs().mean(dim=1, keepdim=True).clamp_min(1e-12))


def _generator(key: str, what: str) -> torch.Generator:
    seed = int.from_bytes(hashlib.sha256(f"{key}|sentence|{what}".encode()).digest()[:8], "little")
    return torch.Generator().manual_seed(seed)


@dataclass(frozen=True)
class SentenceKey:
    """The keyed outputs and targets of the sentence layer.

    Attributes:
        dims: Long (b,): the tested outputs.
        context_dims: Long (c,): the outputs whose signs (the previous sentence's, or the
            sentence's own) pick the group.
        targets: Bool (2^c, b): the target sign (True: v > 0) per group and tested output.
        own: The group comes from the sentence's own context outputs, not its predecessor's.
        margin: The test weighs each hit by its margin (:func:`margin_weights`).
    """

    dims: torch.Tensor
    context_dims: torch.Tensor
    targets: torch.Tensor
    own: bool = False
    margin: bool = False

    @classmethod
    def of(
        cls,
        key: str,
        num_dims: int,
        bits: int,
        context_bits: int = 0,
        keying: str = "previous",
        test: str = "hits",
    ) -> SentenceKey:
        """The sentence key of secret ``key`` over D = ``num_dims`` mapper outputs, its groups
        read from the ``"previous"`` sentence or the sentence's ``"own"`` outputs, tested by
        counting ``"hits"`` or weighing them by their ``"margin"``."""
        if bits < 1 or context_bits < 0 or bits + context_bits > num_dims:
            raise ValueError(f"need 1 <= bits and bits + context_bits <= {num_dims}")
        if keying not in ("previous", "own"):
            raise ValueError(f"keying must be 'previous' or 'own', got {keying!r}")
        if test not in TESTS:
            raise ValueError(f"test must be one of {TESTS}, got {test!r}")
        order = torch.randperm(num_dims, generator=_generator(key, "dims"))
        targets = torch.randint(0, 2, (2**context_bits, bits), generator=_generator(key, "signs"))
        dims, context = order[:bits], order[bits : bits + context_bits]
        return cls(dims, context, targets.bool(), keying == "own", test == "margin")

    @property
    def bits(self) -> int:
        return int(self.dims.numel())

    def groups(self, v: torch.Tensor, previous: torch.Tensor | None) -> torch.Tensor:
        """Group of each sentence (N,) from its own outputs v (N, D) or, keyed by the previous
        sentence, from the previous sentences' outputs (N, D) (``None``: group 0); a zero-width
        key: group 0."""
        source = v if self.own else previous
        if source is None or self.context_dims.numel() == 0:
            return torch.zeros(v.shape[0], dtype=torch.long)
        signs = (source[:, self.context_dims] > 0).long().cpu()
        weights = 2 ** torch.arange(signs.shape[1])
        return (signs * weights).sum(dim=1)

    def text_groups(self, v: torch.Tensor, previous: torch.Tensor | None = None) -> torch.Tensor:
        """Groups (N,) of a text's sentences in order, whose outputs are v (N, D): keyed by the
        previous sentence, each from ``previous`` (N, D; default: the sentence before it in v)
        and the first in group 0, as it has no predecessor in the text; else each its own."""
        groups = self.groups(v, v.roll(1, 0) if previous is None else previous)
        if len(groups) and not self.own:
            groups[0] = 0
        return groups

    def hits(self, v: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """Bool (N, b): whether each sentence's tested outputs have their group's target sign."""
        return (v[:, self.dims].cpu() > 0) == self.targets[groups]

    def weights(self, v: torch.Tensor) -> torch.Tensor | None:
        """The test's weights of sentences whose outputs are v (N, D): the margin test's
        (:func:`margin_weights`, (N, b)), or ``None`` where each hit counts 1."""
        return margin_weights(v, self.dims) if self.margin else None

    def evidence(self, v: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """Float (N,): each sentence's z in this key's test alone, sum_i w_i (2 hit_i - 1) /
        sqrt(sum_i w_i^2) (w = 1 in the hits test); the text's test grows with its mean."""
        signed = 2 * self.hits(v, groups).float() - 1
        w = self.weights(v)
        w = torch.ones_like(signed) if w is None else w.float()
        return (w * signed).sum(dim=1) / w.norm(dim=1).clamp_min(1e-12)

    def scores(self, v: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """Float (N,): the candidates' scores sum_i tanh(t_i v_{d_i} / tau) (module docstring)."""
        picked = v[:, self.dims].float().cpu()
        signed = torch.where(self.targets[groups], picked, -picked)
        tau = picked.abs().mean().clamp_min(1e-6)
        return torch.tanh(signed / tau).sum(dim=1)


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


def fisher(p_values: Sequence[float]) -> float:
    """Fisher's combination of independent p-values: P(chi2_{2k} >= -2 sum log p)."""
    k = len(p_values)
    x = -sum(math.log(max(p, 1e-300)) for p in p_values)  # half the chi-square statistic
    return min(1.0, math.exp(-x) * sum(x**i / math.factorial(i) for i in range(k)))


def test_sentences(
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
