"""What a key space gives the sentence layer, measured on mapper outputs (no generation): the
sentence mapper's validation metrics (:mod:`mapper.sentence_system`, :mod:`mapper.encoder_system`
log them while training), also read by the research modules (:mod:`research.common`).

* **Stability** (:func:`rewrite_agreement`): over pairs of a sentence and the sentence of its
  rewrite nearest to it, the share of outputs that keep their sign: on every output, by margin
  bin (the margin of an output is |v_d| over the sentence's own mean |v|, as the margin test
  reads it), and on the outputs that random keys test.
* **Spread** (:func:`pool_spread`): per pool of one prefix's candidates, the candidate the layer
  keeps under a random key (the best tanh score, the layer's ``score`` choice,
  :meth:`~watermark.sentences.key.SentenceKey.order`), its hit rate, and its score in units of
  the score's spread over unrelated sentences; also the pool's lean (the mean |mean sign| of
  an output over the pool's candidates: 0 when candidates split evenly, 1 when they all agree).
* **Diversity** (:func:`unrelated_agreement`): unrelated sentences' share of equal signs.
* **Surviving evidence** (:func:`surviving_evidence`), the figure of merit of a key space: the
  kept candidate's per-sentence z (:meth:`~watermark.sentences.key.SentenceKey.evidence`)
  before a rewrite and expected after it, under a flip model that keeps each sign with the
  probability measured for its margin bin (:func:`rewrite_agreement`).

The keys are the product's (:class:`~watermark.sentences.key.SentenceKey`): ``bits`` tested
outputs, ``context_bits`` own signs picking the group. Every function takes outputs v (N, D).
The candidate kept is the layer's own choice
(:meth:`~watermark.sentences.key.SentenceKey.order`); a pool's candidates are read as a text's
first sentences (group 0 under a key read from the previous sentence) unless their
predecessor's outputs are given.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.config.sections import Sentences
from watermark.sentences.key import MARGIN_WEIGHTS, SentenceKey, margins

# the margin bins of the test's weights: (0, 0.5), (0.5, 1), (1, 2), (2, inf)
MARGIN_BINS = tuple(
    zip((0.0, *(b for b, _ in MARGIN_WEIGHTS[:-1])), (b for b, _ in MARGIN_WEIGHTS))
)
KEY_SETTINGS = {"bits": 32, "context_bits": 2, "keying": "own", "test": "margin"}  # robust's


def keys(num_dims: int, count: int, **settings: object) -> list[SentenceKey]:
    """``count`` random keys of the ``sentences`` settings (:data:`KEY_SETTINGS` unless given:
    ``bits``, ``context_bits``, ``keying``, ``test``, ``weight_power``), with fixed names so
    that every mapper is measured under the same ones."""
    section = Sentences(**{**KEY_SETTINGS, **settings})
    return SentenceKey.of_section(section, [f"measure-{k}" for k in range(count)], num_dims)


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
            best = key.order(v)[0]  # the layer's choice, as a first sentence
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


def surviving_evidence(
    pools: Sequence[torch.Tensor],
    tested: Sequence[SentenceKey],
    kept_by_bin: Sequence[float],
    candidates: int,
    choice: str = "score",
    previous: Sequence[torch.Tensor | None] | None = None,
) -> dict[str, float]:
    """The kept candidate of the first ``candidates`` of each pool (outputs (N_p, D)) under each
    key and its z in the key's test alone: ``z`` as generated and ``z_after`` expected after a
    rewrite that keeps each sign with probability ``kept_by_bin[b]`` for its margin bin b
    (:data:`MARGIN_BINS`), independently (:meth:`~watermark.sentences.key.SentenceKey.survival`).
    ``choice``: the layer's rule, ``score`` (the best tanh score, ties to the first) or
    ``survival`` (the best z expected after the product's own flip model,
    :data:`~watermark.sentences.key.MARGIN_KEPT`), chosen as the layer chooses
    (:meth:`~watermark.sentences.key.SentenceKey.order`), each pool's candidates read after
    its entry of ``previous`` (outputs (D,) of the sentence before them; default: none).

    A kept sign adds w_i s_i (s_i = +1 on target, -1 off), a flipped one -w_i s_i, so the
    tested output adds w_i s_i (2 k_i - 1) in expectation. With context outputs of its own
    (``keying="own"``) the group survives only if all of them keep their signs; another group
    tests other targets, which a random key sets independently of the text, so those outputs
    then add 0 in expectation. The weights are the original's (a rewrite's own margins are not
    known here). Returns the means over pools and keys, ``kept_share`` (z_after / z) and a 95%
    bootstrap interval of ``z_after`` over pools (``z_after_ci95``; the keys held fixed).
    """
    kept = torch.tensor([float(k) for k in kept_by_bin])
    z, after = [], []
    before = [None] * len(pools) if previous is None else list(previous)
    for key in tested:
        for pool, prior in zip(pools, before, strict=True):
            v = pool[:candidates].float()
            groups = key.candidate_groups(v, prior)
            i = key.order(v, prior, choice)[0]  # the layer's choice
            best = slice(i, i + 1)
            z.append(key.evidence(v[best], groups[best]).item())
            after.append(key.survival(v[best], groups[best], kept).item())
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    per_pool = torch.tensor(after).reshape(len(tested), len(pools)).mean(0)
    draws = torch.randint(
        0, len(pools), (1000, len(pools)), generator=torch.Generator().manual_seed(0)
    )
    low, high = torch.quantile(per_pool[draws].mean(1), torch.tensor([0.025, 0.975])).tolist()
    return {
        "candidates": candidates,
        "choice": choice,
        "z": mean(z),
        "z_after": mean(after),
        "z_after_ci95": [low, high],
        "kept_share": mean(after) / mean(z) if mean(z) else float("nan"),
    }
