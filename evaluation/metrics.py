"""Evaluation metrics: detection, repetition, oracle perplexity, summaries.

Detection metrics treat watermarked texts as positives and human texts as negatives, with a score
where larger means "more likely watermarked" (the z-score for every method). ROC-AUC and the TPR
at an FPR are computed on rows of scores (:func:`auc`, :func:`tpr_at`), so that the paired
bootstrap (:mod:`evaluation.bootstrap`) resamples the same figures the tables report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torchmetrics.classification import BinaryPrecisionRecallCurve, BinaryROC


def _scores_and_labels(positives, negatives) -> tuple[torch.Tensor, torch.Tensor]:
    if not len(positives) or not len(negatives):
        raise ValueError("detection metrics need at least one positive and one negative score")
    scores = torch.tensor(list(positives) + list(negatives), dtype=torch.float64)
    labels = torch.tensor([1] * len(positives) + [0] * len(negatives))
    return scores, labels


def roc_curve(positives: Sequence[float], negatives: Sequence[float]) -> tuple[list, list]:
    """ROC points (fpr, tpr) over all thresholds (the report's ROC plots)."""
    scores, labels = _scores_and_labels(positives, negatives)
    fpr, tpr, _ = BinaryROC(thresholds=None)(scores, labels)
    return fpr.tolist(), tpr.tolist()


def auc(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """ROC-AUC of each row of positives (R, P) against the same row of negatives (R, N): the
    share of (positive, negative) pairs ranked right, ties counted half. Shape (R,)."""
    scores = np.concatenate([pos, neg], axis=1)
    order = scores.argsort(axis=1, kind="stable")
    ranks = np.empty_like(order, dtype=np.float64)
    np.put_along_axis(ranks, order, np.arange(1, scores.shape[1] + 1, dtype=np.float64), axis=1)
    # average the ranks of ties
    sorted_scores = np.take_along_axis(scores, order, axis=1)
    for row in range(scores.shape[0]):
        values, first, counts = np.unique(sorted_scores[row], return_index=True, return_counts=True)
        if len(values) < scores.shape[1]:
            for start, count in zip(first[counts > 1], counts[counts > 1]):
                idx = order[row, start : start + count]
                ranks[row, idx] = ranks[row, idx].mean()
    p, n = pos.shape[1], neg.shape[1]
    return (ranks[:, :p].sum(axis=1) - p * (p + 1) / 2) / (p * n)


def tpr_at(pos: np.ndarray, neg: np.ndarray, fpr: float = 0.01) -> np.ndarray:
    """Per row of positives (R, P) and negatives (R, N), the share of positives above the
    threshold that lets at most ``fpr`` of the negatives through: scores above the (k+1)-th
    largest negative, k = floor(fpr * N) (the largest TPR of a threshold whose FPR is at most
    ``fpr``). Shape (R,)."""
    k = int(np.floor(fpr * neg.shape[1]))
    if k >= neg.shape[1]:
        return np.ones(pos.shape[0])
    threshold = -np.sort(-neg, axis=1)[:, k]
    return (pos > threshold[:, None]).mean(axis=1)


def best_f1(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Best F1 over all thresholds."""
    scores, labels = _scores_and_labels(positives, negatives)
    precision, recall, _ = BinaryPrecisionRecallCurve(thresholds=None)(scores, labels)
    f1 = 2 * precision * recall / (precision + recall).clamp_min(1e-12)
    return float(f1.max())


def detection_metrics(positives: Sequence[float], negatives: Sequence[float]) -> dict:
    """ROC-AUC, best F1, TPR at 1% and 10% FPR of positives vs negatives."""
    f1 = best_f1(positives, negatives)  # raises ValueError without a positive or a negative
    pos = np.asarray(positives, dtype=np.float64)[None]
    neg = np.asarray(negatives, dtype=np.float64)[None]
    return {
        "roc_auc": float(auc(pos, neg)[0]),
        "best_f1": f1,
        "tpr@1%fpr": float(tpr_at(pos, neg, 0.01)[0]),
        "tpr@10%fpr": float(tpr_at(pos, neg, 0.10)[0]),
        "positives": len(positives),
        "negatives": len(negatives),
    }


def ngram_repetition(ids: Sequence[int], n: int) -> float:
    """Share of repeated n-grams: 1 - distinct n-grams / n-grams (0 if there are none)."""
    grams = [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def median(values: Sequence[float]) -> float:
    """Median of the finite values (NaN if none)."""
    vals = sorted(v for v in values if v == v and not math.isinf(v))
    if not vals:
        return float("nan")
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


class OraclePerplexity:
    """Perplexity of a continuation given its prompt under an oracle causal LM.

    The prompt and continuation are tokenized together with the oracle's tokenizer; the
    perplexity averages the negative log-likelihood of the tokens after the prompt's tokens.

    Args:
        model: The oracle causal LM.
        tokenizer: Its tokenizer.
    """

    def __init__(self, model: torch.nn.Module, tokenizer: object) -> None:
        self.model, self.tokenizer = model.eval(), tokenizer

    @torch.inference_mode()
    def __call__(self, prompt: str, text: str) -> float:
        """exp(mean NLL of the continuation's tokens); NaN if it has none."""
        n_prompt = len(self.tokenizer(prompt)["input_ids"])
        full = self.tokenizer(prompt + text, return_tensors="pt")["input_ids"]
        if full.shape[1] <= n_prompt:
            return float("nan")
        logits = self.model(input_ids=full).logits[0, :-1].float()
        nll = torch.nn.functional.cross_entropy(logits, full[0, 1:], reduction="none")
        return float(torch.exp(nll[n_prompt - 1 :].mean()))


def longest_repeat(ids: Sequence[int]) -> int:
    """Length of the longest run of tokens that occurs twice in ``ids`` (the occurrences may
    overlap); 0 if no token repeats."""
    lo, hi = 0, max(len(ids) - 1, 0)  # a run of length n repeats => every shorter one does
    while lo < hi:
        n = (lo + hi + 1) // 2
        seen, found = set(), False
        for i in range(len(ids) - n + 1):
            gram = tuple(ids[i : i + n])
            if gram in seen:
                found = True
                break
            seen.add(gram)
        lo, hi = (n, hi) if found else (lo, n - 1)
    return lo


TAIL_LEVELS = (0.2, 0.4)  # rep-4 above which a text counts as looping
TAIL_KEYS = tuple(f"rep4>{level}" for level in TAIL_LEVELS)  # the tail's shares, as named
# the quality columns of the report's tables, in order: PPL, rep-n, the tail, the longest repeat
QUALITY_COLUMNS = (
    "PPL (median)",
    *(f"rep-{n}" for n in (1, 2, 3, 4)),
    *(f"rep-4 > {level}" for level in TAIL_LEVELS),
    "longest repeat",
)


def tail_figures(rep4: Sequence[float], longest: Sequence[int]) -> dict:
    """How often texts collapse, which a mean hides, from each text's rep-4 and longest
    repeated span (:func:`longest_repeat`): the share of texts whose rep-4 is above each of
    :data:`TAIL_LEVELS` (:data:`TAIL_KEYS`) and the longest repeated span in tokens, mean and
    largest over the texts (``longest_mean``, ``longest_max``)."""
    n = max(1, len(rep4))
    out = {key: sum(r > level for r in rep4) / n for key, level in zip(TAIL_KEYS, TAIL_LEVELS)}
    out.update(longest_mean=sum(longest) / n, longest_max=max(longest, default=0))
    return out
