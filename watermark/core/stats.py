"""The detection tests: z-score and exact one-sided p-value of the green count.

Under H0 ("not written with this key") a tested token is green with probability gamma_t, and
tested tokens are treated as independent, so the green count G is Poisson-binomial. The p-value
is the exact upper tail P(G' >= G) by dynamic programming over the tested tokens (O(n^2), a few
milliseconds for hundreds of tokens); the z-score
``(G - sum gamma_t) / sqrt(sum gamma_t (1 - gamma_t))`` is reported alongside. The windowed
test (for partly watermarked text) takes the best of many windows and corrects for their number
by simulating the null.

:func:`z_score` is the one z-statistic of the project: the evaluation's baselines (KGW with a
fixed gamma, SynthID's fair-coin g-values) use it with :func:`normal_sf` for their p-values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

GAMMA_EPS = 1e-9
WINDOW_DRAWS = 2000  # null draws of the windowed test


def poisson_binomial_sf(k: int, probs: Sequence[float]) -> float:
    """P(X >= k) for X a sum of independent Bernoulli(probs[i]).

    Args:
        k: Threshold (integer).
        probs: Success probabilities.

    Returns:
        The upper tail probability in [0, 1].
    """
    p = np.clip(np.asarray(probs, dtype=np.float64), 0.0, 1.0)
    if k <= 0:
        return 1.0
    if k > len(p):
        return 0.0
    return float(min(1.0, max(0.0, _tail_table(p)[k])))


def z_score(count: float, mean: float, variance: float) -> float:
    """``(count - mean) / sqrt(variance)``: how far a count lies above its null mean (0 when the
    variance is 0, e.g. nothing was tested)."""
    return (count - mean) / math.sqrt(variance) if variance > 0 else 0.0


def normal_sf(z: float) -> float:
    """P(Z >= z) for a standard normal Z (the one-sided p-value of a z-score)."""
    return 0.5 * math.erfc(z / math.sqrt(2))


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
    z = z_score(count, float(g.sum()), float((g * (1.0 - g)).sum()))
    return float(z), poisson_binomial_sf(count, g)


def window_spans(n: int, sizes: Sequence[int]) -> list[tuple[int, int]]:
    """Token spans ``[start, end)`` of the windowed test for a text of n tokens.

    The whole text first, then for each size w < n every span of w tokens at a stride of w / 4
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


def _tail_table(probs: np.ndarray) -> np.ndarray:
    """``table[k] = P(X >= k)`` for k = 0..n+1, X a sum of independent Bernoulli(probs)."""
    n = len(probs)
    dist = np.zeros(n + 1)
    dist[0] = 1.0
    for i, pi in enumerate(probs):
        dist[1 : i + 2] = dist[1 : i + 2] * (1.0 - pi) + dist[0 : i + 1] * pi
        dist[0] *= 1.0 - pi
    return np.append(np.cumsum(dist[::-1])[::-1], 0.0)


def windowed_test(
    green: Sequence[Sequence[bool]],
    gammas: Sequence[Sequence[float]],
    members: Sequence[Sequence[int]],
    draws: int = WINDOW_DRAWS,
    seed: int = 0,
) -> tuple[float, int]:
    """The best window's p-value, corrected for the number of windows by simulation.

    Each window is a set of tokens; its exact p-value is the Poisson-binomial tail of its green
    count. The statistic is the smallest window p-value; its null distribution is simulated by
    drawing every token's bits from Bernoulli(gamma) ``draws`` times (seeded: the same text gets
    the same answer), which accounts for the overlap of the windows, unlike a union bound.
    The Monte Carlo p-value ``(1 + #{draws at least as extreme}) / (draws + 1)`` is valid at
    every level; where no draw is as extreme, the Bonferroni bound ``N * min p`` is reported when
    it is smaller, which keeps the test valid below ``1 / (draws + 1)``.

    Args:
        green: (N, L) green bits of the N candidate tokens (L green lists).
        gammas: (N, L) null probabilities of those bits.
        members: Per window, the indices of its tested tokens among the N.
        draws: Null draws of the simulation.
        seed: Seed of the draws.

    Returns:
        ``(p_value, best)``: the corrected p-value and the index of the best window (1.0 and 0
        when there is nothing to test).
    """
    if not any(len(m) for m in members):
        return 1.0, 0
    bits = np.asarray(green, dtype=bool).reshape(len(green), -1)
    probs = np.clip(np.asarray(gammas, dtype=np.float64), 0.0, 1.0).reshape(bits.shape)
    tables = [_tail_table(probs[list(m)].ravel()) for m in members]
    observed = [t[int(bits[list(m)].sum())] for t, m in zip(tables, members)]
    best = int(np.argmin(observed))
    if len(members) == 1:  # nothing to correct for: the exact p-value
        return float(observed[0]), 0
    smallest = float(observed[best]) * (1.0 + 1e-9)  # as extreme, up to rounding
    rng = np.random.default_rng(seed)
    extreme = 0
    for done in range(0, draws, 500):
        chunk = min(500, draws - done)
        counts = (rng.random((chunk, *probs.shape)) < probs).sum(axis=2)  # (chunk, N)
        low = np.ones(chunk)
        for table, m in zip(tables, members):
            low = np.minimum(low, table[counts[:, list(m)].sum(axis=1)])
        extreme += int((low <= smallest).sum())
    p = (1 + extreme) / (draws + 1)
    if extreme == 0:
        p = min(p, len(members) * float(observed[best]))
    return float(min(1.0, p)), best
