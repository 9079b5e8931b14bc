"""The detection test: z-score and exact one-sided p-value of the green count.

Under H0 ("not written with this key") a tested token is green with probability gamma_t, and
tested tokens are treated as independent, so the green count G is Poisson-binomial. The p-value
is the exact upper tail P(G' >= G) by dynamic programming over the tested tokens (O(n^2), a few
milliseconds for hundreds of tokens); the z-score
``(G - sum gamma_t) / sqrt(sum gamma_t (1 - gamma_t))`` is reported alongside.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

GAMMA_EPS = 1e-9


def poisson_binomial_sf(k: int, probs: Sequence[float]) -> float:
    """P(X >= k) for X a sum of independent Bernoulli(probs[i]).

    Args:
        k: Threshold (integer).
        probs: Success probabilities.

    Returns:
        The upper tail probability in [0, 1].
    """
    p = np.clip(np.asarray(probs, dtype=np.float64), 0.0, 1.0)
    n = len(p)
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    dist = np.zeros(n + 1)
    dist[0] = 1.0
    for i, pi in enumerate(p):
        # dist[j] <- dist[j] * (1 - pi) + dist[j-1] * pi, for j = 0..i+1
        dist[1 : i + 2] = dist[1 : i + 2] * (1.0 - pi) + dist[0 : i + 1] * pi
        dist[0] *= 1.0 - pi
    return float(min(1.0, max(0.0, dist[k:].sum())))


def green_test(green: Sequence[bool], gammas: Sequence[float]) -> tuple[float, float]:
    """z-score and exact p-value of the green count.

    Args:
        green: Whether each tested token is green.
        gammas: Null probability of green for each tested token.

    Returns:
        ``(z_score, p_value)``; ``(0.0, 1.0)`` when nothing is tested. Never NaN or infinite.
    """
    if len(green) == 0:
        return 0.0, 1.0
    g = np.clip(np.asarray(gammas, dtype=np.float64), GAMMA_EPS, 1.0 - GAMMA_EPS)
    count = int(np.sum(np.asarray(green, dtype=bool)))
    mean = float(g.sum())
    var = float((g * (1.0 - g)).sum())
    z = (count - mean) / math.sqrt(var) if var > 0 else 0.0
    return float(z), poisson_binomial_sf(count, g)


def windows(n: int, sizes: Sequence[int]) -> list[tuple[int, int]]:
    """The tested-token windows ``[start, end)`` of the windowed test for n tested tokens.

    The whole text, and for each size w < n every window of w tokens at a stride of w / 4
    (the last one ending at n).
    """
    found = [(0, n)]
    for w in sorted(set(sizes)):
        if 0 < w < n:
            stride = max(1, w // 4)
            starts = list(range(0, n - w + 1, stride))
            if starts[-1] != n - w:
                starts.append(n - w)
            found += [(s, s + w) for s in starts]
    return found


def windowed_test(
    green: Sequence[Sequence[bool]], gammas: Sequence[Sequence[float]], sizes: Sequence[int]
) -> tuple[float, tuple[int, int]]:
    """The best-scoring window's p-value, Bonferroni-corrected for the number of windows.

    Args:
        green: Per tested token (in text order), its green bits (one per green list).
        gammas: Per tested token, the null probability of each bit.
        sizes: Window sizes in tested tokens (see :func:`windows`).

    Returns:
        ``(p_value, (start, end))``: ``min(1, N * min_window p)`` over the N windows, and the
        best window in tested-token indices. Valid at every level whatever the sizes: each
        window's exact p-value is valid, and the union bound covers the minimum.
    """
    n = len(green)
    if n == 0:
        return 1.0, (0, 0)
    best, where = 1.0, (0, n)
    spans = windows(n, sizes)
    for start, end in spans:
        bits = [b for token in green[start:end] for b in token]
        probs = [g for token in gammas[start:end] for g in token]
        p = green_test(bits, probs)[1]
        if p < best:
            best, where = p, (start, end)
    return min(1.0, best * len(spans)), where
