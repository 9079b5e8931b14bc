"""The detection tests: z-score and exact one-sided p-value of the green count.

Under H0 ("not written with this key") a tested token is green with probability gamma_t, and
tested tokens are treated as independent, so the green count G is Poisson-binomial. The p-value
is the exact upper tail P(G' >= G), from the count's distribution (:func:`count_pmfs`: under a
millisecond for hundreds of tokens); the z-score
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
BLOCK = 32  # Bernoullis per block of the batched recursion in count_pmfs


def count_pmfs(prob_lists: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The distribution of each sum of independent Bernoulli(``prob_lists[i]``): float64
    arrays of length ``len(prob_lists[i]) + 1``, entry k = P(sum = k).

    Each list is cut into blocks of ``BLOCK``; the blocks of all lists go through the
    one-Bernoulli-at-a-time recursion together (``BLOCK`` vectorised steps, zero padding adds
    nothing), and each list's block distributions are then convolved. All terms are
    non-negative, so even tails near 1e-300 keep their relative precision (about 1e-15).
    """
    sizes = [len(p) for p in prob_lists]
    blocks = [-(-n // BLOCK) for n in sizes]
    probs = np.zeros(sum(blocks) * BLOCK)
    at = 0
    for p, k in zip(prob_lists, blocks):
        probs[at * BLOCK : at * BLOCK + len(p)] = p
        at += k
    probs = probs.reshape(-1, BLOCK)
    dist = np.zeros((len(probs), BLOCK + 1))
    dist[:, 0] = 1.0
    for i in range(BLOCK):
        p = probs[:, i : i + 1]
        dist[:, 1 : i + 2] = dist[:, 1 : i + 2] * (1.0 - p) + dist[:, : i + 1] * p
        dist[:, :1] *= 1.0 - p
    out, at = [], 0
    for n, k in zip(sizes, blocks):
        pmf = np.ones(1)
        for row in dist[at : at + k]:
            pmf = np.convolve(pmf, row)
        out.append(pmf[: n + 1])
        at += k
    return out


def tails(pmf: np.ndarray) -> np.ndarray:
    """``table[k] = P(X >= k)`` for k = 0..n+1, from the distribution (n + 1,) of X."""
    return np.append(np.cumsum(pmf[::-1])[::-1], 0.0)


def tail_table(probs: np.ndarray) -> np.ndarray:
    """``table[k] = P(X >= k)`` for k = 0..n+1, X a sum of independent Bernoulli(probs)."""
    return tails(count_pmfs([np.asarray(probs, dtype=np.float64)])[0])


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
    return float(min(1.0, max(0.0, tail_table(p)[k])))


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


def atoms(members: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[tuple]]:
    """The atoms of the windowed test's null: the rows read by the same windows, as often.
    Only an atom's green count matters to the windows, and atoms are independent, so a null
    draw samples one count per atom.

    Built from each row's windows (never a rows x windows table, which grows with the square
    of the text's length), in the order of their read vectors (windows in order, counts as
    values) sorted ascending, the order the draws are assigned in.

    Args:
        members: Per window, the row indices it reads (a row may appear twice).

    Returns:
        ``(rows, windows)``: each atom's rows, increasing; per window, ``(atom ids, times)``
        arrays: the atoms it reads and how often it reads each of their rows.
    """
    read_by: dict[int, dict[int, int]] = {}  # row -> {window: times}
    for w, m in enumerate(members):
        for row in m.tolist():
            counts = read_by.setdefault(row, {})
            counts[w] = counts.get(w, 0) + 1
    groups: dict[tuple, list[int]] = {}
    for row in sorted(read_by):
        groups.setdefault(tuple(sorted(read_by[row].items())), []).append(row)
    # ascending read vectors: at the first window where two differ, the one that reads it
    # more is larger; a window read by one only makes that one larger
    order = sorted(groups, key=lambda sig: tuple((-w, c) for w, c in sig))
    found: list[list[tuple[int, int]]] = [[] for _ in members]
    for a, sig in enumerate(order):
        for w, c in sig:
            found[w].append((a, c))
    windows = [
        (np.array([a for a, _ in f], dtype=np.int64), np.array([c for _, c in f], dtype=np.int64))
        for f in found
    ]
    return [np.array(groups[sig], dtype=np.int64) for sig in order], windows


def windowed_test(
    green: Sequence[Sequence[bool]],
    gammas: Sequence[Sequence[float]],
    members: Sequence[Sequence[int]],
    draws: int = WINDOW_DRAWS,
    seed: int = 0,
) -> tuple[float, int]:
    """The best window's p-value, corrected for the number of windows by simulation.

    Each window is a set of tokens; its exact p-value is the Poisson-binomial tail of its green
    count. The statistic is the smallest window p-value; its null distribution is simulated
    ``draws`` times (seeded: the same text gets the same answer), which accounts for the overlap
    of the windows, unlike a union bound. A draw does not draw every bit: the tokens read by the
    same windows form an atom whose green count is all the windows see of them, so each draw
    takes one count per atom from its exact Poisson-binomial distribution (the same null as
    drawing the bits, at a few dozen numbers per draw instead of every bit).
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
    index = [np.asarray(m, dtype=np.int64) for m in members]
    tables = [tails(pmf) for pmf in count_pmfs([probs[m].ravel() for m in index])]
    observed = [t[int(bits[m].sum())] for t, m in zip(tables, index)]
    best = int(np.argmin(observed))
    if len(members) == 1:  # nothing to correct for: the exact p-value
        return float(observed[0]), 0
    smallest = float(observed[best]) * (1.0 + 1e-9)  # as extreme, up to rounding
    low = null_minima(probs, index, tables, draws, seed)
    extreme = int((low <= smallest).sum())
    p = (1 + extreme) / (draws + 1)
    if extreme == 0:
        p = min(p, len(members) * float(observed[best]))
    return float(min(1.0, p)), best


def null_minima(
    probs: np.ndarray,
    index: list[np.ndarray],
    tables: list[np.ndarray],
    draws: int,
    seed: int,
) -> np.ndarray:
    """The smallest window p-value of each of ``draws`` null draws, float (draws,).

    Args:
        probs: (N, L) null probabilities of the bits.
        index: Per window, its tokens' indices among the N.
        tables: Per window, its p-value per green count (:func:`tails`).
        draws: Null draws.
        seed: Seed of the draws.
    """
    rows, windows = atoms(index)
    cdfs = [np.cumsum(pmf) for pmf in count_pmfs([probs[r].ravel() for r in rows])]
    # inverse-CDF draws of all atoms in one search: atom a's CDF is shifted to [2a, 2a + 1]
    starts = np.cumsum([0] + [len(c) for c in cdfs])
    shift = 2.0 * np.arange(len(cdfs))
    joined = np.concatenate([c + s for c, s in zip(cdfs, shift)])
    u = np.random.default_rng(seed).random((draws, len(cdfs)))
    counts = np.searchsorted(joined, u + shift, side="right") - starts[:-1]
    counts = np.minimum(counts, starts[1:] - starts[:-1] - 1)  # (draws, A)
    window_counts = np.empty((draws, len(windows)), dtype=np.int64)  # green count per window
    for w, (ids, times) in enumerate(windows):
        window_counts[:, w] = counts[:, ids] @ times
    low = np.ones(draws)
    for w, table in enumerate(tables):
        low = np.minimum(low, table[window_counts[:, w]])
    return low
