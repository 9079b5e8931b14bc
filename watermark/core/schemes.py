"""The watermarking schemes: one class per strength rule, chosen once from a config.

A scheme says which config field sets its strength, how many green lists a step reads, how it
turns a step's logits and green values into the logits that are sampled from (:meth:`Scheme.mark`)
and the score detection reports for the scored tokens' bits (:meth:`Scheme.score`). The config's
``scaling`` names the scheme; :data:`SCHEMES` and :func:`scheme_for` are the only places that
read the name. The formulas are in :mod:`watermark.core.rules.logits`.

:class:`RepeatPolicy` is how a text's repeats are treated, shared by generation (which tokens are
neutral, the context guard) and detection (which occurrences are tested).

This module imports no torch, so a config is checked (and the command line reports a mistake)
without loading it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import torch


class Scheme:
    """A strength rule with its strength.

    Args:
        strength: The value of the config field :attr:`strength_field`.
    """

    name: ClassVar[str]
    strength_field: ClassVar[str]
    multi_list: ClassVar[bool] = False  # reads ``layers`` green lists per step (else one)
    on_candidates: ClassVar[bool] = False  # may run on the top-k candidates only

    def __init__(self, strength: float) -> None:
        self.strength = strength

    @classmethod
    def validate(cls, strength: float) -> list[str]:
        """The problems of a value of :attr:`strength_field` (empty: valid)."""
        if strength > 0:
            return []
        return [f"{cls.strength_field} must be > 0, got {strength}"]

    def lists(self, layers: int) -> int:
        """Green lists per step under a config's ``layers``."""
        return layers if self.multi_list else 1

    def mark(self, logits: torch.Tensor, green: torch.Tensor, top_k: int) -> torch.Tensor:
        """The marked logits (B, N) of logits (B, N) with green values (B, L, N) in [0, 1];
        ``top_k`` is the sampling filter's k."""
        raise NotImplementedError

    def score(self, green: torch.Tensor) -> float:
        """The reported score of the scored tokens' bits (N, L): ``strength`` times the share
        green in the first list (0 when N = 0)."""
        if green.shape[0] == 0:
            return 0.0
        return self.strength * int(green[:, 0].sum()) / green.shape[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.strength_field}={self.strength!r})"


class Paper(Scheme):
    """``l * (1 + delta * v_hat)``: the paper's AWTS as written."""

    name, strength_field = "paper", "delta"

    def mark(self, logits: torch.Tensor, green: torch.Tensor, top_k: int) -> torch.Tensor:
        return logits * (1.0 + self.strength * green[:, 0].to(logits.dtype))


class Floor(Scheme):
    """``(l - f) * (1 + delta * v_hat) + f``, ``f`` the smallest top-k logit."""

    name, strength_field = "floor", "delta"

    def mark(self, logits: torch.Tensor, green: torch.Tensor, top_k: int) -> torch.Tensor:
        from watermark.core.rules.logits import logit_floor

        floor = logit_floor(logits, top_k)
        return (logits - floor) * (1.0 + self.strength * green[:, 0].to(logits.dtype)) + floor


class Additive(Scheme):
    """``l + bias * v_hat``: KGW's rule on the semantic green list."""

    name, strength_field = "additive", "bias"

    def mark(self, logits: torch.Tensor, green: torch.Tensor, top_k: int) -> torch.Tensor:
        return logits + self.strength * green[:, 0].to(logits.dtype)


class Tournament(Scheme):
    """Tournament sampling over ``layers`` green lists (SynthID-Text's update, binary g-values).

    Its score is the share of all N * L scored bits that are green: it has no logit scale."""

    name, strength_field = "tournament", "layers"
    multi_list = on_candidates = True

    @classmethod
    def validate(cls, strength: float) -> list[str]:
        return [] if strength >= 1 else [f"layers must be >= 1, got {strength}"]

    def mark(self, logits: torch.Tensor, green: torch.Tensor, top_k: int) -> torch.Tensor:
        from watermark.core.rules.logits import tournament

        return tournament(logits, green)

    def score(self, green: torch.Tensor) -> float:
        return 0.0 if green.shape[0] == 0 else int(green.sum()) / green.numel()


SCHEMES: dict[str, type[Scheme]] = {cls.name: cls for cls in (Paper, Floor, Additive, Tournament)}
RULES = tuple(SCHEMES)  # the names a config's ``scaling`` may take


def scheme_class(name: str) -> type[Scheme]:
    """The scheme class named ``name``; a clear error for an unknown one."""
    if name not in SCHEMES:
        raise ValueError(f"unknown rule {name!r}; use one of {RULES}")
    return SCHEMES[name]


def scheme_for(cfg: Any) -> Scheme:
    """The scheme of a config (its ``scaling``, with the strength of that rule's field)."""
    cls = scheme_class(cfg.scaling)
    return cls(getattr(cfg, cls.strength_field))


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
    def of(cls, cfg: Any) -> RepeatPolicy:
        """The policy a config's fields set."""
        return cls(
            guard=cfg.context_guard,
            fresh_only=cfg.fresh_only,
            bigram=cfg.fresh_only and cfg.repeats == "bigram",
            keep_neutral=cfg.neutral == "kept",
            unique_tokens=cfg.unique_tokens,
        )
