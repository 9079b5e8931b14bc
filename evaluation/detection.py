"""`MethodDetection`: one text's detection, as every method of the evaluation returns it.

Our method reads the library's :class:`watermark.detect.result.DetectionResult` into it
(:meth:`MethodDetection.from_result`); the baselines fill it from their own statistics. The
evaluation's store caches it as a JSON record with the short keys that earlier runs wrote
(``z``, ``p``, ``num_scored``, ``num_tokens``, ``green_fraction``, ``awr``, then ``score`` and
``seconds`` where set), so caches written before this type existed load unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any

from watermark.detect.result import DetectionResult


@dataclass(frozen=True)
class MethodDetection:
    """Detection of one text by one method.

    Attributes:
        z_score: The method's z-score (higher: more evidence of its watermark).
        p_value: One-sided p-value of the method's test.
        num_scored: Scored units (tokens, or SynthID's non-repeated contexts).
        num_tokens: Generator tokens of the text.
        green_fraction: Share of scored units (bits) that are green.
        awr: Adaptive watermark rate, scored / tokens (1 for methods that score every token).
        score: SynthID's mean g-value, which the frontier thresholds; ``None`` for the others.
        seconds: Detection time per text when the evaluation measured it, else ``None``.
    """

    z_score: float
    p_value: float
    num_scored: int
    num_tokens: int
    green_fraction: float
    awr: float
    score: float | None = None
    seconds: float | None = None

    @classmethod
    def from_result(cls, result: DetectionResult) -> MethodDetection:
        """Our detector's result, summarised; with the sentence layer, its combined p-value and
        that p-value's normal quantile as the z-score (the order the curves rank by)."""
        detection = cls(
            z_score=result.z_score,
            p_value=result.p_value,
            num_scored=result.num_scored,
            num_tokens=result.num_tokens,
            green_fraction=result.green_fraction,
            awr=result.awr,
        )
        if result.combined_p_value is None:
            return detection
        p = min(max(result.combined_p_value, 1e-300), 1 - 1e-12)
        return replace(detection, z_score=-NormalDist().inv_cdf(p), p_value=result.combined_p_value)

    def to_record(self) -> dict[str, Any]:
        """The JSON record the store keeps (the keys of earlier caches)."""
        record = {
            "z": self.z_score,
            "p": self.p_value,
            "num_scored": self.num_scored,
            "num_tokens": self.num_tokens,
            "green_fraction": self.green_fraction,
            "awr": self.awr,
        }
        for name in ("score", "seconds"):
            if getattr(self, name) is not None:
                record[name] = getattr(self, name)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> MethodDetection:
        """A stored record (other keys, such as the store's ``key``, are ignored)."""
        return cls(
            z_score=record["z"],
            p_value=record["p"],
            num_scored=record["num_scored"],
            num_tokens=record["num_tokens"],
            green_fraction=record["green_fraction"],
            awr=record["awr"],
            score=record.get("score"),
            seconds=record.get("seconds"),
        )


def share_flagged(detections: Sequence[MethodDetection], alpha: float = 0.01) -> float:
    """Share of ``detections`` whose own test gives ``p < alpha``."""
    return sum(d.p_value < alpha for d in detections) / len(detections)
