"""Candidate pools for the sentence mapper: N next sentences sampled after a prefix.

The sentence layer keeps the best of N candidates of each next sentence, and those candidates
share their prefix's topic, so a key space in which they all lean the same way buys the choice
little. A pool is what the layer sees: a prefix (the opening sentences of a document, two to six
of them) and N continuations sampled by the generator (SmolLM2-135M, the shipped generator) with
the shipped sampling settings, each cut at the token that ends its first sentence
(:func:`watermark.core.sentences.ends_sentence`). No watermark is needed: the pool is about how
the candidates spread, not about which one a key keeps.

Pools are sampled in batches of prefixes, N rows each, seeded per batch, and appended to a JSONL
cache as each batch finishes, so an interrupted build resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from pathlib import Path

import torch
from tqdm import tqdm

from data.sentence_rewrites import read_jsonl_gz
from data.sources import split_sentences
from watermark.core.growing_cache import GrowingCache
from watermark.core.rules.logits import filter_logits
from watermark.core.sentences import ends_sentence, sentence_spans
from watermark.core.text import decode_ids

GENERATOR = "smollm2-135m"
SAMPLING = {"temperature": 1.02, "top_k": 50, "top_p": 0.9}  # the shipped config's
MAX_SENTENCE_TOKENS = 64  # as the layer cuts a candidate that has not ended
PREFIX_SENTENCES = (2, 3, 4, 5, 6)


def document_sentences(corpus_dir: Path, split: str) -> dict[str, list[str]]:
    """The sentences of each ``split`` document in reading order: the training corpus's for
    train and val, the held-out records' (cut by :func:`data.sources.split_sentences`)."""
    if split == "heldout":
        out = {}
        for r in read_jsonl_gz(corpus_dir / "heldout.jsonl.gz"):
            out[r["doc"]] = [s for p in r["text"].split("\n") for s in split_sentences(p)]
        return out
    by_doc: dict[str, list[str]] = {}
    for r in read_jsonl_gz(corpus_dir / "sentences.jsonl.gz"):
        if r["split"] == split:
            by_doc.setdefault(r["doc"], []).append(r["text"])
    return by_doc


def prefixes(corpus_dir: Path, split: str, count: int, seed: int = 0) -> list[dict]:
    """``count`` prefixes ``{"id", "doc", "prefix", "next"}``: a document's opening 2-6
    sentences (drawn per document) and the human sentence that follows, documents in a seeded
    order, cycling through them until ``count`` are found."""
    docs = document_sentences(corpus_dir, split)
    order = sorted(docs)
    random.Random(f"{seed}:pools:{split}").shuffle(order)
    out: list[dict] = []
    for turn in range(len(PREFIX_SENTENCES)):
        for doc in order:
            sentences = docs[doc]
            k = PREFIX_SENTENCES[(turn + int(hashlib.sha1(doc.encode()).hexdigest(), 16)) % 5]
            if len(sentences) > k and len(out) < count:
                prefix = " ".join(sentences[:k])
                out.append({"id": f"{doc}:{k}", "doc": doc, "prefix": prefix, "next": sentences[k]})
    return out


class FirstSentence:
    """Stopping criterion: a row ends at the token that ends a sentence or at an EOS."""

    def __init__(self, tokenizer: object, stop: Sequence[int]) -> None:
        self.tokenizer, self.stop, self.known = tokenizer, set(stop), {}

    def ends(self, token: int) -> bool:
        if token not in self.known:
            piece = decode_ids(self.tokenizer, [token])
            self.known[token] = token in self.stop or ends_sentence(piece)
        return self.known[token]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs) -> torch.Tensor:
        ends = [self.ends(t) for t in input_ids[:, -1].tolist()]
        return torch.tensor(ends, dtype=torch.bool, device=input_ids.device)


def first_sentence(text: str) -> str | None:
    """The first complete sentence of a continuation, or ``None`` (no end mark reached)."""
    spans = sentence_spans(text)
    if not spans or not spans[0][2]:
        return None
    a, b, _ = spans[0]
    return text[a:b]


def draw(logits: torch.Tensor) -> torch.Tensor:
    """Next tokens (B,) of logits (B, V) under :data:`SAMPLING` (the layer's sampling without
    a watermark: temperature, then top-k and top-p), with torch's global RNG."""
    t, k, p = SAMPLING["temperature"], SAMPLING["top_k"], SAMPLING["top_p"]
    scores = filter_logits(logits / t, k, p)
    return torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1)


@torch.inference_mode()
def sample_pools(model, tokenizer, batch: Sequence[dict], candidates: int, seed: int) -> list[list]:
    """Per prefix, ``candidates`` sampled first sentences (``None`` where a row did not end
    one within :data:`MAX_SENTENCE_TOKENS`). Each prefix is read once and its KV cache copied
    to its rows; a row leaves the batch once it has ended (in groups, as each drop copies the
    cache)."""
    tokenizer.padding_side = "left"
    enc = tokenizer([p["prefix"] for p in batch], return_tensors="pt", padding=True)
    ids, mask = enc["input_ids"].to(model.device), enc["attention_mask"].to(model.device)
    cache = GrowingCache()  # a step writes into room: no copy of the whole cache
    out = model(input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                past_key_values=cache, use_cache=True, logits_to_keep=1)  # fmt: skip
    logits = out.logits[:, -1].float().repeat_interleave(candidates, 0)
    cache.batch_repeat_interleave(candidates)
    mask = mask.repeat_interleave(candidates, 0)
    stop = [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []
    ends, live, done = FirstSentence(tokenizer, stop), list(range(len(logits))), set()
    new: list[list[int]] = [[] for _ in live]
    digest = hashlib.sha256("".join(p["id"] for p in batch).encode()).hexdigest()
    torch.manual_seed(int(digest[:8], 16) + seed)
    for _ in range(MAX_SENTENCE_TOKENS):
        tokens = draw(logits)
        for row, token in zip(live, tokens.tolist()):
            if row not in done:  # an ended row still in the batch draws for nothing
                new[row].append(token)
                done.update([row] if ends.ends(token) else [])
        going = [i for i, row in enumerate(live) if row not in done]
        if not going:
            break
        if len(going) <= 0.75 * len(live):  # leave the batch: a copy of the cache
            index = torch.tensor(going, device=mask.device)
            cache.batch_select_indices(index)
            live, tokens, mask = [live[i] for i in going], tokens[index], mask[index]
        mask = torch.cat([mask, mask.new_ones(len(mask), 1)], dim=1)
        out = model(input_ids=tokens[:, None], attention_mask=mask,
                    position_ids=mask.sum(-1, keepdim=True) - 1, past_key_values=cache,
                    use_cache=True)  # fmt: skip
        logits = out.logits[:, -1].float()
    texts = [tokenizer.decode(row, skip_special_tokens=True) for row in new]
    rows = [first_sentence(t) for t in texts]
    return [rows[i * candidates : (i + 1) * candidates] for i in range(len(batch))]


def build_pools(
    wanted: Sequence[dict],
    cache: Path,
    candidates: int = 32,
    batch_size: int = 8,
    seed: int = 0,
    progress: bool = True,
) -> list[dict]:
    """The pool of every prefix in ``wanted`` (``{**prefix, "candidates": [...]}``), sampling
    only those missing from the JSONL ``cache`` (appended batch by batch)."""
    done = {}
    if cache.is_file():
        for line in cache.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by an interruption
            done[(record["id"], record["prefix"])] = record
    todo = [p for p in wanted if (p["id"], p["prefix"]) not in done]
    if todo:
        from watermark.core.models import load_lm

        model, tokenizer = load_lm(GENERATOR)
        cache.parent.mkdir(parents=True, exist_ok=True)
        with cache.open("a", encoding="utf-8") as handle:
            for b in tqdm(range(0, len(todo), batch_size), desc="pools", disable=not progress):
                batch = todo[b : b + batch_size]
                for p, pool in zip(batch, sample_pools(model, tokenizer, batch, candidates, seed)):
                    done[(p["id"], p["prefix"])] = record = {**p, "candidates": pool}
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                handle.flush()
    return [done[(p["id"], p["prefix"])] for p in wanted]
