"""What the scoring core decides: for one generation step of a batch (:class:`StepDecision`)
and for every step of one text under detection (:class:`TextGate`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from watermark.core.green_lists import GreenLists


@dataclass
class StepDecision:
    """What the core decided for one generation step of a batch.

    Attributes:
        step: The 1-based step t.
        gated: Bool (B,): rows watermarked at this step.
        entropy: Float (B,): MM entropy (NaN where not computed, e.g. t <= M).
        green: Green lists of the B rows (meaningful for gated rows only).
        neutral: Bool (B, V): tokens whose v_hat is 1/2 (``fresh_only``), else None.
        repeated: Bool (B, V): tokens read at a shifted dimension (``repeats="bigram"``), else
            None.
        repeat_shift: Long (L, B): each row's shift per list (the previous token's), else None.
        loop_penalty: Float (B, V): logits taken from tokens that would extend a repeated run
            (``loop_penalty`` > 0), else None.
    """

    step: int
    gated: torch.Tensor
    entropy: torch.Tensor
    green: GreenLists
    neutral: torch.Tensor | None = None
    repeated: torch.Tensor | None = None
    repeat_shift: torch.Tensor | None = None
    loop_penalty: torch.Tensor | None = None


@dataclass
class TextGate:
    """Gate of every step of one text (detection path).

    Attributes:
        entropy: Float (T,): MM entropy per step (NaN where not needed).
        gated: Bool (T,): steps in the scored set W.
    """

    entropy: torch.Tensor
    gated: torch.Tensor
