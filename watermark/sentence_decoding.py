"""The sentence layer's candidates of every prompt in one decode loop (the fast path of
:func:`~watermark.sentence_generation.generate_by_sentences`).

The reference path runs one ``model.generate`` call per prompt and sentence. Here all prompts'
N candidate rows share one KV cache and one forward per step, and each prompt moves on by itself:
* a prompt's N rows are a *group*; each group has its own processor
  (:class:`~watermark.processor.AdaptiveWatermarkLogitsProcessor` on the same core), called on
  that group's ids (prompt + chosen text + this round's tokens) exactly as ``model.generate``
  would call it, so step counts, gates and green lists are those of the reference path;
* a row ends at the token that ends a sentence, an EOS, or the round's token budget; after its
  end it is fed the pad id, masked out of attention (position ids count only real tokens), and
  it keeps the logits that followed its last real token;
* when every row of a group has ended, the layer keeps the best candidate and the group's rows
  all take the kept row's cache and mask (a reorder of the cache's batch, copying only those
  rows: :class:`~watermark.core.growing_cache.GrowingCache`), so the next round continues from
  it with no prefill; a group that is done leaves the batch.

Tokens are drawn from the whole batch at once with torch's global RNG: with one prompt this is
the reference path's draw, token for token; with several, the draws are shared out differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from watermark.core.growing_cache import GrowingCache
from watermark.core.measurement import entropy_from_logits
from watermark.core.text import decode_ids
from watermark.fused import GivenEntropies, draw, last_logits
from watermark.generation import Generation, encode_prompts
from watermark.processor import AdaptiveWatermarkLogitsProcessor
from watermark.sentence_layer import SentenceLayer


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
    given: GivenEntropies = field(default_factory=lambda: GivenEntropies(0))  # the MM stream's

    def start_round(self, rows: int, max_new_tokens: int, max_sentence_tokens: int) -> None:
        self.new, self.ended = [[] for _ in range(rows)], [False] * rows
        self.budget = min(max_sentence_tokens, max_new_tokens - len(self.chosen))
        self.processor.start_at(len(self.prompt_ids))

    def ids(self, device: torch.device) -> torch.Tensor:
        """Long (N, prompt + chosen + new): what ``model.generate`` would hand the processor."""
        head = self.prompt_ids + self.chosen
        return torch.tensor([head + row for row in self.new], dtype=torch.long, device=device)


class Stream:
    """One model's KV cache over the batch's rows: each step feeds one id per row, masked out of
    attention where it is a pad; a row fed a pad keeps what ``reduce`` made of the logits after
    its last real id."""

    def __init__(self, model: torch.nn.Module, feed: torch.Tensor, mask: torch.Tensor, reduce):
        self.model, self.feed, self.mask, self.reduce = model, feed, mask, reduce
        self.cache, self.last = GrowingCache(), None

    def step(self) -> torch.Tensor:
        """(B, ...) values after each row's last real id."""
        logits, self.cache = last_logits(self.model, self.cache, self.feed, self.mask)
        fresh = self.reduce(logits)
        fed = self.mask[:, -1].bool().view(-1, *[1] * (fresh.dim() - 1))
        self.last = fresh if self.last is None else torch.where(fed, fresh, self.last)
        return self.last

    def advance(self, ids: torch.Tensor, real: torch.Tensor) -> None:
        """Ids (B,) to feed next, ``real`` (B,) false where one is a pad."""
        self.feed = ids[:, None]
        self.mask = torch.cat([self.mask, real.long()[:, None]], dim=1)

    def select(self, index: torch.Tensor) -> None:
        """Row i becomes row ``index[i]`` (copies and drops rows)."""
        self.cache.reorder_cache(index)
        self.feed, self.mask, self.last = self.feed[index], self.mask[index], self.last[index]


@torch.inference_mode()
def decode_by_sentences(
    model: torch.nn.Module,
    tokenizer: object,
    prompts: Sequence[str],
    processor: AdaptiveWatermarkLogitsProcessor,
    layer: SentenceLayer,
    ends: object,
    stop: Sequence[int],
    max_new_tokens: int,
    max_sentence_tokens: int,
    min_new_tokens: int = 0,
) -> list[Generation]:
    """One :class:`~watermark.generation.Generation` per prompt (module docstring); ``ends`` is
    the :class:`~watermark.sentence_generation.SentenceEnds` of the tokenizer, ``stop`` the EOS
    ids. The caller seeds torch's RNG."""
    device, n = next(model.parameters()).device, layer.candidates
    enc, _ = encode_prompts(tokenizer, prompts, device)
    ids, mask = enc["input_ids"], enc["attention_mask"]  # left-padded, one row per prompt
    groups = [
        Group(p, row[keep.bool()].tolist(), fresh_processor(processor))
        for p, row, keep in zip(prompts, ids, mask)
    ]
    for g in groups:
        g.start_round(n, max_new_tokens, max_sentence_tokens)
    live = list(groups)
    ids, mask = ids.repeat_interleave(n, dim=0), mask.repeat_interleave(n, dim=0)  # N rows each
    streams = [Stream(model, ids, mask, lambda logits: logits)]
    mm = processor.core.measurement
    if mm.same_tokenizer and max_new_tokens < mm.window:  # the MM's own stream: [start] + S
        starts = torch.full((len(ids), 1), mm.start_id, device=mm.device)
        streams.append(Stream(mm.model, starts, torch.ones_like(starts), entropy_from_logits))
        for g in groups:  # each round's processor state reads the stream's entropies
            g.processor.state_factory = lambda size, given=g.given: given
    eos = torch.tensor(list(stop), dtype=torch.long, device=device)
    while live:
        logits, *entropies = (stream.step() for stream in streams)
        scores = []
        for k, g in enumerate(live):
            rows = slice(k * n, (k + 1) * n)
            part = logits[rows].clone()  # the kept logits stay as they are
            least = min(g.budget, max(0, min_new_tokens - len(g.chosen)))
            if len(g.new[0]) < least and len(eos):
                part[:, eos] = float("-inf")
            if entropies:
                g.given.values = entropies[0][rows].float().cpu()
            scores.append(g.processor(g.ids(device), part))
        tokens = draw(torch.cat(scores), do_sample=True).tolist()
        real = []
        for k, g in enumerate(live):
            for j in range(n):
                token = ends.pad_id if g.ended[j] else tokens[k * n + j]
                real.append(not g.ended[j])
                g.new[j].append(token)
                g.ended[j] = g.ended[j] or ends.ends(token) or len(g.new[j]) >= g.budget
        fed = torch.tensor([g.new[j][-1] for g in live for j in range(n)], device=device)
        for stream in streams:
            stream.advance(
                fed.to(stream.mask.device), torch.tensor(real, device=stream.mask.device)
            )
        index = []
        for k, g in enumerate(live):
            best = (
                finish_round(g, layer, ends, tokenizer, stop, max_new_tokens)
                if all(g.ended)
                else None
            )
            if best is not None and not g.done:
                g.start_round(n, max_new_tokens, max_sentence_tokens)
            if not g.done:  # every row continues the kept one; a finished prompt leaves
                index += [k * n + (j if best is None else best) for j in range(n)]
        live = [g for g in live if not g.done]
        if live and index != list(range(len(fed))):
            for stream in streams:
                stream.select(torch.tensor(index, device=stream.mask.device))
    return [result(g, tokenizer, stop) for g in groups]


def fresh_processor(
    processor: AdaptiveWatermarkLogitsProcessor,
) -> AdaptiveWatermarkLogitsProcessor:
    """A processor like ``processor`` (same core, EOS ids and recording) with its own state."""
    return AdaptiveWatermarkLogitsProcessor(
        processor.core, processor.eos_token_ids, record=processor.keep_record
    )


def finish_round(
    g: Group,
    layer: SentenceLayer,
    ends: object,
    tokenizer: object,
    stop: Sequence[int],
    max_new_tokens: int,
) -> int:
    """Keeps the best candidate of ``g``'s ended round; returns its row."""
    candidates = [ends.cut(row) for row in g.new]
    (best,) = layer.choose([[decode_ids(tokenizer, g.chosen + c) for c in candidates]])
    before, kept = len(g.chosen), candidates[best]
    if g.processor.keep_record:
        steps = g.processor.record.watermarked_steps(best)
        g.marked += [s for s in steps if s <= before + len(kept)]
    g.chosen += kept
    g.done = not kept or kept[-1] in stop or len(g.chosen) >= max_new_tokens
    return best


def result(g: Group, tokenizer: object, stop: Sequence[int]) -> Generation:
    """The kept text of ``g`` up to its first EOS."""
    cut = next((j for j, t in enumerate(g.chosen) if t in stop), len(g.chosen))
    ids = g.chosen[:cut]
    return Generation(g.prompt, decode_ids(tokenizer, ids), ids, [s for s in g.marked if s <= cut])
