"""Repeats in the generated text that the scoring core treats specially.

* the context guard (h > 0): a step whose last h generated tokens already occurred as a
  contiguous run earlier in the text is not watermarked, in a batch during generation (where
  :func:`earlier_runs` has any) and at every step of a text during detection
  (:func:`repeated_steps`);
* the loop penalty (``loop_penalty`` > 0): at a guarded step, the tokens that would extend the
  repeated run lose logit in proportion to the run's length (:func:`loop_penalties`), so a text
  that starts to circle is pushed out of the circle before it locks in;
* pairs already in the text (``repeats="bigram"``): the tokens that already followed a row's last
  token (:func:`followers`) are left neutral, as the detector tests a repeat only at the first
  occurrence of its pair.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def earlier_runs(gen: torch.Tensor, h: int) -> torch.Tensor:
    """Bool (B, n - h): entry i is whether gen[:, i:i+h] equals the row's last h ids, i.e. an
    earlier run of them that a token gen[:, i+h] followed; (B, 0) where h <= 0 or n <= h.

    Args:
        gen: Long tensor (B, n): generated ids so far (the prefix S_{0:t-1} of step t = n + 1).
        h: Guard length (0: never repeated).
    """
    if h <= 0 or gen.shape[1] <= h:
        return torch.zeros(gen.shape[0], 0, dtype=torch.bool, device=gen.device)
    windows = gen.unfold(1, h, 1)  # (B, n - h + 1, h)
    return (windows[:, :-1] == windows[:, -1:]).all(-1)


LOOP_RUN_CAP = 32  # the longest common run the loop penalty grows with


def loop_penalties(
    gen: torch.Tensor, runs: torch.Tensor, h: int, vocab_size: int, penalty: float
) -> torch.Tensor | None:
    """What each token loses in logit for extending a repeated run: float (B, V), 0 elsewhere;
    None where no row repeats (most steps), so nothing is allocated or subtracted.

    Where a row's last h ids already occurred as a run gen[i:i+h] (i + h < n), the token
    gen[i+h] that followed it would repeat the run once more; it loses penalty * (L - h + 1),
    L the length (at most :data:`LOOP_RUN_CAP`) of the longest common run ending at i + h and
    at n. A token that followed several such runs loses the largest amount.

    Args:
        gen: Long tensor (B, n): generated ids so far.
        runs: :func:`earlier_runs` of ``gen`` and ``h`` (the context guard computes it too).
        h: Guard length (> 0).
        vocab_size: V.
        penalty: lambda, logits per token of the common run beyond h - 1.
    """
    if penalty == 0:
        return None
    rows, starts = runs.nonzero(as_tuple=True)
    if rows.numel() == 0:
        return None
    n = gen.shape[1]
    out = torch.zeros(gen.shape[0], vocab_size, device=gen.device)
    back = torch.arange(LOOP_RUN_CAP - h, device=gen.device)  # how far each run extends back
    before_earlier = starts[:, None] - 1 - back  # (M, K)
    before_last = (n - h - 1 - back).expand_as(before_earlier)
    same = (
        gen[rows[:, None], before_earlier.clamp(min=0)]
        == gen[rows[:, None], before_last.clamp(min=0)]
    )
    same &= before_earlier >= 0
    extra = same.int().cumprod(1).sum(1)  # L - h
    flat = rows * vocab_size + gen[rows, starts + h].long()
    out.view(-1).scatter_reduce_(0, flat, penalty * (extra + 1).float(), reduce="amax")
    return out


def repeated_steps(ids: Sequence[int], h: int) -> torch.Tensor:
    """Context guard of every step of one text of T ids: bool (T,), entry t-1 for step t."""
    out = torch.zeros(len(ids), dtype=torch.bool)
    if h <= 0:
        return out
    seen: set[tuple[int, ...]] = set()
    for start in range(len(ids) - h):  # the window ids[start:start+h] is step start+h+1's context
        window = tuple(ids[start : start + h])
        out[start + h] = window in seen
        seen.add(window)
    return out


def followers(gen: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Bool (B, V): the tokens that already followed each row's last token in its text, i.e.
    the candidates whose (previous token, token) pair would occur again.

    Args:
        gen: Long tensor (B, n): generated ids so far.
        vocab_size: V.
    """
    out = torch.zeros(gen.shape[0], vocab_size, device=gen.device)
    if gen.shape[1] >= 2:
        after_last = (gen[:, :-1] == gen[:, -1:]).to(out.dtype)  # (B, n - 1)
        out.scatter_add_(1, gen[:, 1:].long(), after_last)
    return out > 0
