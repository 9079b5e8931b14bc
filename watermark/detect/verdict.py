"""One verdict per text from its results under each key, and its sentence tests where the
watermark has the sentence layer (the detector's verdict step runs one of these once per text).

* Token level only (:func:`best_key`): the best-matching key's result, its p-values corrected
  for the keys tried (Bonferroni, capped at 1).
* With the sentence layer (:func:`with_sentences`): per key, Fisher's combination
  (:func:`fisher`) of its token-level verdict p-value and its sentence p-value; the best key's,
  times the number of keys, is ``combined_p_value``, compared with ``target_fpr``. The
  token-level p-values reported are corrected the same way; ``key_p_values`` stay each key's
  token-level verdict p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from watermark.detect.result import DetectionResult, verdict_p_value
from watermark.sentences.significance import SentenceTest


def fisher(p_values: Sequence[float]) -> float:
    """Fisher's combination of independent p-values: P(chi2_{2k} >= -2 sum log p)."""
    k = len(p_values)
    x = -sum(math.log(max(p, 1e-300)) for p in p_values)  # half the chi-square statistic
    return min(1.0, math.exp(-x) * sum(x**i / math.factorial(i) for i in range(k)))


def _corrected(found: DetectionResult, k: int) -> DetectionResult:
    """``found`` with its p-values times ``k`` (capped at 1)."""
    window = found.window_p_value
    return replace(
        found,
        p_value=min(1.0, k * found.p_value),
        window_p_value=None if window is None else min(1.0, k * window),
    )


def best_key(per_key: Sequence[DetectionResult], target_fpr: float) -> DetectionResult:
    """The result under the best-matching key, its p-values corrected for the keys tried."""
    key_p = [r.verdict_p_value for r in per_key]
    best = min(range(len(per_key)), key=key_p.__getitem__)
    found = _corrected(per_key[best], len(per_key))
    watermarked = verdict_p_value(found.p_value, found.window_p_value) < target_fpr
    return replace(found, is_watermarked=watermarked, key_index=best, key_p_values=key_p)


def with_sentences(
    per_key: Sequence[DetectionResult], tests: Sequence[SentenceTest], target_fpr: float
) -> DetectionResult:
    """One verdict from the token-level results of each key (uncorrected) and the sentence
    tests of the text under the same keys (module docstring)."""
    k = len(per_key)
    combined = [fisher([r.token_verdict_p_value, t.p_value]) for r, t in zip(per_key, tests)]
    best = min(range(k), key=combined.__getitem__)
    test, p = tests[best], min(1.0, k * combined[best])
    return replace(
        _corrected(per_key[best], k),
        key_index=best,
        key_p_values=[r.token_verdict_p_value for r in per_key],
        sentence_p_value=min(1.0, k * test.p_value),
        sentence_hits=test.hits,
        sentence_expected=test.expected,
        num_sentences=test.num_sentences,
        sentences=test.spans or [],
        combined_p_value=p,
        is_watermarked=p < target_fpr,
    )
