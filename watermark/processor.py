"""The watermarking ``LogitsProcessor`` for ``model.generate``.

Usage::

    proc = wm.logits_processor()
    model.generate(**inputs, logits_processor=LogitsProcessorList([proc]), do_sample=True,
                   top_k=0, top_p=1.0)

The processor returns the logits to sample from: the strength rule *and* the config's sampling
filters (top-k, top-p, in the rule's order; see :mod:`watermark.rules`). Switch off the
built-in warpers (``top_k=0, top_p=1.0``; transformers' default top-k of 50 is harmless when the
config's top-k is at most 50) so nothing truncates the distribution a second time;
:func:`watermark.generation.generate` does this.

The processor works out where the generated part starts from its first call (the prompt length,
shared by all rows thanks to left padding) and detects a new ``generate`` call when the ids stop
extending the previous ones. Each row has its own gate and green list; rows that already produced
an EOS token are only filtered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
from transformers import LogitsProcessor

from watermark.core import StepDecision, WatermarkCore

logger = logging.getLogger(__name__)


@dataclass
class GenerationRecord:
    """What the processor did, per step (kept when ``record=True``).

    Attributes:
        prompt_length: Padded prompt length of the batch.
        decisions: One :class:`~watermark.core.StepDecision` per decoding step.
    """

    prompt_length: int = 0
    decisions: list[StepDecision] = field(default_factory=list)

    def watermarked_steps(self, row: int) -> list[int]:
        """1-based steps of ``row`` that were watermarked."""
        return [d.step for d in self.decisions if bool(d.gated[row])]


class AdaptiveWatermarkLogitsProcessor(LogitsProcessor):
    """Applies AWTI + SLSVE + AWTS to each decoding step.

    Args:
        core: The shared scoring core.
        eos_token_ids: Token ids that end a row (default: the generator tokenizer's EOS).
        record: Keep a :class:`GenerationRecord` of every step in ``self.record``.
    """

    applies_sampling_filters = True  # top-k / top-p are part of its output

    def __init__(
        self,
        core: WatermarkCore,
        eos_token_ids: Iterable[int] | None = None,
        record: bool = False,
    ) -> None:
        self.core = core
        if eos_token_ids is None:
            eos = core.tokenizer.eos_token_id
            eos_token_ids = [] if eos is None else [eos]
        self.eos_token_ids = sorted({int(i) for i in eos_token_ids})
        self.keep_record = record
        self.record = GenerationRecord()
        self._prev: torch.Tensor | None = None
        self._state = None
        self.state_factory = None  # batch size -> MM state; None: the MM's own (see fused.py)

    def reset(self) -> None:
        """Forgets the current generation (the next call starts a new one)."""
        self._prev = None
        self._state = None

    def _is_continuation(self, input_ids: torch.Tensor) -> bool:
        prev = self._prev
        return (
            prev is not None
            and input_ids.shape[0] == prev.shape[0]
            and input_ids.shape[1] == prev.shape[1] + 1
            and torch.equal(input_ids[:, :-1], prev)
        )

    @torch.no_grad()
    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Watermarks and filters the next-token scores.

        Args:
            input_ids: Long (B, L): prompt (left padded) + generated ids so far.
            scores: Float (B, V): next-token logits; V must be the LM-head width of the config.

        Returns:
            Float (B, V): the logits to sample from.
        """
        if scores.shape[-1] != self.core.vocab_size:
            raise ValueError(
                f"logits have width {scores.shape[-1]} but the watermark's token map covers "
                f"V={self.core.vocab_size} (vocab_size of the config); use the generator the "
                "config was made for"
            )
        if not self._is_continuation(input_ids):
            factory = self.state_factory or self.core.measurement.start
            self._state = factory(input_ids.shape[0])
            self.record = GenerationRecord(prompt_length=int(input_ids.shape[1]))
        self._prev = input_ids.detach().clone()
        gen = input_ids[:, self.record.prompt_length :]
        active = torch.ones(gen.shape[0], dtype=torch.bool)
        if self.eos_token_ids and gen.shape[1] > 0:
            eos = torch.tensor(self.eos_token_ids, device=gen.device)
            active = ~torch.isin(gen, eos).any(dim=1).cpu()
        decision = self.core.generation_step(gen, active, self._state, self.eos_token_ids)
        if self.keep_record:
            self.record.decisions.append(decision)
        return self.core.sampling_logits(scores, decision)
