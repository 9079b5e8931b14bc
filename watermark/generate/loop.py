"""The one decode loop of ``Watermark.generate``: watermarked sampling step by step, outside
``model.generate``, with a plug (:class:`Rounds`) that says where a row ends and what a group
keeps.

Rows are decoded in *groups*; each group has its own processor
(:class:`~watermark.generate.processor.AdaptiveWatermarkLogitsProcessor` on the same core),
called on the group's ids (prompt, text kept so far, this round's tokens) exactly as
``model.generate`` would call it, so step counts, gates and green lists are those of the
reference paths. The loop runs the same steps for every plug:

* **token level** (:class:`TokenRounds`, :func:`decode_by_tokens`): one group holding every
  prompt's row, one round of ``max_new_tokens``; a row ends at an EOS. The measurement model's
  rows ride in the generator's forward (``fuse``, :class:`~watermark.generate.streams.Rows`).
* **sentence layer** (:class:`~watermark.generate.rounds.SentenceRounds`,
  :func:`~watermark.generate.rounds.decode_by_sentences`): one group per prompt of N candidate
  rows; a row ends at the token that ends a sentence, an EOS or the round's budget; the plug
  may resample rows while they write; when every row of a group has ended the plug keeps one,
  and all the group's rows continue from it (the kept row's cache,
  :meth:`~watermark.generate.streams.Rows.select`: no prefill); a group that is done leaves the
  batch. The measurement model runs in a stream of its own. On an accelerator the windows of
  all groups are embedded in one call a step (:func:`prefetch`).

After its end a row is fed the pad id, masked out of attention, and keeps the logits that
followed its last real token. Tokens are drawn from the whole batch at once with torch's global
RNG. Every limit is :class:`Limits`' (one budget) and every text is cut at its first EOS by
:func:`cut_at_eos` (one cut). The references are ``model.generate`` with the processor (token
level) and the sentence layer's own (:func:`~watermark.generate.per_prompt.sample_by_sentences`);
the tests check the loop against them token for token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from watermark.generate.streams import Rows, block_eos, draw

# generation-config fields that would add logits processors to ``model.generate``, at their
# quiet values: a model whose config sets any of them is not decoded here
QUIET = {
    "repetition_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "bad_words_ids": None,
    "forced_bos_token_id": None,
    "forced_eos_token_id": None,
    "suppress_tokens": None,
    "begin_suppress_tokens": None,
    "sequence_bias": None,
    "renormalize_logits": False,
}


def adds_no_processors(model: torch.nn.Module) -> bool:
    """Whether the model's ``generation_config`` leaves every field of :data:`QUIET` quiet, so
    ``model.generate`` would add no logits processor of its own."""
    config = getattr(model, "generation_config", None)
    return all(getattr(config, k, v) in (v, None) for k, v in QUIET.items())


def cut_at_eos(ids: Sequence[int], stop: Sequence[int]) -> list[int]:
    """``ids`` up to (excluding) the first of the ``stop`` ids: the one end-of-sequence cut."""
    stop = set(stop)
    return list(next((ids[:i] for i, t in enumerate(ids) if t in stop), ids))


@dataclass
class Limits:
    """A generation's token limits: in all, per round (a sentence), and before an EOS."""

    max_new_tokens: int
    max_round_tokens: int
    min_new_tokens: int = 0

    def budget(self, done: int) -> int:
        """Tokens a round may add after ``done`` kept tokens."""
        return min(self.max_round_tokens, self.max_new_tokens - done)

    def least(self, done: int) -> int:
        """Tokens a round must add, after ``done`` kept tokens, before an EOS may come."""
        return min(self.budget(done), max(0, self.min_new_tokens - done))


@dataclass
class Group:
    """Rows decoded under one processor: every prompt's row (token level) or one prompt's N
    candidates (sentence layer).

    Attributes:
        prompts: The prompt of each output (one per row, or the group's one prompt).
        prompt_rows: Per row, its prompt's ids (left-padded at the token level).
        processor: The group's processor.
    """

    prompts: list[str]
    prompt_rows: list[list[int]]
    processor: object
    chosen: list[int] = field(default_factory=list)  # the text kept so far (sentence layer)
    marked: list[int] = field(default_factory=list)  # its watermarked steps
    new: list[list[int]] = field(default_factory=list)  # this round's ids per row (pads after end)
    ended: list[bool] = field(default_factory=list)
    budget: int = 0
    done: bool = False
    _ids: torch.Tensor | None = None  # :meth:`ids`, kept from step to step within a round

    def start_round(self, limits: Limits) -> None:
        self._ids = None
        self.new = [[] for _ in self.prompt_rows]
        self.ended = [False] * len(self.prompt_rows)
        self.budget = limits.budget(len(self.chosen))
        self.processor.start_at(len(self.prompt_rows[0]))

    def ids(self, device: torch.device) -> torch.Tensor:
        """Long (rows, prompt + chosen + new): what ``model.generate`` would hand the
        processor (built once a round, then a column a step)."""
        if self._ids is None:
            rows = [p + self.chosen + n for p, n in zip(self.prompt_rows, self.new)]
            self._ids = torch.tensor(rows, dtype=torch.long, device=device)
        return self._ids

    def scores(self, logits: torch.Tensor, entropies, eos: torch.Tensor, limits: Limits):
        """The processor's logits (rows, V) for this group's rows of the step."""
        part = logits.clone()  # the logits kept for ended rows stay as they are
        if len(self.new[0]) < limits.least(len(self.chosen)):
            block_eos(part, eos)
        return self.processor.step(self.ids(part.device), part, entropies)

    def follow(self, source: list[int]) -> None:
        """Row j becomes a copy of row ``source[j]`` (its tokens, its end, its record)."""
        self.new = [list(self.new[i]) for i in source]
        self.ended = [self.ended[i] for i in source]
        self.processor.reorder(torch.tensor(source))
        if self._ids is not None:
            self._ids = self._ids[torch.tensor(source, device=self._ids.device)]

    def take(self, tokens: Sequence[int], pad: int, ends: object) -> list[bool]:
        """Appends this step's tokens (pads for ended rows); whether each was real."""
        real = [not e for e in self.ended]
        for j, token in enumerate(tokens):
            token = pad if self.ended[j] else token
            self.new[j].append(token)
            self.ended[j] = self.ended[j] or ends(token) or len(self.new[j]) >= self.budget
        if self._ids is not None:
            last = torch.tensor([row[-1] for row in self.new], device=self._ids.device)
            self._ids = torch.cat([self._ids, last[:, None]], dim=1)
        return real


class Rounds(Protocol):
    """What the decode loop asks of the way it generates (module docstring)."""

    def ends(self, token: int) -> bool:
        """Whether a row ends at ``token``."""

    def resample(self, live: list[Group]) -> dict[int, list[int]]:
        """After a step, rows copied within groups: per moved group (its index in ``live``),
        each row's source row (:meth:`Group.follow` done)."""

    def keep(self, g: Group, limits: Limits) -> int | None:
        """Ends the round of ``g``, whose rows have all ended: sets ``g.done``, or returns the
        row every row of ``g`` continues from."""

    def outputs(self, g: Group) -> list[tuple[str, list[int], list[int]]]:
        """``(prompt, ids up to the first EOS, watermarked steps among them)`` per output of
        the decoded group ``g``."""


class TokenRounds:
    """The token level: a row ends at an EOS, no row moves, and a group's one round is its
    text; each row is an output of its own."""

    def __init__(self, stop: Sequence[int]) -> None:
        self.stop = list(stop)

    def ends(self, token: int) -> bool:
        return token in self.stop

    def resample(self, live: list[Group]) -> dict[int, list[int]]:
        return {}

    def keep(self, g: Group, limits: Limits) -> None:
        g.done = True

    def outputs(self, g: Group) -> list[tuple[str, list[int], list[int]]]:
        found = []
        for row, prompt in enumerate(g.prompts):
            ids = cut_at_eos(g.new[row], self.stop)
            record = g.processor.record if g.processor.keep_record else None
            found.append((prompt, ids, record.steps_within(row, len(ids)) if record else []))
        return found


def decode_by_tokens(
    model: torch.nn.Module,
    prompts: Sequence[str],
    enc: dict[str, torch.Tensor],
    pad_id: int,
    processor: object,
    limits: Limits,
    stop: list[int],
    do_sample: bool,
) -> list[tuple[str, list[int], list[int]]]:
    """``(prompt, ids, watermarked steps)`` per prompt from the decode loop at the token level:
    one group of every prompt's row, the MM's rows in the generator's forward."""
    ids, mask = enc["input_ids"], enc["attention_mask"]
    group = Group(list(prompts), ids.tolist(), processor)
    rows = Rows(model, ids, mask, processor.core.measurement, fuse=True)
    rounds = TokenRounds(stop)
    decode(rows, [group], limits, stop, pad_id, rounds, do_sample=do_sample)
    return rounds.outputs(group)


@torch.inference_mode()
def decode(
    rows: Rows,
    groups: list[Group],
    limits: Limits,
    stop: Sequence[int],
    pad_id: int,
    rounds: Rounds,
    do_sample: bool = True,
) -> None:
    """Decodes ``groups`` (their rows in order, as ``rows`` holds them) until each is done
    (module docstring), with ``rounds`` plugged in; the caller seeds torch's RNG and reads
    ``rounds.outputs``."""
    device = rows.stream.mask.device
    eos = torch.tensor(list(stop), dtype=torch.long, device=device)
    live = list(groups)
    for g in live:
        g.start_round(limits)
    while live:
        logits, entropies = rows.step()
        prefetch(live)
        scores, at = [], 0
        for g in live:
            part = slice(at, at + len(g.new))
            scores.append(
                g.scores(logits[part], None if entropies is None else entropies[part], eos, limits)
            )
            at += len(g.new)
        tokens, real, at = draw(torch.cat(scores), do_sample).tolist(), [], 0
        for g in live:
            real += g.take(tokens[at : at + len(g.new)], pad_id, rounds.ends)
            at += len(g.new)
        fed = torch.tensor([row[-1] for g in live for row in g.new], device=device)
        rows.advance(fed, torch.tensor(real, device=device))
        live = next_round(live, rows, limits, rounds)


def prefetch(live: list[Group]) -> None:
    """In fixed shapes (an accelerator), the windows of every row embedded in one call for all
    groups (:meth:`~watermark.core.scoring.WatermarkCore.prefetch`), not one call per group's
    processor; the same bits. Rows that ended at a sentence's end are in it too: their
    processor still reads them. Nothing on a CPU or with one group."""
    core = live[0].processor.core
    if len(live) < 2 or not core.fixed_shapes:
        return
    texts = [g.chosen + row for g in live for row in g.new]
    core.prefetch([len(ids) + 1 for ids in texts], texts)


def next_round(live: list[Group], rows: Rows, limits: Limits, rounds: Rounds) -> list[Group]:
    """Ends the rounds whose rows have all ended (the plug ends the group or keeps a row, which
    every row of the group continues), drops the groups that are done; the groups still live."""
    moved = rounds.resample(live)
    index, at = [], 0
    for k, g in enumerate(live):
        width, best = len(g.new), None
        if all(g.ended):
            best = rounds.keep(g, limits)
            if not g.done:
                g.start_round(limits)
        if not g.done:  # every row continues the kept one (or its source); a finished one leaves
            source = moved.get(k, range(width))
            index += [at + (source[j] if best is None else best) for j in range(width)]
        at += width
    if index and index != list(range(at)):
        rows.select(index)
    return [g for g in live if not g.done]
