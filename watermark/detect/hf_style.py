"""Detection in the shape of transformers' ``WatermarkDetector``: a callable object that takes a
batch of generated token ids and gives boolean predictions, or with ``return_dict=True`` arrays
of the same fields as transformers' ``WatermarkDetectorOutput``.

    detector = watermark.WatermarkDetector(wm)        # or a config, a shipped name, None
    out = model.generate(**inputs, **wm.generation_kwargs(max_new_tokens=200))
    detector(out[:, inputs["input_ids"].shape[1]:], return_dict=True).p_value

What differs from transformers' detector, where ours has more to say: it takes texts as well as
ids; each row of ids is cut at its first EOS or pad token (the rows of a batch end at different
steps) and a leading BOS is dropped; ``prediction`` is the config's calibrated verdict
(``is_watermarked``: the windowed and the sentence tests included) unless ``z_threshold`` is
given, which compares the whole-text z-score as transformers does; and ``results`` holds each
text's full :class:`~watermark.detect.result.DetectionResult`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig
from watermark.detect.result import DetectionResult
from watermark.generate.generation import eos_ids


@dataclass
class WatermarkDetectorOutput:
    """Per text of the batch (arrays of shape (batch_size,)), transformers' fields.

    Attributes:
        num_tokens_scored: Tokens the watermark scored (|W|, the gate's steps).
        num_green_tokens: Of those, green in the first green list.
        green_fraction: Their share.
        z_score: The whole-text test's z-score.
        p_value: The p-value the verdict compares with ``target_fpr`` (the windowed or the
            combined one where the config has them).
        prediction: Whether the text is watermarked.
        confidence: ``1 - p_value``.
        results: Each text's full result.
    """

    num_tokens_scored: np.ndarray
    num_green_tokens: np.ndarray
    green_fraction: np.ndarray
    z_score: np.ndarray
    p_value: np.ndarray
    prediction: np.ndarray
    confidence: np.ndarray
    results: list[DetectionResult] = field(repr=False)


class WatermarkDetector:
    """A loaded watermark's detector with transformers' call (module docstring)."""

    def __init__(
        self,
        watermark: Watermark | WatermarkConfig | str | os.PathLike[str] | None = None,
        **load_kwargs: object,
    ) -> None:
        """``watermark``: a loaded :class:`~watermark.api.Watermark`, or what
        :meth:`Watermark.load` takes (a config, a file, a shipped name, ``None`` for the
        default), loaded with ``load_kwargs``."""
        if not isinstance(watermark, Watermark):
            watermark = Watermark.load(watermark, **load_kwargs)
        self.watermark = watermark

    def __call__(
        self,
        input_ids: torch.Tensor | Sequence[Sequence[int]] | Sequence[str] | str,
        z_threshold: float | None = None,
        return_dict: bool = False,
    ) -> WatermarkDetectorOutput | np.ndarray:
        """Detects each row of ``input_ids`` (long (batch, T): the generated tokens without the
        prompt, or lists of ids) or each text.

        Returns:
            Boolean predictions, shape (batch,); with ``return_dict`` a
            :class:`WatermarkDetectorOutput`.
        """
        texts = isinstance(input_ids, str) or (
            not isinstance(input_ids, torch.Tensor)
            and bool(input_ids)
            and isinstance(input_ids[0], str)
        )
        if texts:
            results = self.watermark.detect(input_ids)
        else:
            rows = self.token_rows(input_ids)
            results = self.watermark.detector.detect_ids(rows)
        z = np.array([r.z_score for r in results])
        if z_threshold is None:
            prediction = np.array([r.is_watermarked for r in results])
        else:
            prediction = z > z_threshold
        if not return_dict:
            return prediction
        p = np.array([r.verdict_p_value for r in results])
        return WatermarkDetectorOutput(
            num_tokens_scored=np.array([r.num_scored for r in results]),
            num_green_tokens=np.array([sum(r.green) for r in results]),
            green_fraction=np.array([r.green_fraction for r in results]),
            z_score=z,
            p_value=p,
            prediction=prediction,
            confidence=1.0 - p,
            results=results,
        )

    def token_rows(self, input_ids: torch.Tensor | Sequence[Sequence[int]]) -> list[list[int]]:
        """Each row as a list of ids: a leading BOS dropped, cut at the first EOS or pad."""
        tokenizer = self.watermark.tokenizer
        rows = input_ids.tolist() if isinstance(input_ids, torch.Tensor) else input_ids
        stop = set(eos_ids(self.watermark.generator, tokenizer))
        if getattr(tokenizer, "pad_token_id", None) is not None:
            stop.add(tokenizer.pad_token_id)
        bos = getattr(tokenizer, "bos_token_id", None)
        out = []
        for row in rows:
            row = [int(t) for t in row]
            row = row[1:] if row and bos is not None and row[0] == bos else row
            out.append(row[: next((i for i, t in enumerate(row) if t in stop), len(row))])
        return out
