"""The measurement model's incremental state during generation: one per ``generate`` call,
asked for the gate entropies of the next step (:func:`start_state`).

* same tokenizer: one batched KV cache over ``[start] + S_{0:t-1}``, restarted when the window
  of :func:`~watermark.core.measurement.window_start` moves;
* cross tokenizer: one KV cache per row over the MM re-encoding of its decoded prefix, cropped to
  the part that the new re-encoding shares.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from watermark.core.measurement import (
    MeasurementModel,
    cached_forward,
    entropy_from_logits,
    window_start,
)


class MMGenerationState:
    """Incremental MM state during generation (one per ``generate`` call)."""

    def __init__(self, mm: MeasurementModel, batch_size: int) -> None:
        self.mm = mm
        self.batch_size = batch_size

    def entropies(self, gen: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        """Gate entropies H_t for the next step, given the generated ids so far.

        Args:
            gen: Long tensor (B, t-1): generated ids of every row (no prompt).
            rows: Rows whose entropy is needed.

        Returns:
            Float32 tensor (B,); NaN for rows that were not computed.
        """
        raise NotImplementedError


class SameTokenizerState(MMGenerationState):
    """One batched KV cache; rows all have the same length (the generated part is never padded)."""

    def __init__(self, mm: MeasurementModel, batch_size: int) -> None:
        super().__init__(mm, batch_size)
        self.cache = None
        self.fed = 0
        self.segment = 0  # window start of the cached context

    @torch.inference_mode()
    def entropies(self, gen: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        out = torch.full((gen.shape[0],), float("nan"))
        if len(rows) == 0:
            return out
        s = window_start(gen.shape[1], self.mm.window)
        if s != self.segment:  # the window moved: restart the cache on the kept tokens
            self.cache, self.fed, self.segment = None, 0, s
        device = self.mm.device  # the ids stay on the device: no host round trip
        starts = torch.full((gen.shape[0], 1), self.mm.start_id, dtype=torch.long, device=device)
        ctx = torch.cat([starts, gen[:, s:].to(device, torch.long)], dim=1)  # (B, t - s)
        new = ctx[:, self.fed :]
        result, self.cache = cached_forward(self.mm.model, self.cache, input_ids=new)
        self.fed = ctx.shape[1]
        return entropy_from_logits(result.logits[:, -1]).cpu()


class CrossTokenizerState(MMGenerationState):
    """One KV cache per row over the MM re-encoding of that row's decoded prefix."""

    def __init__(self, mm: MeasurementModel, batch_size: int) -> None:
        super().__init__(mm, batch_size)
        self.ids: list[list[int]] = [[] for _ in range(batch_size)]
        self.caches: list[object] = [None] * batch_size
        self.last: list[float] = [float("nan")] * batch_size

    @torch.inference_mode()
    def _row(self, row: int, ctx: list[int]) -> float:
        cached = self.ids[row]
        common = 0
        for a, b in zip(cached, ctx):
            if a != b:
                break
            common += 1
        if common == len(ctx) == len(cached):
            return self.last[row]
        keep = min(common, len(ctx) - 1)  # feed at least one token to get the next-token logits
        if self.caches[row] is None or keep == 0:
            self.caches[row] = None
            keep = 0
        elif len(cached) > keep:
            self.caches[row].crop(-(len(cached) - keep))
        x = torch.tensor([ctx[keep:]], dtype=torch.long, device=self.mm.device)
        result, self.caches[row] = cached_forward(self.mm.model, self.caches[row], input_ids=x)
        self.ids[row] = list(ctx)
        self.last[row] = float(entropy_from_logits(result.logits[0, -1]))
        return self.last[row]

    def entropies(self, gen: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        out = torch.full((gen.shape[0],), float("nan"))
        for row in rows:
            out[row] = self._row(row, self.mm.context_ids(gen[row].tolist()))
        return out


class GivenEntropies(MMGenerationState):
    """The MM state of a decode loop that runs the MM in a stream of its own
    (:mod:`watermark.generate.loop`): ``values`` holds each row's entropy of the step."""

    def __init__(self, batch_size: int) -> None:
        self.values = torch.full((batch_size,), float("nan"))

    def entropies(self, gen: torch.Tensor, rows: Sequence[int]) -> torch.Tensor:
        out = torch.full_like(self.values, float("nan"))
        out[list(rows)] = self.values[list(rows)]
        return out


def start_state(mm: MeasurementModel, batch_size: int) -> MMGenerationState:
    """A fresh incremental state of ``mm`` for one ``generate`` call of ``batch_size`` rows."""
    if mm.same_tokenizer:
        return SameTokenizerState(mm, batch_size)
    return CrossTokenizerState(mm, batch_size)
