"""Reading a text's sentences against a key's target sets: in fixed cells, or through a monotone
alignment to key positions calibrated by Monte Carlo over keys (a research model of a detector
for keys drawn by the sentence's place; the product has none).

**Signed weights.** A sentence with outputs v (D,) tested on outputs ``dims`` (b,) gives
x_d = w_d sign(v_d), w_d its margin weight (:meth:`~watermark.sentences.key.SentenceKey
.weights`; 1 in the hits test). A target t_d = +-1 scores t . x.

**Cells** (:func:`cell_z`): each sentence read in one cell c (a context group, a position,
nothing), the cell's targets t_c; z = sum_c t_c . S_c / sqrt(sum_c |S_c|^2), S_c the sum of
the x of the cell's sentences. Over random targets it has mean 0 and variance 1 exactly, the
normal reading of the product's exact test (:mod:`watermark.sentences.significance`), whose
statistic is the same sum.

**Alignment** (:class:`Moves`, :func:`best_alignment`): the text's sentences j = 0..m-1 mapped to
key positions p(j) in order: the first aligned one at a position up to ``start`` (an excerpt's
unknown start), each next one up to ``skip`` positions further than one past the one before
(deleted sentences, or two merged into one, read at one of them), a sentence at the same
position as the one before (``splits``: a sentence cut in two, once per position) or
unaligned (``inserts`` of them at most per text, a sentence the rewrite added). The statistic
is the largest sum_j a_j(p(j)) over these alignments, a_j(p) = t_p . x_j (an unaligned one 0),
over sqrt(sum_j |x_j|^2): a max-plus dynamic programme over (position, insertions used, split).

**Calibration** (:func:`null_draws`, :func:`standardise`): the maximum has no closed law, so
for each text the same maximisation is run under random targets (fresh keys), and the text's
statistic is standardised by their mean and standard deviation; the calibration on human text
is measured by :mod:`research.position_key`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import torch

NEG = -np.inf


def cell_z(t: np.ndarray, cells: np.ndarray, x: np.ndarray) -> np.ndarray:
    """z of sentences with signed weights x (m, b) read in ``cells`` (m,) (-1: not read), under
    targets t (B, C, b) of +-1, one reading per row of t: (B,). 0 where no sentence is read."""
    read = cells >= 0
    if not read.any():
        return np.zeros(len(t))
    sums = np.zeros((t.shape[1], x.shape[1]))
    np.add.at(sums, cells[read], x[read])
    used = np.flatnonzero(np.abs(sums).sum(1))
    norm = np.sqrt((sums[used] ** 2).sum())
    return np.einsum("kcd,cd->k", t[:, used], sums[used]) / max(norm, 1e-12)


@dataclass(frozen=True)
class Moves:
    """The alignments searched: the first aligned sentence at a position <= ``start``, each
    next one at most ``skip`` positions past the next, ``splits`` (two sentences at one
    position, not twice in a row) and at most ``inserts`` unaligned sentences. Each move off
    the diagonal (a later start, a skipped position, a split, an insert) costs ``penalty``
    of the statistic; ``soft`` > 0 sums over the alignments instead of taking the best,
    log sum_A exp(soft S_A) / soft."""

    start: int = 0
    skip: int = 1
    splits: bool = True
    inserts: int = 1
    penalty: float = 0.0
    soft: float = 0.0

    def positions(self, m: int) -> int:
        """The key positions a text of ``m`` sentences can reach."""
        return self.start + m * (self.skip + 1)


@lru_cache(maxsize=256)
def _transitions(moves: Moves, positions: int) -> tuple[np.ndarray, ...]:
    """The moves of one sentence as arrays (from, to, scored position (``positions``: none),
    cost) sorted by ``to``, and the number of states. States: (p, i, s) aligned at p with i
    insertions, s = 1 after a split, then "nothing aligned yet, i inserted"."""
    n_i, pen = moves.inserts + 1, moves.penalty

    def v(p: int, i: int, s: int) -> int:
        return (p * n_i + i) * 2 + s

    def u(i: int) -> int:
        return positions * n_i * 2 + i

    found = []
    for i in range(n_i):
        found += [
            (u(i), v(p, i, 0), p, pen * (p > 0)) for p in range(min(moves.start + 1, positions))
        ]
        if i < moves.inserts:
            found.append((u(i), u(i + 1), positions, pen))
        for p in range(positions):
            for s in (0, 1):
                for k in range(moves.skip + 1):
                    if p + 1 + k < positions:
                        found.append((v(p, i, s), v(p + 1 + k, i, 0), p + 1 + k, pen * k))
                if i < moves.inserts:
                    found.append((v(p, i, s), v(p, i + 1, s), positions, pen))
            if moves.splits:
                found.append((v(p, i, 0), v(p, i, 1), p, pen))
    found.sort(key=lambda f: f[1])
    frm, to, at, cost = (np.array(c) for c in zip(*found))
    return frm, to, at, cost.astype(np.float64), positions * n_i * 2 + n_i


def best_alignment(a: np.ndarray, moves: Moves, path: bool = False):
    """The largest sum_j a[:, j, p(j)] less the moves' penalties over the alignments of
    ``moves`` (their soft sum with ``moves.soft``), a (B, m, P) the score of sentence j at
    position p under each of B keys: (B,); with ``path``, also the positions (m,) of the best
    alignment of row 0 (-1: unaligned)."""
    rows, m, positions = a.shape
    frm, to, at, cost, states = _transitions(moves, positions)
    ends, starts = np.unique(to, return_index=True)
    scale = moves.soft or 1.0
    reduce = np.logaddexp.reduceat if moves.soft else np.maximum.reduceat
    value = np.full((rows, states), NEG)
    value[:, states - moves.inserts - 1] = 0.0  # nothing aligned, nothing inserted
    for j in range(m):
        scored = np.concatenate([a[:, j], np.zeros((rows, 1))], axis=1)
        step = value[:, frm] + scale * (scored[:, at] - cost)
        value = np.full((rows, states), NEG)
        value[:, ends] = reduce(step, starts, axis=1)
    best = (np.logaddexp.reduce(value, axis=1) if moves.soft else value.max(1)) / scale
    if not path:
        return best
    return best, _backtrack(a[0], replace(moves, soft=0.0))


def _backtrack(a: np.ndarray, moves: Moves) -> np.ndarray:
    """The positions (m,) of the best alignment of scores a (m, P), read back through the
    values after each sentence (-1: unaligned)."""
    m, positions = a.shape
    frm, to, at, cost, states = _transitions(moves, positions)
    ends, starts = np.unique(to, return_index=True)
    value = np.full(states, NEG)
    value[states - moves.inserts - 1] = 0.0
    kept = [value]
    for j in range(m):
        step = value[frm] + np.append(a[j], 0.0)[at] - cost
        value = np.full(states, NEG)
        value[ends] = np.maximum.reduceat(step, starts)
        kept.append(value)
    found = np.full(m, -1)
    state = int(kept[m].argmax())
    for j in range(m, 0, -1):
        into = np.flatnonzero(to == state)
        gains = kept[j - 1][frm[into]] + np.append(a[j - 1], 0.0)[at[into]] - cost[into]
        pick = into[int(np.argmax(gains))]
        found[j - 1] = at[pick] if at[pick] < positions else -1
        state = int(frm[pick])
    return found


def position_scores(t: np.ndarray, x: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """a (B, m, P): each sentence's score t_c . x_j at each position p, read in the cell
    c = cells[j, p] (a position, or a position and a secret output's sign), under targets
    t (B, C, b)."""
    scores = np.einsum("kcd,jd->kjc", t, x)
    return np.take_along_axis(scores, np.broadcast_to(cells, (len(t), *cells.shape)), axis=2)


def aligned_z(t: np.ndarray, x: np.ndarray, cells: np.ndarray, moves: Moves, path: bool = False):
    """The raw aligned statistic of sentences x (m, b) whose cell at each position is
    ``cells`` (m, P), under targets t (B, C, b): the best alignment of the scores over
    sqrt(sum_j |x_j|^2) (so penalties are in units of the text's z), (B,); with ``path``,
    row 0's positions."""
    norm = max(float(np.sqrt((x**2).sum())), 1e-12)
    return best_alignment(position_scores(t, x, cells) / norm, moves, path)


def random_targets(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Targets of +-1 drawn uniformly, float (shape)."""
    return rng.integers(0, 2, shape).astype(np.float64) * 2 - 1


def null_draws(
    x: np.ndarray, cells: np.ndarray, tables: int, moves: Moves, draws: int, rng
) -> np.ndarray:
    """The raw aligned statistic of sentences x (m, b) read in ``cells`` (m, P) under
    ``draws`` random keys of ``tables`` target sets: (draws,)."""
    return aligned_z(random_targets(rng, (draws, tables, x.shape[1])), x, cells, moves)


def standardise(raw: np.ndarray | float, null: np.ndarray) -> np.ndarray | float:
    """``raw`` standardised by the null draws' mean and standard deviation."""
    return (raw - null.mean()) / max(float(null.std()), 1e-12)


def calibrated(raw: np.ndarray, null: np.ndarray, fit: float = 0.05) -> np.ndarray:
    """The probit z of ``raw`` under the null draws: the share of draws at or above it (mid-p,
    so never 0 or 1), and beyond the draws' upper ``fit`` quantile u, the tail of a maximum
    over n_eff alignments of z-scores, n_eff (1 - Phi(raw)), n_eff = fit / (1 - Phi(u)) (a
    union bound fitted where the draws still see the tail)."""
    null = np.sort(null)
    u = np.quantile(null, 1 - fit)
    n_eff = fit / max(float(sf(np.array(u))), 1e-300)
    above = (len(null) - np.searchsorted(null, raw, side="left") + 0.5) / (len(null) + 1)
    p = np.where(raw > u, np.minimum(fit, n_eff * sf(raw)), np.maximum(above, fit))
    return probit(np.clip(p, 1e-300, 1.0))


def sf(z: np.ndarray) -> np.ndarray:
    """1 - Phi(z), float64."""
    z = torch.as_tensor(z, dtype=torch.float64)
    return (0.5 * torch.special.erfc(z / math.sqrt(2))).numpy()  # ndtr(-z) underflows


def probit(p: np.ndarray) -> np.ndarray:
    """Phi^-1(1 - p), float64 (accurate for small p)."""
    return -torch.special.ndtri(torch.as_tensor(p, dtype=torch.float64)).numpy()
