"""Held-out metrics on hard signs of mapper outputs, and the SimHash baseline they are compared to.

A "code" is the bool matrix v > 0 (one row per text, D columns). Pairs are given as row-index
tensors per kind: augmentation kinds (paraphrase, shortened, expanded, synonym), `same_doc` and
`unrelated`. The same function scores the trained mapper and the SimHash baseline on the same pairs.
"""

from __future__ import annotations

import torch
from torchmetrics.functional import spearman_corrcoef

DIM_TOLERANCE = 0.2


def simhash_codes(
    emb: torch.Tensor, center: torch.Tensor, output_dim: int, seed: int = 0
) -> torch.Tensor:
    """Signs of a fixed random Gaussian projection of the centred embeddings.

    Args:
        emb: (N, E) embeddings.
        center: (E,) vector subtracted first (the training-set mean).
        output_dim: D, number of hyperplanes.
        seed: seed of the projection (CPU generator, so identical everywhere).

    Returns:
        (N, D) bool codes.
    """
    gen = torch.Generator().manual_seed(seed)
    proj = torch.randn(emb.shape[1], output_dim, generator=gen)
    return ((emb.float().cpu() - center.float().cpu()) @ proj) > 0


def agreement(codes: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Fraction of equal bits between rows a[k] and b[k] of `codes`; returns shape (P,)."""
    return (codes[a] == codes[b]).float().mean(-1)


def code_metrics(
    codes: torch.Tensor,
    emb: torch.Tensor,
    originals: torch.Tensor,
    pairs: dict[str, tuple[torch.Tensor, torch.Tensor]],
) -> dict[str, float]:
    """Balance, agreement and distance-correlation metrics of a code matrix.

    Args:
        codes: (N, D) bool codes of all texts.
        emb: (N, E) embeddings of the same texts.
        originals: (S,) rows of the source sentences (the balance metrics use only these).
        pairs: kind -> (a, b) row-index tensors of shape (P_kind,).

    Returns:
        Flat dict of floats: `sent_balance_mean`, `sent_balance_p95` (|fraction positive - 0.5| per
        sentence), `dim_within_tol` (share of dimensions whose fraction positive over sentences is
        within 0.5 +- 0.2), `dim_balance_max`, `agree_<kind>` (mean bit agreement),
        `agree_unrelated_p95`, and `spearman` (embedding vs Hamming distance over all pairs).
    """
    codes = codes.cpu()
    emb = emb.float().cpu()
    orig = codes[originals].float()
    sent = (orig.mean(1) - 0.5).abs()
    dim = (orig.mean(0) - 0.5).abs()
    out = {
        "sent_balance_mean": sent.mean().item(),
        "sent_balance_p95": torch.quantile(sent, 0.95).item(),
        "dim_within_tol": (dim <= DIM_TOLERANCE).float().mean().item(),
        "dim_balance_max": dim.max().item(),
    }
    all_a, all_b = [], []
    for kind, (a, b) in pairs.items():
        if len(a) == 0:
            continue
        agree = agreement(codes, a, b)
        out[f"agree_{kind}"] = agree.mean().item()
        if kind == "unrelated":
            out["agree_unrelated_p95"] = torch.quantile(agree, 0.95).item()
        all_a.append(a)
        all_b.append(b)
    if all_a:
        a, b = torch.cat(all_a), torch.cat(all_b)
        emb_dist = (emb[a] - emb[b]).norm(dim=-1)
        hamming = 1.0 - agreement(codes, a, b)
        out["spearman"] = spearman_corrcoef(emb_dist, hamming).item()
    return out


def compare_to_simhash(
    mapper: torch.nn.Module,
    emb: torch.Tensor,
    originals: torch.Tensor,
    pairs: dict[str, tuple[torch.Tensor, torch.Tensor]],
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """`code_metrics` of a mapper's signs and of SimHash (same D and centre) on the same pairs.

    Args:
        mapper: A `SemanticMapper` (its `center` buffer and output width are used for SimHash).
        emb, originals, pairs: As for `code_metrics`.
        seed: Seed of the SimHash projection.

    Returns:
        `{"mapper": {...}, "simhash": {...}}`.
    """
    device = next(mapper.parameters()).device
    codes = mapper(emb.to(device)) > 0
    base = simhash_codes(emb, mapper.center, mapper.config.output_dim, seed)
    return {
        "mapper": code_metrics(codes, emb, originals, pairs),
        "simhash": code_metrics(base, emb, originals, pairs),
    }
