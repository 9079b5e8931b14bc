"""The watermarking ``LogitsProcessor`` for ``model.generate`` and its second-filter guard.

Usage (:meth:`watermark.api.Watermark.generation_kwargs` builds these arguments)::

    model.generate(**inputs, **wm.generation_kwargs(max_new_tokens=200))
    # = logits_processor=[a fresh processor], generation_config=the model's with do_sample=True,
    #   temperature=1.0, top_k=0, top_p=1.0 and the other warpers (min-p, typical, ...) off

The processor returns the logits to sample from: the config's temperature, the strength rule
*and* the config's sampling filters (top-k, top-p, in the rule's order; see
:mod:`watermark.core.rules`). Transformers' own warpers (temperature, top-k, top-p, min-p, ... from
the call's arguments or the model's ``generation_config``, whose default top-k is 50) run *after*
custom processors, so any of them would change that distribution a second time, silently.

**A second filter is refused.** On the first step of each generation the processor finds the
``LogitsProcessorList`` that is calling it (a few frames up the stack: transformers calls every
processor from ``LogitsProcessorList.__call__``) and raises ``ValueError`` if that list holds a
sampling warper. That list is the only place where the call's arguments, the model's
``generation_config`` and the user's own processors have all been merged, so the check sees what
will really run, whatever its source. It raises rather than removing the warper: the warper is
what the caller asked for, and editing transformers' internal list behind their back would make
the output depend on a hidden change. The error comes before any token is sampled, and names
the watermark config's field that sets what the warper would (``scheme.temperature``, ...). A
processor called from elsewhere (:mod:`watermark.generate.loop`, a hand-written loop) has no
such list and nothing that adds warpers, so the check is skipped.

The processor works out where the generated part starts from its first call (the prompt length,
shared by all rows thanks to left padding) and detects a new ``generate`` call when the ids stop
extending the previous ones. Each row has its own gate and green list; rows that already produced
an EOS token are only filtered.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
from transformers import LogitsProcessor, LogitsProcessorList
from transformers.generation import logits_process

from watermark.base import UserError
from watermark.core.decisions import StepDecision
from watermark.core.mm_states import GivenEntropies, start_state
from watermark.core.scoring import WatermarkCore
from watermark.core.threads import one_thread
from watermark.generate.own_call import refusal

logger = logging.getLogger(__name__)

# transformers' sampling warpers (those present in the installed version); any one of them next
# to the watermark processor would filter its output a second time
WARPERS = tuple(
    getattr(logits_process, name)
    for name in (
        "TemperatureLogitsWarper",
        "TopKLogitsWarper",
        "TopPLogitsWarper",
        "TopHLogitsWarper",
        "MinPLogitsWarper",
        "TypicalLogitsWarper",
        "EpsilonLogitsWarper",
        "EtaLogitsWarper",
    )
    if hasattr(logits_process, name)
)
SETTINGS = ("temperature", "top_k", "top_p", "top_h", "min_p", "mass", "epsilon")
MAX_FRAMES = 8  # how far up the stack the calling LogitsProcessorList is looked for


@dataclass
class GenerationRecord:
    """What the processor did, per step (kept when ``record=True``).

    Attributes:
        prompt_length: Padded prompt length of the batch.
        decisions: One :class:`~watermark.core.scoring.StepDecision` per decoding step.
    """

    prompt_length: int = 0
    decisions: list[StepDecision] = field(default_factory=list)

    def watermarked_steps(self, row: int) -> list[int]:
        """1-based steps of ``row`` that were watermarked."""
        return [d.step for d in self.decisions if bool(d.gated[row])]

    def steps_within(self, row: int, length: int) -> list[int]:
        """:meth:`watermarked_steps` of ``row`` among its first ``length`` tokens."""
        return [s for s in self.watermarked_steps(row) if s <= length]


class AdaptiveWatermarkLogitsProcessor(LogitsProcessor):
    """Applies AWTI + SLSVE + AWTS to each decoding step.

    Args:
        core: The shared scoring core.
        eos_token_ids: Token ids that end a row (default: the generator tokenizer's EOS).
        record: Keep a :class:`GenerationRecord` of every step in ``self.record``.
    """

    applies_sampling_filters = True  # temperature, top-k and top-p are part of its output

    def __init__(
        self, core: WatermarkCore, eos_token_ids: Iterable[int] | None = None, record: bool = False
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
        self._prompt_length: int | None = None

    def reset(self) -> None:
        """Forgets the current generation (the next call starts a new one)."""
        self._prev = None
        self._state = None

    def start_at(self, prompt_length: int) -> None:
        """The next call starts a new generation whose prompt is the first ``prompt_length``
        ids: what follows them is text already generated (the sentence layer's candidates
        continue the sentences chosen so far)."""
        self.reset()
        self._prompt_length = int(prompt_length)

    def reorder(self, index: torch.Tensor) -> None:
        """Row i becomes row ``index[i]`` (same batch size) in what the processor keeps of the
        current generation: the ids of its last call and the record's gated rows. Only for a
        loop that gives the entropies (:meth:`step`), whose MM state is per step."""
        if self._prev is None:
            return
        if not isinstance(self._state, GivenEntropies):
            raise UserError("rows can only be reordered when the decode loop gives the entropies")
        self._prev = self._prev[index.to(self._prev.device)]
        for decision in self.record.decisions:
            decision.gated = decision.gated[index.to(decision.gated.device)]

    def _is_continuation(self, input_ids: torch.Tensor) -> bool:
        prev = self._prev
        return (
            prev is not None
            and input_ids.shape[0] == prev.shape[0]
            and input_ids.shape[1] == prev.shape[1] + 1
            and torch.equal(input_ids[:, :-1], prev)
        )

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """Watermarks and filters the next-token scores (``model.generate``'s call; the MM
        runs incrementally by itself): :meth:`step` without entropies."""
        return self.step(input_ids, scores)

    @torch.no_grad()
    def step(
        self,
        input_ids: torch.LongTensor,
        scores: torch.FloatTensor,
        entropies: torch.Tensor | None = None,
    ) -> torch.FloatTensor:
        """Watermarks and filters the next-token scores.

        Args:
            input_ids: Long (B, L): prompt (left padded) + generated ids so far.
            scores: Float (B, V): next-token logits; V must be the LM-head width of the config.
            entropies: Float (B,): the gate entropies of this step, where a decode loop computed
                them in its own MM stream (:mod:`watermark.generate.loop`); ``None``: the
                processor runs the MM itself. A generation gives them at every step or never.

        Returns:
            Float (B, V): the logits to sample from.
        """
        if scores.shape[-1] != self.core.vocab_size:
            raise UserError(
                f"logits have width {scores.shape[-1]} but the watermark's token map covers "
                f"V={self.core.vocab_size} (vocab_size of the config); use the generator the "
                "config was made for"
            )
        if not self._is_continuation(input_ids):
            check_no_second_filter(self, self.core.config)
            if entropies is not None:
                self._state = GivenEntropies(input_ids.shape[0])
            else:
                self._state = start_state(self.core.measurement, input_ids.shape[0])
            given, self._prompt_length = self._prompt_length, None
            self.record = GenerationRecord(prompt_length=given or int(input_ids.shape[1]))
        if entropies is not None:
            self._state.values = entropies.float().cpu()
        self._prev = input_ids.detach().clone()
        gen = input_ids[:, self.record.prompt_length :]
        active = torch.ones(gen.shape[0], dtype=torch.bool)
        if self.eos_token_ids and gen.shape[1] > 0:
            eos = torch.tensor(self.eos_token_ids, device=gen.device)
            active = ~torch.isin(gen, eos).any(dim=1).cpu()
        with one_thread(self.core.device.type == "cpu"):  # the key at every thread count
            decision = self.core.generation_step(gen, active, self._state, self.eos_token_ids)
            if self.keep_record:
                self.record.decisions.append(decision)
            return self.core.sampling_logits(scores, decision)


def calling_list(processor: LogitsProcessor) -> LogitsProcessorList | None:
    """The ``LogitsProcessorList`` whose ``__call__`` is running ``processor``, if any."""
    frame = sys._getframe(1)
    try:
        for _ in range(MAX_FRAMES):
            if frame is None:
                return None
            owner = frame.f_locals.get("self")
            if isinstance(owner, LogitsProcessorList) and any(p is processor for p in owner):
                return owner
            frame = frame.f_back
        return None
    finally:
        del frame  # no reference cycle through the stack


def second_filters(processors: Iterable[LogitsProcessor]) -> dict[str, object]:
    """The settings of the sampling warpers among ``processors``, ``{"top_k": 50, ...}`` (a
    neutral temperature or a min-p of 0 is none)."""
    found = {}
    for proc in processors:
        if not isinstance(proc, WARPERS):
            continue
        if getattr(proc, "temperature", None) == 1.0 or getattr(proc, "min_p", None) == 0.0:
            continue  # filters nothing
        values = {k: v for k, v in vars(proc).items() if k in SETTINGS}
        found.update(values or {type(proc).__name__: "on"})
    return found


def check_no_second_filter(processor: LogitsProcessor, config: object) -> None:
    """Raises ``ValueError`` if the list calling ``processor`` also holds a sampling warper: one
    line that names the watermark config's field to set instead
    (:func:`watermark.generate.own_call.refusal`)."""
    chain = calling_list(processor)
    if chain is None:
        logger.debug("watermark processor not called from a LogitsProcessorList: no check")
        return
    found = second_filters(p for p in chain if p is not processor)
    if found:
        raise UserError(
            "a second sampling filter runs with the watermark processor (from the generate "
            f"call or the model's generation_config, whose default top_k is 50): "
            f"{refusal(found, config)}; call model.generate(**inputs, **wm.generation_kwargs())"
        )
