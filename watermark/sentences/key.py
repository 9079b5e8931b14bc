"""The sentence layer's key: which mapper outputs a sentence is tested on, and the signs it
should have.

A sentence's embedding u (the layer's SE) is mapped by its SM to v (D outputs). The key picks
``bits`` outputs d_1..d_b and, per context group g, a target sign t_{g,i} for each
(:class:`SentenceKey`). The group is 0 for every sentence (``context_bits = 0``: a global key) or
the signs of ``context_bits`` other keyed outputs (2^c groups, harder to learn from many texts
than one), read from the previous sentence (``keying = "previous"``: a sentence's test then needs
its predecessor to keep those signs) or from the sentence itself (``"own"``: no predecessor
needed, so a reordering rewrite keeps the groups).

**Scores** (:meth:`SentenceKey.scores`), what generation ranks candidates by:
sum_i tanh(t_i v_{d_i} / tau), tau the mean |v| of the candidates' keyed outputs. The tanh
rewards a sign that sits far from zero (a margin against a rewrite's move) and saturates, so one
huge output does not buy the others.

**Margins** (``test = "margin"``): each hit is weighed by how far its output sits from zero,
since a rewrite flips a sign far from zero less often: the margin m = |v_{d_i}| / (the
sentence's mean |v| over all D outputs) gets weight log((1 - q) / q) for the share q of signs a
meaning-keeping rewrite flipped at that margin (:data:`MARGIN_WEIGHTS`), in whole
1/:data:`WEIGHT_STEPS` so the test's null stays an exact convolution
(:mod:`watermark.sentences.significance`). ``power`` p > 1 raises those weights to p, rescaled so
the largest stays 31 eighths: the test then leans on the signs a rewrite keeps.

**Survival** (:meth:`SentenceKey.survival`), the other way to rank candidates: the sentence's z
in this key's test expected after a rewrite that keeps each tested sign with the probability
:data:`MARGIN_KEPT` of its margin (and, with own context outputs, its group only if all of
them keep theirs), so a candidate whose hits sit far from zero wins over one whose hits a
rewrite would flip.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from watermark.base import KEYINGS, SENTENCE_CHOICES, SENTENCE_TESTS, WEIGHT_POWERS

if TYPE_CHECKING:
    from watermark.config.sections import Sentences

# what a candidate is read after: nothing, the one sentence before them all (D,), or one per
# candidate ((N, D), or a sequence of rows and None, a candidate without a predecessor)
Previous = torch.Tensor | Sequence[torch.Tensor | None] | None

# (margin below, weight): log((1 - q) / q) of the flip rates q measured under the forced rewrite
# (docs/research/sentence-layer.md, "Under the forced rewrite": 0.651, 0.824, 0.928 and 0.979 of
# the signs kept below a margin of 0.5, 0.5-1, 1-2 and above 2)
MARGIN_WEIGHTS = ((0.5, 0.62), (1.0, 1.54), (2.0, 2.56), (math.inf, 3.84))
WEIGHT_STEPS = 8  # weights are whole eighths, so the weighted null is an exact convolution
# the share of signs the forced rewrite kept in each margin bin, 1 / (1 + e^-w) of its weight
MARGIN_KEPT = tuple(1 / (1 + math.exp(-w)) for _, w in MARGIN_WEIGHTS)


def margin_bins(margin: torch.Tensor) -> torch.Tensor:
    """Long, the shape of ``margin``: the :data:`MARGIN_WEIGHTS` bin of each margin."""
    edges = torch.tensor([below for below, _ in MARGIN_WEIGHTS[:-1]], dtype=margin.dtype)
    return torch.bucketize(margin, edges, right=True)


def margins(v: torch.Tensor) -> torch.Tensor:
    """Float (N, D): the margins |v_d| / mean_D |v| of outputs v (N, D)."""
    v = v.float().cpu()
    return v.abs() / v.abs().mean(dim=1, keepdim=True).clamp_min(1e-12)


def weight_table(power: int = 1) -> torch.Tensor:
    """Long (4,): the weight of each margin bin, :data:`MARGIN_WEIGHTS` raised to ``power`` in
    1/:data:`WEIGHT_STEPS` of the top weight to the power 1 - ``power`` (so the top stays 31)."""
    top = MARGIN_WEIGHTS[-1][1]
    values = [w**power / top ** (power - 1) for _, w in MARGIN_WEIGHTS]
    return (torch.tensor(values, dtype=torch.float64) * WEIGHT_STEPS).round().long()


def weigh_margins(margin: torch.Tensor, power: int = 1) -> torch.Tensor:
    """Long, the shape of ``margin``: each margin's weight (:func:`weight_table`)."""
    return weight_table(power)[margin_bins(margin)]


def margin_weights(v: torch.Tensor, dims: torch.Tensor, power: int = 1) -> torch.Tensor:
    """Long (N, b): the weight of each sentence's tested outputs ``dims`` by their margins
    |v_d| / mean_D |v| (module docstring), in 1/:data:`WEIGHT_STEPS`."""
    return weigh_margins(margins(v)[:, dims], power)


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
        power: The margin weights' power (1: the rewrite's log-odds).
    """

    dims: torch.Tensor
    context_dims: torch.Tensor
    targets: torch.Tensor
    own: bool = False
    margin: bool = False
    power: int = 1

    @classmethod
    def of(
        cls,
        key: str,
        num_dims: int,
        bits: int,
        context_bits: int = 0,
        keying: str = "previous",
        test: str = "hits",
        power: int = 1,
    ) -> SentenceKey:
        """The sentence key of secret ``key`` over D = ``num_dims`` mapper outputs, its groups
        read from the ``"previous"`` sentence or the sentence's ``"own"`` outputs, tested by
        counting ``"hits"`` or weighing them by their ``"margin"`` (to the ``power``)."""
        if bits < 1 or context_bits < 0 or bits + context_bits > num_dims:
            raise ValueError(f"need 1 <= bits and bits + context_bits <= {num_dims}")
        if keying not in KEYINGS:
            raise ValueError(f"keying must be one of {KEYINGS}, got {keying!r}")
        if test not in SENTENCE_TESTS:
            raise ValueError(f"test must be one of {SENTENCE_TESTS}, got {test!r}")
        if power not in WEIGHT_POWERS:
            raise ValueError(f"the weights' power must be one of {WEIGHT_POWERS}, got {power!r}")
        order = torch.randperm(num_dims, generator=_generator(key, "dims"))
        targets = torch.randint(0, 2, (2**context_bits, bits), generator=_generator(key, "signs"))
        dims, context = order[:bits], order[bits : bits + context_bits]
        return cls(dims, context, targets.bool(), keying == "own", test == "margin", power)

    @classmethod
    def of_section(
        cls, settings: Sentences, keys: Sequence[str], num_dims: int
    ) -> list[SentenceKey]:
        """The sentence key of each secret of ``keys`` under a config's ``sentences`` section
        (its ``bits``, ``context_bits``, ``keying``, ``test`` and ``weight_power``) over D =
        ``num_dims`` mapper outputs: the keys the layer holds
        (:class:`~watermark.sentences.layer.SentenceLayer`), or random keys of the same
        settings for measuring them."""
        return [
            cls.of(
                k,
                num_dims,
                settings.bits,
                settings.context_bits,
                settings.keying,
                settings.test,
                settings.weight_power,
            )
            for k in keys
        ]

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

    def candidate_groups(self, v: torch.Tensor, previous: Previous = None) -> torch.Tensor:
        """Groups (N,) of candidates whose outputs are v (N, D), each read after ``previous``:
        ``None`` (no sentence before them: group 0, or each its own), the outputs (D,) of the
        one sentence before them all, or one row per candidate ((N, D), or a sequence of rows
        and ``None`` for a candidate without a predecessor)."""
        if previous is None or isinstance(previous, torch.Tensor):
            if previous is not None and previous.dim() == 1:
                previous = previous.expand(len(v), -1)
            return self.groups(v, previous)
        groups = self.groups(v, None)
        rows = [i for i, row in enumerate(previous) if row is not None]
        if rows:
            groups[rows] = self.groups(v[rows], torch.stack([previous[i] for i in rows]))
        return groups

    def order(self, v: torch.Tensor, previous: Previous = None, choice: str = "score") -> list[int]:
        """The candidates (outputs v (N, D), each read after ``previous``, see
        :meth:`candidate_groups`) best first by :meth:`rate` under ``choice``, ties in the given
        order: the layer's one choice (:meth:`~watermark.sentences.layer.SentenceLayer.choose`),
        for any key. A round keeps the first."""
        scores = self.rate(v, self.candidate_groups(v, previous), choice)
        return sorted(range(len(v)), key=lambda i: -float(scores[i]))

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
        return margin_weights(v, self.dims, self.power) if self.margin else None

    def evidence(
        self, v: torch.Tensor, groups: torch.Tensor, kept: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Float (N,): each sentence's z in this key's test alone, sum_i w_i (2 hit_i - 1) /
        sqrt(sum_i w_i^2) (w = 1 in the hits test); the text's test grows with its mean. With
        ``kept`` (N, b), the probability that each tested sign survives a rewrite, the z
        expected after it: a flipped sign counts against, so each term is times 2 k_i - 1."""
        signed = 2 * self.hits(v, groups).float() - 1
        if kept is not None:
            signed = signed * (2 * kept.float() - 1)
        w = self.weights(v)
        w = torch.ones_like(signed) if w is None else w.float()
        return (w * signed).sum(dim=1) / w.norm(dim=1).clamp_min(1e-12)

    def survival(
        self, v: torch.Tensor, groups: torch.Tensor, kept: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Float (N,): each sentence's z expected after a rewrite that keeps a sign with
        probability ``kept[b]`` (float (4,); default :data:`MARGIN_KEPT`) for its margin bin b,
        independently; with own context outputs the group too must keep its signs, as another
        group's targets add nothing in expectation (module docstring)."""
        kept = torch.tensor(MARGIN_KEPT) if kept is None else kept.float()
        bins = margin_bins(margins(v))
        stay = kept[bins[:, self.context_dims]].prod(1) if self.own else torch.ones(len(v))
        return stay * self.evidence(v, groups, kept[bins[:, self.dims]])

    def rate(self, v: torch.Tensor, groups: torch.Tensor, choice: str = "score") -> torch.Tensor:
        """Float (N,): what generation ranks candidates by under ``choice``: their
        :meth:`scores` or their :meth:`survival`."""
        if choice not in SENTENCE_CHOICES:
            raise ValueError(f"choice must be one of {SENTENCE_CHOICES}, got {choice!r}")
        return self.survival(v, groups) if choice == "survival" else self.scores(v, groups)

    def scores(self, v: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """Float (N,): the candidates' scores sum_i tanh(t_i v_{d_i} / tau) (module docstring)."""
        picked = v[:, self.dims].float().cpu()
        signed = torch.where(self.targets[groups], picked, -picked)
        tau = picked.abs().mean().clamp_min(1e-6)
        return torch.tanh(signed / tau).sum(dim=1)
