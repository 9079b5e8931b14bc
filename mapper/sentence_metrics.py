"""What a key space gives the sentence layer, measured on mapper outputs (no generation).

* **Stability** (:func:`rewrite_agreement`): over pairs of a sentence and the sentence of its
  rewrite nearest to it, the share of outputs that keep their sign: on every output, by margin
  bin (the margin of an output is |v_d| over the sentence's own mean |v|, as the margin test
  reads it), and on the outputs that random keys test.
* **Spread** (:func:`pool_spread`): per pool of one prefix's candidates, the candidate the layer
  keeps under a random key (the best tanh score, :meth:`~watermark.sentences.key.SentenceKey.
  scores`), its hit rate, and its score in units of the score's spread over unrelated
  sentences; also the pool's lean (the mean |mean sign| of an output over the pool's
  candidates: 0 when candidates split evenly, 1 when they all agree).
* **Diversity** (:func:`unrelated_agreement`): unrelated sentences' share of equal signs.
* **Surviving evidence** (:func:`surviving_evidence`), the figure of merit of a key space: the
  kept candidate's per-sentence z (:meth:`~watermark.sentences.key.SentenceKey.evidence`)
  before a rewrite and expected after it, under a flip model that keeps each sign with the
  probability measured for its margin bin (:func:`rewrite_agreement`).

The keys are the product's (:class:`~watermark.sentences.key.SentenceKey`): ``bits`` tested
outputs, ``context_bits`` own signs picking the group. Every function takes outputs v (N, D).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.sentences.key import SentenceKey

MARGIN_BINS = ((0.0, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, float("inf")))
KEY_SETTINGS = {"bits": 32, "context_bits": 2, "keying": "own", "test": "margin"}  # robust's


def keys(num_dims: int, count: int, **settings: object) -> list[SentenceKey]:
    """``count`` random keys (fixed names, so every mapper is measured under the same ones)."""
    found = {**KEY_SETTINGS, **settings}
    return [
        SentenceKey.of(
            f"measure-{k}",
            num_dims,
            int(found["bits"]),
            int(found["context_bits"]),
            str(found["keying"]),
            str(found["test"]),
        )
        for k in range(count)
    ]


def margins(v: torch.Tensor) -> torch.Tensor:
    """(N, D) margins |v_d| / mean_D |v| of outputs v (N, D)."""
    return v.abs() / v.abs().mean(1, keepdim=True).clamp_min(1e-12)


def rewrite_agreement(
    v: torch.Tensor, w: torch.Tensor, tested: Sequence[SentenceKey] = ()
) -> dict[str, float]:
    """Sign agreement of pairs (v[i], w[i]) (both (P, D)): ``all``, ``bin_<lo>-<hi>`` by the
    original's margin and its share of outputs ``share_<lo>-<hi>``, and ``keyed`` (the outputs
    of the ``tested`` keys, their group's context outputs included)."""
    same, m = (v > 0) == (w > 0), margins(v)
    out = {"pairs": int(v.shape[0]), "all": same.float().mean().item()}
    for lo, hi in MARGIN_BINS:
        inside = (m >= lo) & (m < hi)
        name = f"{lo:g}-{hi:g}"
        out[f"bin_{name}"] = same[inside].float().mean().item() if inside.any() else float("nan")
        out[f"share_{name}"] = inside.float().mean().item()
    if tested:
        cols = torch.cat([torch.cat([k.dims, k.context_dims]) for k in tested])
        out["keyed"] = same[:, cols].float().mean().item()
    return out


def kept_by_bin(agreement: dict[str, float]) -> list[float]:
    """The signs kept in each :data:`MARGIN_BINS` bin, from :func:`rewrite_agreement`'s result
    (NaN for an empty bin): the flip model of :func:`surviving_evidence`."""
    return [agreement[f"bin_{lo:g}-{hi:g}"] for lo, hi in MARGIN_BINS]


def unrelated_agreement(v: torch.Tensor, w: torch.Tensor) -> dict[str, float]:
    """Equal signs of unrelated pairs (v[i], w[i]): the mean and the 95th percentile."""
    agree = ((v > 0) == (w > 0)).float().mean(1)
    return {"unrelated": agree.mean().item(), "unrelated_p95": torch.quantile(agree, 0.95).item()}


def pool_spread(
    pools: Sequence[torch.Tensor], unrelated: torch.Tensor, tested: Sequence[SentenceKey]
) -> dict[str, float]:
    """The kept candidate of each pool (outputs (N_p, D)) under each of the ``tested`` keys:
    mean hit rate, mean margin-weighted hit rate, the kept score in units of the spread of the
    score over ``unrelated`` sentences (same N as the largest pool, split into groups of it),
    and the pools' lean."""
    hits, weighted, z, lean = [], [], [], []
    size = max(len(p) for p in pools)
    groups = unrelated[: len(unrelated) // size * size].split(size)
    for key in tested:
        base = torch.cat([key.scores(g, key.groups(g, None)) for g in groups])
        mu, sd = base.mean(), base.std().clamp_min(1e-9)
        for v in pools:
            group = key.groups(v, None)
            score = key.scores(v, group)
            best = int(torch.argmax(score))
            hit = key.hits(v[best : best + 1], group[best : best + 1]).float()
            w = key.weights(v[best : best + 1])
            w = torch.ones_like(hit) if w is None else w.float()
            hits.append(hit.mean().item())
            weighted.append(((w * hit).sum() / w.sum()).item())
            z.append(((score[best] - mu) / sd).item())
    for v in pools:
        lean.append((v > 0).float().mul(2).sub(1).mean(0).abs().mean().item())
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return {
        "pools": len(pools),
        "hit_rate": mean(hits),
        "weighted_hit_rate": mean(weighted),
        "score_z": mean(z),
        "lean": mean(lean),
    }


def text_lean(texts: Sequence[torch.Tensor], tested: Sequence[SentenceKey]) -> dict[str, float]:
    """How far a text's sentences agree on the keyed outputs: the mean over texts (outputs
    (n_t, D) each) and outputs of |mean sign over the text's sentences|, beside the same
    sentences dealt into texts at random (the lean without a shared topic). The exact test
    reads a keyed output that every sentence of a text shares as one coin, so lean is what
    takes its power."""
    cols = torch.cat([torch.cat([k.dims, k.context_dims]) for k in tested]).unique()

    def lean(vs: Sequence[torch.Tensor]) -> float:
        signs = [(v[:, cols] > 0).float() * 2 - 1 for v in vs]
        return sum(s.mean(0).abs().mean().item() for s in signs) / len(signs)

    flat = torch.cat(list(texts))
    order = torch.randperm(len(flat), generator=torch.Generator().manual_seed(0))
    dealt = flat[order].split([len(v) for v in texts])
    return {"texts": len(texts), "lean": lean(texts), "lean_shuffled": lean(dealt)}


def nearest(u: torch.Tensor, u2: torch.Tensor) -> torch.Tensor:
    """For each original sentence of a passage (embeddings u (n, E)), the row of its rewrite's
    sentence nearest to it by cosine (embeddings u2 (m, E)): Long (n,)."""
    a = torch.nn.functional.normalize(u.float(), dim=1)
    b = torch.nn.functional.normalize(u2.float(), dim=1)
    return (a @ b.T).argmax(1)


def margin_bin(m: torch.Tensor) -> torch.Tensor:
    """Long, the shape of ``m``: the :data:`MARGIN_BINS` index of each margin."""
    edges = torch.tensor([hi for _, hi in MARGIN_BINS[:-1]], dtype=m.dtype)
    return torch.bucketize(m, edges, right=True)


def expected_evidence(
    key: SentenceKey, v: torch.Tensor, kept: torch.Tensor, power: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Float (N,) each: the z of sentences v (N, D) in ``key``'s test alone, as they are and
    expected after a rewrite that keeps a sign with probability ``kept[b]`` (float (4,)) for
    its margin bin b (:func:`surviving_evidence`), the margin weights raised to ``power``."""
    groups, m = key.groups(v, None), margins(v)
    stay = kept[margin_bin(m[:, key.context_dims])].prod(1) if key.own else torch.ones(len(v))
    after = key.evidence(v, groups, kept[margin_bin(m[:, key.dims])], power)
    return key.evidence(v, groups, power=power), stay * after


def surviving_evidence(
    pools: Sequence[torch.Tensor],
    tested: Sequence[SentenceKey],
    kept_by_bin: Sequence[float],
    candidates: int,
    choice: str = "layer",
    power: float = 1.0,
) -> dict[str, float]:
    """The kept candidate of the first ``candidates`` of each pool (outputs (N_p, D)) under each
    key and its z in the key's test alone: ``z`` as generated and ``z_after`` expected after a
    rewrite that keeps each sign with probability ``kept_by_bin[b]`` for its margin bin b
    (:data:`MARGIN_BINS`), independently. ``choice``: the layer's (the best score, ties to the
    first), or ``survival`` (the best expected ``z_after``: a survival-aware choice).
    ``power``: the margin test's weights raised to it (heavier on the signs far from zero).

    A kept sign adds w_i s_i (s_i = +1 on target, -1 off), a flipped one -w_i s_i, so the
    tested output adds w_i s_i (2 k_i - 1) in expectation. With context outputs of its own
    (``keying="own"``) the group survives only if all of them keep their signs; another group
    tests other targets, which a random key sets independently of the text, so those outputs
    then add 0 in expectation. The weights are the original's (a rewrite's own margins are not
    known here). Returns the means over pools and keys, and ``kept_share`` (z_after / z).
    """
    if choice not in ("layer", "survival"):
        raise ValueError(f"choice must be 'layer' or 'survival', got {choice!r}")
    kept = torch.tensor([float(k) for k in kept_by_bin])
    z, after = [], []
    for key in tested:
        for pool in pools:
            v = pool[:candidates].float()
            now, later = expected_evidence(key, v, kept, power)
            if choice == "layer":
                best = int(torch.argmax(key.scores(v, key.groups(v, None))))  # as the layer
            else:
                best = int(torch.argmax(later))
            z.append(now[best].item())
            after.append(later[best].item())
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return {
        "candidates": candidates,
        "choice": choice,
        "z": mean(z),
        "z_after": mean(after),
        "kept_share": mean(after) / mean(z) if mean(z) else float("nan"),
    }
