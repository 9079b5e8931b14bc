"""The scheme section of a config: one class per strength rule, each with its own checks.

A scheme holds what every rule shares (the entropy gate, the sampling filters, how repeats are
treated) and its own strength: :class:`Tournament` (``layers`` green lists, the shipped
default), :class:`Additive` (``bias``, KGW's rule on the semantic list) and :class:`Paper`
(``delta``, the paper's AWTS as written). A config's ``scheme`` section names its rule
(``"rule": "tournament"``) and holds only that rule's strength, one class per method. Each class
says how its rule turns a step's logits and green values into the logits sampled from
(:meth:`Scheme.mark`) and the score detection reports (:meth:`Scheme.score`);
:func:`watermark.core.rules.logits.apply_rule` runs the rule on a batch with the temperature,
the filters, the neutral and the repeated tokens.

:class:`RepeatPolicy` is how a text's repeats are treated, shared by generation (which tokens are
neutral, the context guard) and detection (which occurrences are tested).

This module imports no torch (the rules use tensor methods only), so a config is checked (and
the command line reports a mistake) without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from watermark.config.sections import SAMPLING, SHARED, Section, setting

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Scheme(Section):
    """What every strength rule shares.

    Attributes:
        alpha: Entropy threshold in nats: a step is watermarked iff H(P_MM) >= alpha.
        temperature, top_k, top_p: Sampling, applied with the rule (generation only).
        opening_steps: M: steps 1..M embed the secret opening sentence and skip the gate.
        context_guard: h: a step whose last h tokens already occurred as a run earlier in the
            text is neither watermarked nor scored (0: off).
        fresh_only: The rule acts only on tokens not yet in the text; detection tests a token at
            its first occurrence only (needs the detection's ``unique_tokens``).
        repeats: A repeated token under ``fresh_only``: ``neutral`` (never tested) or
            ``bigram`` (its bit read at a dimension shifted per previous token).
        filter_first: Apply top-k / top-p before the rule (else after it, the paper's order).
        neutral: Tokens the rule must not favour: ``kept`` keeps their model probability,
            ``half`` gives them v_hat = 1/2.
        loop_penalty: lambda: at a step the context guard closes, each token that would extend
            an earlier run loses lambda x (L - h + 1) in logit (generation only; 0: off).
    """

    name: ClassVar[str] = "scheme"
    rule: ClassVar[str]
    strength_field: ClassVar[str]
    multi_list: ClassVar[bool] = False  # reads ``layers`` green lists per step (else one)
    on_candidates: ClassVar[bool] = False  # may run on the top-k candidates only

    alpha: float = setting(SHARED, 2.0)
    temperature: float = setting(SAMPLING, 1.02)
    top_k: int = setting(SAMPLING, 50)
    top_p: float = setting(SAMPLING, 0.9)
    opening_steps: int = setting(SHARED, 0)
    context_guard: int = setting(SHARED, 4)
    fresh_only: bool = setting(SHARED, True)
    repeats: str = setting(SHARED, "bigram", choices=("neutral", "bigram"))
    filter_first: bool = setting(SAMPLING, True)
    neutral: str = setting(SAMPLING, "kept", choices=("kept", "half"))
    loop_penalty: float = setting(SAMPLING, 0.5)

    @property
    def strength(self) -> float:
        """The value of the rule's strength field."""
        return getattr(self, self.strength_field)

    @property
    def keep_neutral(self) -> bool:
        """Whether neutral tokens keep the model's probability (``neutral`` kept) instead of
        reading v_hat = 1/2."""
        return self.neutral == "kept"

    @property
    def bigram(self) -> bool:
        """Whether a repeated token reads its bit at a dimension shifted by the previous token
        (``fresh_only`` with ``repeats`` bigram)."""
        return self.fresh_only and self.repeats == "bigram"

    def lists(self) -> int:
        """Green lists per step: ``layers`` for the tournament, 1 for the biasing rules."""
        return int(self.strength) if self.multi_list else 1

    def validate(self) -> list[str]:
        found = self.validate_strength()
        for name in ("context_guard", "loop_penalty", "opening_steps"):
            if getattr(self, name) < 0:
                found.append(f"scheme.{name} must be >= 0, got {getattr(self, name)}")
        if not self.temperature > 0:
            found.append(f"need scheme.temperature > 0, got {self.temperature}")
        if self.top_k < 0 or not 0 < self.top_p <= 1:
            found.append(
                f"need scheme.top_k >= 0 and 0 < top_p <= 1, got {self.top_k}, {self.top_p}"
            )
        if self.repeats == "bigram" and not self.fresh_only:
            found.append("scheme.repeats='bigram' needs scheme.fresh_only=true")
        return found

    def validate_strength(self) -> list[str]:
        """The problems of the strength (a biasing rule's must be > 0)."""
        if self.strength > 0:
            return []
        return [f"scheme.{self.strength_field} must be > 0, got {self.strength}"]

    def identity(self) -> dict[str, Any]:
        """The shared fields but the strength, and the green lists per step."""
        named = {k: v for k, v in super().identity().items() if k != self.strength_field}
        return {**named, "green_lists": self.lists()}

    def mark(self, logits: torch.Tensor, green: torch.Tensor) -> torch.Tensor:
        """The marked logits (B, N) of logits (B, N) given the green values (B, L, N) in [0, 1]
        of the same tokens (bits, or 1/2 for neutral tokens)."""
        raise NotImplementedError

    def score(self, green: torch.Tensor) -> float:
        """The reported score of the scored tokens' bits (N, L): ``strength`` times the share
        green in the first list (0 when N = 0)."""
        if green.shape[0] == 0:
            return 0.0
        return self.strength * int(green[:, 0].sum()) / green.shape[0]


@dataclass(frozen=True)
class Tournament(Scheme):
    """Tournament sampling over ``layers`` green lists (SynthID-Text's update, binary g-values).

    Its score is the share of all N * L scored bits that are green: it has no logit scale."""

    rule: ClassVar[str] = "tournament"
    strength_field: ClassVar[str] = "layers"
    multi_list: ClassVar[bool] = True
    on_candidates: ClassVar[bool] = True
    layers: int = setting(SHARED, 6)

    def validate_strength(self) -> list[str]:
        return [] if self.layers >= 1 else [f"scheme.layers must be >= 1, got {self.layers}"]

    def mark(self, logits: torch.Tensor, green: torch.Tensor) -> torch.Tensor:
        """The tournament update ``p <- p * (1 + g_l - sum(p * g_l))`` for l = 1..L, as
        log-probabilities: for a random key every token's probability is unchanged in
        expectation, so the rule does not shift the model's distribution on average; it only
        correlates the choice with the green bits."""
        probs = logits.double().softmax(-1)
        for layer in range(green.shape[1]):
            g = green[:, layer].to(probs.dtype)
            # clamp: rounding in the green mass can push a vanishing probability below zero
            probs = (probs * (1.0 + g - (probs * g).sum(-1, keepdim=True))).clamp_min(0.0)
        return probs.log().to(logits.dtype)

    def score(self, green: torch.Tensor) -> float:
        return 0.0 if green.shape[0] == 0 else int(green.sum()) / green.numel()


@dataclass(frozen=True)
class Additive(Scheme):
    """``l + bias * v_hat``: KGW's rule on the semantic green list."""

    rule: ClassVar[str] = "additive"
    strength_field: ClassVar[str] = "bias"
    bias: float = setting(SAMPLING, 2.0)

    def mark(self, logits: torch.Tensor, green: torch.Tensor) -> torch.Tensor:
        return logits + self.bias * green[:, 0].to(logits.dtype)


@dataclass(frozen=True)
class Paper(Scheme):
    """``l * (1 + delta * v_hat)``: the paper's AWTS as written."""

    rule: ClassVar[str] = "paper"
    strength_field: ClassVar[str] = "delta"
    delta: float = setting(SAMPLING, 1.5)

    def mark(self, logits: torch.Tensor, green: torch.Tensor) -> torch.Tensor:
        """A negative green logit becomes *more* negative, as the paper writes it."""
        return logits * (1.0 + self.delta * green[:, 0].to(logits.dtype))


SCHEMES: dict[str, type[Scheme]] = {cls.rule: cls for cls in (Tournament, Additive, Paper)}
RULES = tuple(SCHEMES)  # the names a scheme's ``rule`` may take


def scheme_class(rule: str) -> type[Scheme]:
    """The scheme class of ``rule``; a clear error for an unknown one."""
    if rule not in SCHEMES:
        raise ValueError(f"unknown rule {rule!r}; use one of {RULES}")
    return SCHEMES[rule]


@dataclass(frozen=True)
class RepeatPolicy:
    """How repeats in a text are treated, by generation and detection alike.

    Attributes:
        guard: h: a step whose last h tokens already occurred as a run is neither watermarked
            nor scored (0: off).
        fresh_only: The rule acts on tokens not yet in the text; detection tests a token at its
            first occurrence only.
        bigram: A repeated token reads its bit at a dimension shifted by the previous token and
            is tested at its pair's first occurrence (``fresh_only`` with ``repeats`` bigram).
        keep_neutral: Neutral tokens keep the model's probability (``neutral`` kept) instead of
            reading v_hat = 1/2.
        unique_tokens: Detection counts each token id once.
    """

    guard: int
    fresh_only: bool
    bigram: bool
    keep_neutral: bool
    unique_tokens: bool

    @classmethod
    def of(cls, scheme: Scheme, unique_tokens: bool) -> RepeatPolicy:
        """The policy a scheme and the detection's ``unique_tokens`` set."""
        return cls(
            guard=scheme.context_guard,
            fresh_only=scheme.fresh_only,
            bigram=scheme.bigram,
            keep_neutral=scheme.keep_neutral,
            unique_tokens=unique_tokens,
        )
