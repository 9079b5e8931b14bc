"""Keyed, balanced map from token ids to the mapper's D output dimensions.

The paper's mapper outputs one value per vocabulary entry. Vocabularies here run from 49k to 262k
tokens, so the mapper outputs D values and this map expands them: token ``i`` is green at a step
iff output dimension ``token_map[i]`` is positive.

The map is ``perm(V) % D`` with ``perm`` a random permutation of ``range(V)`` drawn by a CPU
``torch.Generator`` seeded from SHA-256 of (key, V, D). Every dimension gets ``V // D`` or
``V // D + 1`` tokens, and the map is identical on any device and process (it is always drawn on
the CPU; torch documents ``randperm`` as reproducible for a fixed seed and version).

(The paper's own setting, token i on dimension i, would need a mapper with D = V; no shipped
mapper has one.)

Rules that read several green lists per step (the tournament's layers) use one keyed map per
layer: layer 0 is the map above, layer l > 0 the same construction keyed by (key, l), so a token's
green bits in different layers come from different mapper dimensions.

With ``repeats="bigram"`` a token that already occurs in the text reads its green bit at a
shifted dimension, ``(token_map[l, token] + shift[l, previous token]) % D``, with one keyed
shift in [1, D - 1] per layer and previous token (:func:`build_repeat_shifts`): a different
dimension from the token's own, and one that changes with the token before it.

V is the LM-head width (``model.get_output_embeddings().weight.shape[0]``), which can exceed
``tokenizer.vocab_size`` (e.g. OPT: 50272 vs 50265); a map sized by the tokenizer would not cover
every logit.
"""

from __future__ import annotations

import hashlib

import torch


def key_seed(key: str, vocab_size: int, num_dims: int) -> int:
    """A 63-bit seed derived from the secret key and the map's shape."""
    digest = hashlib.sha256(f"{key}\0{vocab_size}\0{num_dims}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


def build_token_map(key: str, vocab_size: int, num_dims: int) -> torch.Tensor:
    """Builds the token -> dimension map.

    Args:
        key: Secret key.
        vocab_size: V, the LM-head width.
        num_dims: D, the mapper's output width.

    Returns:
        Long tensor of shape (V,) with values in [0, D).

    Raises:
        ValueError: If the shapes do not fit.
    """
    if vocab_size <= 0 or num_dims <= 0:
        raise ValueError(f"token map needs V > 0 and D > 0, got V={vocab_size}, D={num_dims}")
    if num_dims > vocab_size:
        raise ValueError(
            f"mapper output width D={num_dims} exceeds the LM-head width V={vocab_size}: some "
            "dimensions would map to no token; use a mapper with D <= V"
        )
    generator = torch.Generator(device="cpu").manual_seed(key_seed(key, vocab_size, num_dims))
    perm = torch.randperm(vocab_size, generator=generator, device="cpu")
    return perm % num_dims


def build_token_maps(key: str, vocab_size: int, num_dims: int, layers: int = 1) -> torch.Tensor:
    """One token map per layer, long tensor (L, V); layer 0 is ``build_token_map(key, ...)``.

    Raises:
        ValueError: If the shapes do not fit.
    """
    if layers < 1:
        raise ValueError(f"need at least one layer, got {layers}")
    keys = [key] + [f"{key}\0layer{layer}" for layer in range(1, layers)]
    return torch.stack([build_token_map(k, vocab_size, num_dims) for k in keys])


def tokens_per_dim(token_map: torch.Tensor, num_dims: int) -> torch.Tensor:
    """Number of tokens mapped to each dimension, float tensor of shape (D,)."""
    return torch.bincount(token_map, minlength=num_dims).to(torch.float64)


def build_repeat_shifts(key: str, vocab_size: int, num_dims: int, layers: int) -> torch.Tensor:
    """Keyed shifts of repeated tokens' dimensions, long tensor (L, V) with values in [1, D - 1]
    (indexed by the previous token's id; all 0 when D == 1, where there is nothing to shift)."""
    if num_dims < 2:
        return torch.zeros(layers, vocab_size, dtype=torch.long)
    rows = []
    for layer in range(layers):
        seed = key_seed(f"{key}\0repeat{layer}", vocab_size, num_dims)
        generator = torch.Generator(device="cpu").manual_seed(seed)
        rows.append(torch.randint(1, num_dims, (vocab_size,), generator=generator))
    return torch.stack(rows)
