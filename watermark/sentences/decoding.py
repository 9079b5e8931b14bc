"""The sentence layer's candidates of every prompt in one decode loop (the fast path of
:func:`~watermark.sentences.generation.generate_by_sentences`).

The reference path runs one ``model.generate`` call per prompt and sentence. Here all prompts'
N candidate rows share the token-level decode path (:class:`~watermark.generate.decoding.Rows`:
one KV cache, the MM's stream, one forward per step) and each prompt moves on by itself:
* a prompt's N rows are a *group*; each group has its own processor
  (:class:`~watermark.generate.processor.AdaptiveWatermarkLogitsProcessor` on the same core),
  called on that group's ids (prompt + chosen text + this round's tokens) exactly as
  ``model.generate`` would call it, so step counts, gates and green lists are those of the
  reference path;
* a row ends at the token that ends a sentence, an EOS, or the round's token budget; after its
  end it is fed the pad id, masked out of attention, and keeps the logits that followed its
  last real token;
* every ``resample_every`` tokens the rows still writing are ranked by their partial sentence
  and the worse half take copies of the better (:func:`resample`);
* when every row of a group has ended, the layer keeps the best candidate and the group's rows
  all take the kept row's cache (:meth:`~watermark.generate.decoding.Rows.select`), so the next
  round continues from it with no prefill; a group that is done leaves the batch.

Tokens are drawn from the whole batch at once with torch's global RNG: with one prompt this is
the reference path's draw, token for token; with several, the draws are shared out differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from watermark.base import UserError
from watermark.core.text import decode_ids
from watermark.generate.decoding import Rows, block_eos, draw
from watermark.generate.generation import Generation, encode_prompts
from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.spans import CLOSERS


@dataclass
class Limits:
    """A generation's token limits: in all, per sentence, and before an EOS may come."""

    max_new_tokens: int
    max_sentence_tokens: int
    min_new_tokens: int = 0


@dataclass
class Group:
    """One prompt's candidate rows during the loop."""

    prompt: str
    prompt_ids: list[int]
    processor: AdaptiveWatermarkLogitsProcessor
    chosen: list[int] = field(default_factory=list)
    marked: list[int] = field(default_factory=list)  # watermarked steps of the kept text
    new: list[list[int]] = field(default_factory=list)  # this round's ids per row (pads after end)
    ended: list[bool] = field(default_factory=list)
    budget: int = 0
    done: bool = False

    def start_round(self, rows: int, limits: Limits) -> None:
        self.new, self.ended = [[] for _ in range(rows)], [False] * rows
        self.budget = min(limits.max_sentence_tokens, limits.max_new_tokens - len(self.chosen))
        self.processor.start_at(len(self.prompt_ids))

    def ids(self, device: torch.device) -> torch.Tensor:
        """Long (N, prompt + chosen + new): what ``model.generate`` would hand the processor."""
        head = self.prompt_ids + self.chosen
        return torch.tensor([head + row for row in self.new], dtype=torch.long, device=device)

    def scores(self, logits: torch.Tensor, entropies, eos: torch.Tensor, limits: Limits):
        """The processor's logits (N, V) for this group's rows of the step."""
        part = logits.clone()  # the logits kept for ended rows stay as they are
        least = min(self.budget, max(0, limits.min_new_tokens - len(self.chosen)))
        if len(self.new[0]) < least:
            block_eos(part, eos)
        return self.processor.step(self.ids(part.device), part, entropies)

    def follow(self, source: list[int]) -> None:
        """Row j becomes a copy of row ``source[j]`` (its tokens, its end, its record)."""
        self.new = [list(self.new[i]) for i in source]
        self.ended = [self.ended[i] for i in source]
        self.processor.reorder(torch.tensor(source))

    def take(self, tokens: Sequence[int], pad: int, ends: object) -> list[bool]:
        """Appends this step's tokens (pads for ended rows); whether each was real."""
        real = [not e for e in self.ended]
        for j, token in enumerate(tokens):
            token = pad if self.ended[j] else token
            self.new[j].append(token)
            self.ended[j] = self.ended[j] or ends.ends(token) or len(self.new[j]) >= self.budget
        return real


@torch.inference_mode()
def decode_by_sentences(
    model: torch.nn.Module,
    tokenizer: object,
    prompts: Sequence[str],
    processor: AdaptiveWatermarkLogitsProcessor,
    layer: SentenceLayer,
    ends: object,
    stop: Sequence[int],
    limits: Limits,
) -> list[Generation]:
    """One :class:`~watermark.generate.generation.Generation` per prompt (module docstring);
    ``ends`` is the :class:`~watermark.sentences.generation.SentenceEnds` of the tokenizer,
    ``stop`` the EOS ids. The caller seeds torch's RNG."""
    device, n = next(model.parameters()).device, layer.candidates
    enc, _ = encode_prompts(tokenizer, prompts, device)
    ids, mask = enc["input_ids"], enc["attention_mask"]  # left-padded, one row per prompt
    groups = [
        Group(p, row[keep.bool()].tolist(), fresh_processor(processor))
        for p, row, keep in zip(prompts, ids, mask)
    ]
    for g in groups:
        g.start_round(n, limits)
    mm = processor.core.measurement
    own_stream = mm.same_tokenizer and limits.max_new_tokens < mm.window
    if layer.resample_every and not own_stream:
        raise UserError(
            "sentences.resample_every needs a measurement model with the generator's tokenizer "
            f"and max_new_tokens below its window ({mm.window})"
        )
    rows = Rows(
        model, ids.repeat_interleave(n, 0), mask.repeat_interleave(n, 0), mm if own_stream else None
    )
    eos, live = torch.tensor(list(stop), dtype=torch.long, device=device), list(groups)
    while live:
        logits, entropies = rows.step()
        scores = [
            g.scores(
                logits[k * n : (k + 1) * n],
                None if entropies is None else entropies[k * n : (k + 1) * n],
                eos,
                limits,
            )
            for k, g in enumerate(live)
        ]
        tokens = draw(torch.cat(scores)).tolist()
        real = [
            r
            for k, g in enumerate(live)
            for r in g.take(tokens[k * n : (k + 1) * n], ends.pad_id, ends)
        ]
        fed = torch.tensor([g.new[j][-1] for g in live for j in range(n)], device=device)
        rows.advance(fed, torch.tensor(real, device=device))
        live = next_round(live, rows, layer, ends, tokenizer, stop, limits)
    return [result(g, tokenizer, stop) for g in groups]


def next_round(
    live: list[Group], rows: Rows, layer: SentenceLayer, ends, tokenizer, stop, limits: Limits
) -> list[Group]:
    """Ends the rounds whose rows have all ended (the best candidate kept, every row of the
    group continuing it), drops the groups that are done; the groups still live."""
    n, index = layer.candidates, []
    moved = resample(live, layer, tokenizer)
    for k, g in enumerate(live):
        best = finish_round(g, layer, ends, tokenizer, stop, limits) if all(g.ended) else None
        if best is not None and not g.done:
            g.start_round(n, limits)
        if not g.done:  # every row continues the kept one (or its source); a finished one leaves
            source = moved.get(k, range(n))
            index += [k * n + (source[j] if best is None else best) for j in range(n)]
    if index and index != list(range(len(live) * n)):
        rows.select(index)
    return [g for g in live if not g.done]


def resample(live: list[Group], layer: SentenceLayer, tokenizer) -> dict[int, list[int]]:
    """Every ``layer.resample_every`` tokens of a round, in each group with two or more rows
    still writing: those rows ranked by the score of their partial sentence, the i-th worst
    takes a copy of the i-th best, for the lower half (ties keep the sampled order; rows that
    have ended stay as they are). Returns, per moved group, each row's source row."""
    every, due = layer.resample_every, []
    if not every:
        return {}
    for k, g in enumerate(live):
        writing = [j for j, ended in enumerate(g.ended) if not ended]
        if len(writing) > 1 and len(g.new[0]) % every == 0:
            due.append((k, writing))
    if not due:
        return {}
    texts = [[decode_ids(tokenizer, live[k].chosen + live[k].new[j]) for j in w] for k, w in due]
    moved = {}
    for (k, writing), ranked in zip(due, layer.rank(texts)):
        order = [writing[i] for i in ranked]
        source = list(range(len(live[k].new)))
        for i in range(len(order) // 2):
            source[order[-1 - i]] = order[i]
        moved[k] = source
        live[k].follow(source)
    return moved


def fresh_processor(
    processor: AdaptiveWatermarkLogitsProcessor,
) -> AdaptiveWatermarkLogitsProcessor:
    """A processor like ``processor`` (same core, EOS ids and recording) with its own state."""
    return AdaptiveWatermarkLogitsProcessor(
        processor.core, processor.eos_token_ids, record=processor.keep_record
    )


def finish_round(
    g: Group, layer: SentenceLayer, ends, tokenizer, stop: Sequence[int], limits: Limits
) -> int:
    """Keeps the candidate of ``g``'s ended round that :func:`kept_rows` picks; returns its row."""
    candidates = [ends.cut(row) for row in g.new]
    (best,) = kept_rows(layer, tokenizer, [g.chosen], [candidates], stop)
    before, kept = len(g.chosen), candidates[best]
    if g.processor.keep_record:
        steps = g.processor.record.watermarked_steps(best)
        g.marked += [s for s in steps if s <= before + len(kept)]
    g.chosen += kept
    g.done = not kept or kept[-1] in stop or len(g.chosen) >= limits.max_new_tokens
    return best


def kept_rows(
    layer: SentenceLayer,
    tokenizer: object,
    chosen: Sequence[list[int]],
    rounds: Sequence[list[list[int]]],
    stop: Sequence[int],
) -> list[int]:
    """Per prompt, the row its round keeps, given its kept text and its candidates' ids.

    A *bare* candidate ends the text at an EOS and adds no sentence (only whitespace or
    closers): the layer would score the sentence before it, a previous round's winner, so it
    would win about half the rounds it is drawn in, not 1 in N, and texts would end early. A
    bare candidate is never ranked: the text ends when row 0 is bare (rows are exchangeable
    samples, and one that ends at its first token is never resampled, so this is as often as
    unwatermarked text ends there), else the best-ranked of the other rows is kept."""
    rows, texts = [], []
    for head, candidates in zip(chosen, rounds):
        bare = [
            bool(c) and c[-1] in stop and not decode_ids(tokenizer, c).strip(CLOSERS)
            for c in candidates
        ]
        rows.append([] if bare[0] else [j for j, b in enumerate(bare) if not b])
        texts.append([decode_ids(tokenizer, head + candidates[j]) for j in rows[-1]])
    ranked = iter(layer.rank([t for t in texts if t]))
    return [r[next(ranked)[0]] if r else 0 for r in rows]


def result(g: Group, tokenizer: object, stop: Sequence[int]) -> Generation:
    """The kept text of ``g`` up to its first EOS."""
    cut = next((j for j, t in enumerate(g.chosen) if t in stop), len(g.chosen))
    ids = g.chosen[:cut]
    return Generation(g.prompt, decode_ids(tokenizer, ids), ids, [s for s in g.marked if s <= cut])
