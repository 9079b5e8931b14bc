"""AWTS: adaptive watermark temperature scaling of the generator's logits.

The paper scales logits ``l`` to ``l * (1 + delta * v_hat)``. That helps a green token only if its
logit is positive: a negative green logit becomes *more* negative, i.e. less likely, the opposite
of the intent, and whether a model's logits are positive is an accident of its parameterisation
(softmax is shift invariant). Two modes:

``paper``
    ``l * (1 + delta * v_hat)``, as written.
``floor`` (default)
    ``(l - f) * (1 + delta * v_hat) + f`` with the per-step floor ``f`` = the smallest finite logit
    among the top-k (k = config.top_k; all finite logits if k = 0). Logits are measured from a
    point every candidate that sampling can keep lies above, so every kept green token is scaled
    *up* relative to the floor, and tokens below the floor (cut by top-k anyway) never move up.
    Softmax ignores the shift, so this is the paper's temperature scaling of the logits relative to
    the kept set, independent of the model's logit offset. -inf logits stay -inf.

Rows whose gate is closed are returned bit-for-bit unchanged.
"""

from __future__ import annotations

import torch


def logit_floor(logits: torch.Tensor, top_k: int) -> torch.Tensor:
    """Per-row floor: smallest finite logit among the top-k, shape (B, 1).

    Args:
        logits: Float tensor (B, V).
        top_k: k; 0 or >= V means all finite logits.
    """
    k = logits.shape[-1] if top_k <= 0 else min(top_k, logits.shape[-1])
    values = torch.topk(logits, k, dim=-1).values
    finite = torch.isfinite(values)
    big = torch.finfo(values.dtype).max
    floor = torch.where(finite, values, torch.full_like(values, big)).min(-1, keepdim=True).values
    return torch.where(floor == big, torch.zeros_like(floor), floor)


def apply_awts(
    logits: torch.Tensor,
    green: torch.Tensor,
    gated: torch.Tensor,
    delta: float,
    mode: str = "floor",
    top_k: int = 50,
) -> torch.Tensor:
    """Scales the logits of the gated rows.

    Args:
        logits: Float tensor (B, V) of next-token logits.
        green: Bool tensor (B, V), v_hat.
        gated: Bool tensor (B,): rows to watermark.
        delta: Watermark strength (> 0).
        mode: ``"floor"`` or ``"paper"``.
        top_k: k of the floor (``floor`` mode only).

    Returns:
        New float tensor (B, V).
    """
    factor = 1.0 + delta * green.to(logits.dtype)
    if mode == "paper":
        scaled = logits * factor
    elif mode == "floor":
        floor = logit_floor(logits, top_k)
        scaled = (logits - floor) * factor + floor
    else:
        raise ValueError(f"unknown scaling mode {mode!r}; use 'floor' or 'paper'")
    return torch.where(gated.to(logits.device)[:, None], scaled, logits)
