"""How sure a comparison is: paired bootstrap intervals over prompts and human texts.

Methods compared on the same units share their prompts (positives) and their human texts
(negatives), so each bootstrap draw resamples unit indices once and applies them to both methods:
the interval is for the *difference*, with the prompt-to-prompt variation that both share taken out.

* :func:`auc_difference`: ROC-AUC (and TPR at an FPR) of method A minus method B.
* :func:`quality_ratio`: a method's median perplexity and mean rep-4 over the unwatermarked
  texts' on the same prompts.

Intervals are percentile intervals (95% by default) of ``draws`` resamples with a fixed seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evaluation.metrics import TAIL_KEYS, TAIL_LEVELS, auc, tpr_at

DRAWS, LEVEL = 2000, 0.95


def interval(values: np.ndarray, level: float = LEVEL) -> list[float]:
    """The central ``level`` percentile interval of ``values``."""
    tail = (1 - level) / 2 * 100
    return [float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))]


def auc_difference(
    pos_a: Sequence[float],
    neg_a: Sequence[float],
    pos_b: Sequence[float],
    neg_b: Sequence[float],
    draws: int = DRAWS,
    seed: int = 0,
) -> dict:
    """ROC-AUC and TPR at 1% FPR of A minus B with paired bootstrap intervals.

    ``pos_a[i]`` and ``pos_b[i]`` come from the same prompt, ``neg_a[j]`` and ``neg_b[j]`` are
    the same human text; each draw resamples i and j once for both methods.

    Returns:
        ``{"auc_diff", "auc_ci", "tpr_diff", "tpr_ci", "resolved"}``; ``resolved``: the AUC
        interval excludes zero.
    """
    pa, na, pb, nb = (np.asarray(x, dtype=np.float64) for x in (pos_a, neg_a, pos_b, neg_b))
    if pa.shape != pb.shape or na.shape != nb.shape:
        raise ValueError("paired comparison needs the same prompts and human texts for A and B")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(pa), size=(draws, len(pa)))
    j = rng.integers(0, len(na), size=(draws, len(na)))
    auc_diff = auc(pa[i], na[j]) - auc(pb[i], nb[j])
    tpr_diff = tpr_at(pa[i], na[j]) - tpr_at(pb[i], nb[j])
    point = float(auc(pa[None], na[None])[0] - auc(pb[None], nb[None])[0])
    tpr_point = float(tpr_at(pa[None], na[None])[0] - tpr_at(pb[None], nb[None])[0])
    ci = interval(auc_diff)
    return {
        "auc_diff": point,
        "auc_ci": ci,
        "tpr_diff": tpr_point,
        "tpr_ci": interval(tpr_diff),
        "resolved": ci[0] > 0 or ci[1] < 0,
    }


def quality_ratio(
    ppl: Sequence[float],
    rep4: Sequence[float],
    ref_ppl: Sequence[float],
    ref_rep4: Sequence[float],
    draws: int = DRAWS,
    seed: int = 0,
) -> dict:
    """Median PPL and mean rep-4 of a method over the reference's, on the same prompts, with
    paired bootstrap intervals (``ppl[i]`` and ``ref_ppl[i]`` share prompt i), and the
    difference in the share of texts with rep-4 above 0.2 and above 0.4
    (:func:`mean_difference`)."""
    arrays = [np.asarray(x, dtype=np.float64) for x in (ppl, rep4, ref_ppl, ref_rep4)]
    if len({len(a) for a in arrays}) != 1:
        raise ValueError("quality ratios need one value per prompt for both")
    p, r, rp, rr = arrays
    i = np.random.default_rng(seed).integers(0, len(p), size=(draws, len(p)))
    ppl_ratio = np.median(p[i], axis=1) / np.median(rp[i], axis=1)
    rep_ratio = r[i].mean(axis=1) / np.maximum(rr[i].mean(axis=1), 1e-12)
    tail = {
        key: mean_difference(r > level, rr > level, draws, seed)
        for key, level in zip(TAIL_KEYS, TAIL_LEVELS)
    }
    return {
        "ppl_ratio": float(np.median(p) / np.median(rp)),
        "ppl_ci": interval(ppl_ratio),
        "rep4_ratio": float(r.mean() / max(rr.mean(), 1e-12)),
        "rep4_ci": interval(rep_ratio),
        "prompts": len(p),
        **tail,
    }


def mean_interval(values: Sequence[float], draws: int = DRAWS, seed: int = 0) -> list[float]:
    """Bootstrap interval of the mean of ``values`` (e.g. a share, from 0/1 values)."""
    v = np.asarray(values, dtype=np.float64)
    i = np.random.default_rng(seed).integers(0, len(v), size=(draws, len(v)))
    return interval(v[i].mean(axis=1))


def mean_difference(
    a: Sequence[float], b: Sequence[float], draws: int = DRAWS, seed: int = 0
) -> dict:
    """Mean of A minus mean of B with a paired bootstrap interval (``a[i]`` and ``b[i]`` share
    prompt i): ``{"diff", "ci", "resolved"}``."""
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if va.shape != vb.shape:
        raise ValueError("a paired difference needs one value per prompt for both")
    i = np.random.default_rng(seed).integers(0, len(va), size=(draws, len(va)))
    ci = interval(va[i].mean(axis=1) - vb[i].mean(axis=1))
    return {"diff": float(va.mean() - vb.mean()), "ci": ci, "resolved": ci[0] > 0 or ci[1] < 0}
