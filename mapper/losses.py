"""Loss terms of the Semantic Mapping Model, one function each (paper, Eq. for L(T~, theta)).

All functions are batch-level and differentiable. Shapes: N texts in a batch, E embedding width,
D mapper output width. The sign function has no gradient, so the two balance terms use a smooth
surrogate `soft_sign` (tanh of the RMS-normalised scores); the hard balance is reported as a metric.
"""

from __future__ import annotations

import torch


def pairwise_distances(x: torch.Tensor, eps: float = 1e-9) -> torch.Tensor:
    """Euclidean distances between the rows of x.

    Args:
        x: (N, F) tensor.
        eps: floor under the squared distance, so the gradient at zero distance stays finite.

    Returns:
        (N, N) tensor of distances; the diagonal is ~sqrt(eps), not exactly 0.
    """
    sq = x.pow(2).sum(-1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * (x @ x.T)
    return d2.clamp_min(eps).sqrt()


def rescale_distance(
    d: torch.Tensor, lower: float, upper: float, new_lower: float = -2.0, new_upper: float = 4.0
) -> torch.Tensor:
    """The paper's linear map T(d) = (d - L) / (U - L) * (U' - L') + L' (appendix A)."""
    if upper <= lower:
        raise ValueError(f"rescale_distance needs upper > lower, got L={lower}, U={upper}")
    return (d - lower) / (upper - lower) * (new_upper - new_lower) + new_lower


def distance_loss(
    u: torch.Tensor,
    v: torch.Tensor,
    upper: float,
    lower: float = 0.0,
    new_lower: float = -2.0,
    new_upper: float = 4.0,
) -> torch.Tensor:
    """Distance preservation over all pairs i < j: mean |T(D(u_i, u_j)) - D(v_i, v_j)|.

    Args:
        u: (N, E) sentence embeddings.
        v: (N, D) mapper outputs for the same texts.
        upper: U, the largest embedding distance (2 for unit-norm embeddings, or measured).
        lower, new_lower, new_upper: L, L' and U' of the rescaling (paper: 0, -2, 4).

    Returns:
        Scalar loss (0 for a batch with fewer than two texts).
    """
    n = u.shape[0]
    if n < 2:
        return v.sum() * 0.0
    i, j = torch.triu_indices(n, n, offset=1, device=u.device)
    du = pairwise_distances(u.float())[i, j]
    dv = pairwise_distances(v)[i, j]
    target = rescale_distance(du, lower, upper, new_lower, new_upper)
    return (target - dv).abs().mean()


def soft_sign(v: torch.Tensor, sharpness: float = 3.0) -> torch.Tensor:
    """Differentiable stand-in for sign(v): tanh(k * v / rms(v)) with the RMS taken per row.

    Normalising by each row's RMS makes the surrogate independent of the scale of v (which the
    distance term sets), so `sharpness` alone decides how close to a hard sign it is.

    Args:
        v: (N, D) scores.
        sharpness: k; larger is closer to sign() but has smaller gradients away from 0.

    Returns:
        (N, D) values in (-1, 1).
    """
    rms = v.pow(2).mean(-1, keepdim=True).clamp_min(1e-12).sqrt()
    return torch.tanh(sharpness * v / rms)


def sentence_balance_loss(s: torch.Tensor) -> torch.Tensor:
    """Per-sentence balance: mean over sentences of |mean over dimensions of s|.

    Args:
        s: (N, D) signs or soft signs.
    """
    return s.mean(dim=1).abs().mean()


def dimension_balance_loss(s: torch.Tensor) -> torch.Tensor:
    """Per-dimension (per-token) balance: mean over dimensions of |mean over sentences of s|.

    Args:
        s: (N, D) signs or soft signs.
    """
    return s.mean(dim=0).abs().mean()


def decorrelation_loss(s: torch.Tensor) -> torch.Tensor:
    """Redundancy between output dimensions: mean squared off-diagonal correlation over the batch.

    Not in the paper (an optional extra term, weight 0 gives the paper's loss). Codes whose
    dimensions are correlated across sentences concentrate on a few directions, which widens the
    spread of bit agreement between unrelated sentences; this term spreads them out.

    Args:
        s: (N, D) signs or soft signs, N >= 2.

    Returns:
        Scalar in [0, 1]; 0 when every pair of dimensions is uncorrelated over the batch.
    """
    n, d = s.shape
    if n < 2 or d < 2:
        return s.sum() * 0.0
    z = s - s.mean(0, keepdim=True)
    z = z / z.pow(2).mean(0, keepdim=True).clamp_min(1e-12).sqrt()
    corr = (z.T @ z) / n
    off = corr.pow(2).sum() - corr.diagonal().pow(2).sum()
    return off / (d * (d - 1))


def contrastive_loss(v: torch.Tensor, v_aug: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
    """Pulls each augmented text toward its source: mean of D(v(S), v(S~)) over (S, S~) pairs.

    Args:
        v: (B, D) outputs of the source sentences.
        v_aug: (A, D) outputs of the augmented texts.
        owner: (A,) long tensor, index into v of each augmented text's source.

    Returns:
        Scalar loss (0 when A == 0).
    """
    if v_aug.shape[0] == 0:
        return v.sum() * 0.0
    diff = v[owner] - v_aug
    return diff.pow(2).sum(-1).clamp_min(1e-9).sqrt().mean()


def stability_loss(s_a: torch.Tensor, s_b: torch.Tensor) -> torch.Tensor:
    """Signs that a rewrite keeps, with a margin: 1 - mean of s_a * s_b over pairs and outputs.

    0 when every pair's soft signs agree at full margin; 1 when they are unrelated; 2 when every
    sign flips. A pair near zero costs too, so the term also asks for margins that survive.

    Args:
        s_a, s_b: (P, D) soft signs of a sentence and of its rewrite.
    """
    if s_a.shape[0] == 0:
        return s_a.sum() * 0.0
    return 1.0 - (s_a * s_b).mean()


def pool_spread_loss(s: torch.Tensor, pool: torch.Tensor) -> torch.Tensor:
    """Candidates of one prefix that split their signs: mean over pools and outputs of the
    squared mean soft sign over the pool's candidates.

    It is the mean similarity of the pool's sign vectors (diagonal included), so it is smallest
    when the candidates of a prefix are as unrelated as sentences of different texts, whatever
    topic they share: a key then finds candidates on both sides of each output to choose from.

    Args:
        s: (N, D) soft signs of the candidates of several pools.
        pool: (N,) long, the pool of each row (0 .. P-1).
    """
    if s.shape[0] == 0:
        return s.sum() * 0.0
    count = int(pool.max()) + 1
    sums = torch.zeros(count, s.shape[1], dtype=s.dtype, device=s.device).index_add_(0, pool, s)
    sizes = torch.bincount(pool, minlength=count).clamp_min(1).to(s.dtype)
    return (sums / sizes[:, None]).pow(2).mean()
