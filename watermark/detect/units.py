"""Which scored steps of a text, or of a span of it, enter the z-test.

A scored step is tested at most once per kind:

* as a first occurrence (:func:`tested_indices`): with ``unique_tokens`` each token id once, at
  its first scored occurrence; with ``fresh_only`` only at the token's first occurrence in the
  span, if that step is scored;
* as a repeat (:func:`repeat_indices`, ``repeats="bigram"``): a token that already occurs
  earlier in the span, at the first occurrence of its (previous token, token) pair, if scored.

Spans are read as texts of their own, so a passage pasted after text that used its words keeps
them. With ``outputs_once``, :func:`first_reads` then keeps, of the tested units' bits (one per
green list), only the first read of each mapper output in the span.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np


def tested_indices(
    ids: Sequence[int], steps: Sequence[int], span: tuple[int, int], unique: bool, fresh: bool
) -> list[int]:
    """The scored steps that enter the z-test of a span of the text, read as a text of its own.

    Args:
        ids: The text's token ids.
        steps: Its scored steps (1-based, increasing).
        span: Token positions ``[start, end)`` (0-based); ``(0, len(ids))`` is the whole text.
        unique: Each token id once, at its first scored occurrence in the span.
        fresh: Only a token id's first occurrence in the span, if that step is scored.

    Returns:
        Indices into ``steps``, in text order.
    """
    start, end = span
    first: dict[int, int] = {}  # token id -> its first step in the span
    for t in range(start + 1, end + 1):
        first.setdefault(ids[t - 1], t)
    seen: set[int] = set()
    found = []
    for i in range(bisect.bisect_right(steps, start), bisect.bisect_right(steps, end)):
        token = ids[steps[i] - 1]
        if unique and token in seen:
            continue
        seen.add(token)
        if fresh and first[token] != steps[i]:
            continue
        found.append(i)
    return found


def repeat_indices(ids: Sequence[int], steps: Sequence[int], span: tuple[int, int]) -> list[int]:
    """The scored steps tested as repeats in a span of the text (``repeats="bigram"``): a token
    that already occurs earlier in the span, at the first occurrence in the span of its pair
    (previous token, token), if that step is scored (generation leaves a pair that is already in
    the text neutral).

    Args:
        ids: The text's token ids.
        steps: Its scored steps (1-based, increasing).
        span: Token positions ``[start, end)`` (0-based).

    Returns:
        Indices into ``steps``, in text order.
    """
    start, end = span
    first: dict[int, int] = {}  # token id -> its first step in the span
    first_pair: dict[tuple[int, int], int] = {}  # pair -> the step of its second token
    for t in range(start + 1, end + 1):
        first.setdefault(ids[t - 1], t)
        if t >= start + 2:
            first_pair.setdefault((ids[t - 2], ids[t - 1]), t)
    found = []
    for i in range(bisect.bisect_right(steps, start), bisect.bisect_right(steps, end)):
        t = steps[i]
        if first[ids[t - 1]] != t and first_pair[ids[t - 2], ids[t - 1]] == t:
            found.append(i)
    return found


def first_reads(dims: Sequence[Sequence[int]], rows: Sequence[int], once: bool) -> list[int]:
    """The bits of the tested units ``rows`` that enter a span's test, as flat indices
    ``row * L + list`` into the (R, L) bits of all candidate units.

    Args:
        dims: (R, L) the mapper output each candidate unit's bit reads, per list.
        rows: The span's tested units, in text order.
        once: Keep only the first read of each output (``outputs_once``); else every bit.
    """
    table = np.asarray(dims, dtype=np.int64)
    if table.size == 0 or len(rows) == 0:
        return []
    rows = np.asarray(rows, dtype=np.int64)
    width = table.shape[1]
    flat = (rows[:, None] * width + np.arange(width)).ravel()  # (row, list) in read order
    if once:
        _, first = np.unique(table[rows].ravel(), return_index=True)
        flat = flat[np.sort(first)]
    return flat.tolist()
