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
