"""LLM paraphrases of corpus sentences with SmolLM2-135M-Instruct, cached and resumable.

Sentences are paraphrased in batches with the model's chat template, greedy decoding (or
sampling at a temperature: the evaluation's second rewrite, issue 89) and left padding. Each
finished batch is appended to a JSONL cache (one ``{"id", "text", "paraphrase", "mode"}`` object
per sentence, ``paraphrase`` is ``null`` when the output was rejected), so an interrupted run
resumes where it stopped. Batches are formed from a fixed, length-sorted order (a sampled batch
seeded by its own sentences), so a resumed run decodes exactly the same batches as an
uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from tqdm import tqdm

from data.paraphrase_cleaning import clean_paraphrase

logger = logging.getLogger(__name__)

PROMPT = (
    "Rewrite this sentence using different words and a different structure, keeping the meaning:\n"
    "{sentence}"
)


class _FirstTokenBan:
    """Logits processor that forbids, per row, one token at the first generated position."""

    def __init__(self, banned: Sequence[int], prompt_length: int) -> None:
        self.banned = torch.tensor(list(banned))
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[1] != self.prompt_length:
            return scores
        scores = scores.clone()
        scores[torch.arange(len(self.banned)), self.banned] = float("-inf")
        return scores


class Paraphraser:
    """Batched greedy paraphrasing with a chat-tuned causal LM.

    Generation stops at the end of the first line (every token containing a newline is a stop
    token), since only the first line is kept; this roughly halves the decoding time.

    Args:
        model_name: Anything :func:`watermark.models.loaders.load_lm` accepts.
        max_new_factor: ``max_new_tokens`` is this factor times the longest sentence's token count.
        dtype: Model dtype; bfloat16 is ~1.6x faster than float32 on CPUs with AVX512-BF16 and
            gives near-identical greedy outputs.
    """

    def __init__(
        self,
        model_name: str = "smollm2-135m",
        max_new_factor: float = 1.3,
        dtype: torch.dtype = torch.bfloat16,
    ) -> None:
        from watermark.models.loaders import load_lm

        self.model, self.tokenizer = load_lm(model_name, dtype=dtype)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_new_factor = max_new_factor
        vocab = self.tokenizer.get_vocab()
        self.stop_ids = sorted(
            i for t, i in vocab.items() if "\n" in self.tokenizer.convert_tokens_to_string([t])
        )
        if self.tokenizer.eos_token_id is not None:
            self.stop_ids.append(self.tokenizer.eos_token_id)

    def prompt(self, sentence: str) -> str:
        """The chat-formatted prompt for one sentence."""
        messages = [{"role": "user", "content": PROMPT.format(sentence=sentence)}]
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )

    @torch.inference_mode()
    def generate(
        self, sentences: Sequence[str], ban_first: bool = False, temperature: float = 0.0
    ) -> list[str]:
        """Return the raw decoded outputs for a batch of sentences.

        Args:
            sentences: The sentences to paraphrase.
            ban_first: Forbid each output to start with its sentence's first token. The small model
                often copies its input verbatim; this forces it to restructure the sentence.
            temperature: 0: greedy; else sampled at this temperature from the whole
                distribution (no top-k or top-p), with torch's global RNG.
        """
        from transformers import LogitsProcessorList

        longest = max(len(self.tokenizer(s).input_ids) for s in sentences)
        batch = self.tokenizer(
            [self.prompt(s) for s in sentences], return_tensors="pt", padding=True
        )
        processors = LogitsProcessorList()
        if ban_first:
            first = [self.tokenizer(s, add_special_tokens=False).input_ids[0] for s in sentences]
            processors.append(_FirstTokenBan(first, batch.input_ids.shape[1]))
        out = self.model.generate(
            **batch,
            do_sample=temperature > 0,
            **({"temperature": temperature, "top_k": 0, "top_p": 1.0} if temperature else {}),
            max_new_tokens=int(self.max_new_factor * longest) + 4,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=self.stop_ids,
            logits_processor=processors,
        )
        new = out[:, batch.input_ids.shape[1] :]
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)

    def paraphrase(
        self, sentences: Sequence[str], ban_first: bool = False, temperature: float = 0.0
    ) -> list[str | None]:
        """Paraphrase a batch; ``None`` where the output was rejected."""
        outputs = self.generate(sentences, ban_first=ban_first, temperature=temperature)
        return [clean_paraphrase(o, s) for o, s in zip(outputs, sentences)]


PLAIN, BAN_FIRST = "plain", "ban-first"


def sampled(temperature: float, seed: int) -> str:
    """The cache mode of a sampled pass: ``sampled-t1-s0``."""
    return f"sampled-t{temperature:g}-s{seed}"


def passes_of(temperature: float, seed: int) -> tuple[str, str]:
    """The two passes of a run: greedy, then greedy with the first token banned for what the
    first rejected; sampled, then sampled again with the next seed."""
    if not temperature:
        return PLAIN, BAN_FIRST
    return sampled(temperature, seed), sampled(temperature, seed + 1)


def mode_temperature(mode: str) -> tuple[float, bool]:
    """A pass mode's sampling temperature (0: greedy) and whether it bans the first token."""
    if mode.startswith("sampled-t"):
        return float(mode.split("-")[1][1:]), False
    return 0.0, mode == BAN_FIRST


def read_cache(path: Path) -> dict[tuple[str, str], dict]:
    """Read a paraphrase cache into ``{(id, mode): record}``; a truncated last line is ignored.

    ``mode`` is ``"plain"`` (first pass) or ``"ban-first"`` (retry of rejected sentences with the
    first token banned); records without a mode are first-pass records.
    """
    records: dict[tuple[str, str], dict] = {}
    if not path.is_file():
        return records
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            records[(record["id"], record.get("mode", PLAIN))] = record
    return records


def cached_result(
    cache: dict[tuple[str, str], dict],
    item_id: str,
    text: str,
    modes: Sequence[str] = (PLAIN, BAN_FIRST),
) -> str | None:
    """The accepted paraphrase of one sentence from the cache (the first of ``modes`` first),
    re-checked."""
    for mode in modes:
        record = cache.get((item_id, mode))
        if record and record["text"] == text and record["paraphrase"]:
            cleaned = clean_paraphrase(record["paraphrase"], text)
            if cleaned:
                return cleaned
    return None


def _run_pass(
    pending: list[tuple[str, str]],
    mode: str,
    cache: dict[tuple[str, str], dict],
    cache_path: Path,
    paraphraser: Paraphraser,
    batch_size: int,
    progress: bool = True,
) -> None:
    """Paraphrase ``pending`` in length-sorted batches, appending each batch to the cache."""
    # Whole batches are written at once, so a resumed run re-forms the same remaining batches.
    order = sorted(pending, key=lambda it: (len(it[1]), it[0]))
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    start = time.perf_counter()
    with (
        cache_path.open("a", encoding="utf-8") as handle,
        tqdm(
            total=len(order), desc=f"paraphrase ({mode})", unit="sent", disable=not progress
        ) as bar,
    ):
        temperature, ban_first = mode_temperature(mode)
        for batch in batches:
            if temperature:  # each batch seeded by its own sentences, so a resumed run draws alike
                key = hashlib.sha256((mode + "".join(i for i, _ in batch)).encode()).digest()
                torch.manual_seed(int.from_bytes(key[:4], "big"))
            texts = [t for _, t in batch]
            results = paraphraser.paraphrase(texts, ban_first=ban_first, temperature=temperature)
            lines = []
            for (i, t), p in zip(batch, results):
                cache[(i, mode)] = {"id": i, "text": t, "paraphrase": p, "mode": mode}
                lines.append(json.dumps(cache[(i, mode)], ensure_ascii=False) + "\n")
            handle.write("".join(lines))
            handle.flush()
            bar.update(len(batch))
    elapsed = time.perf_counter() - start
    logger.info(
        "Pass %s: %d sentences in %.0f s (%.2f sentences/s at batch %d)",
        mode,
        len(order),
        elapsed,
        len(order) / max(elapsed, 1e-9),
        batch_size,
    )


def run_paraphrases(
    items: Sequence[tuple[str, str]],
    cache_path: Path,
    batch_size: int = 32,
    model_name: str = "smollm2-135m",
    dtype: torch.dtype = torch.bfloat16,
    retry: bool = True,
    progress: bool = True,
    temperature: float = 0.0,
    seed: int = 0,
    paraphraser: Paraphraser | None = None,
) -> dict[str, str | None]:
    """Paraphrase ``(id, text)`` items, reusing and extending the JSONL cache.

    A first pass uses plain greedy decoding. Sentences whose output is rejected (mostly verbatim
    copies) get a second pass with their first token banned, when ``retry`` is set. With a
    ``temperature``, both passes sample instead (the second with ``seed`` + 1), each batch
    seeded by ``seed`` and its sentences' ids.

    Args:
        items: Sentences to paraphrase, as ``(id, text)`` pairs.
        cache_path: The JSONL cache file (created if missing).
        batch_size: Sentences per ``generate`` call.
        model_name: The paraphrasing model.
        dtype: The paraphrasing model's dtype.
        retry: Run the second pass for rejected sentences.
        progress: Show a progress bar.
        temperature: 0: greedy; else the sampling temperature.
        seed: The sampled passes' seed.
        paraphraser: The model to run (default: ``model_name`` in ``dtype``, loaded if needed).

    Returns:
        ``{id: paraphrase or None}`` for every item.
    """
    modes = passes_of(temperature, seed)
    cache = read_cache(cache_path)
    cache_path.parent.mkdir(parents=True, exist_ok=True)

    def fresh(item: tuple[str, str], mode: str) -> bool:
        record = cache.get((item[0], mode))
        return record is None or record["text"] != item[1]

    for mode in modes if retry else modes[:1]:
        pending = [it for it in items if fresh(it, mode)]
        if mode == modes[1]:
            pending = [it for it in pending if cached_result(cache, *it, modes) is None]
        logger.info("Paraphrase pass %s: %d of %d sentences to run", mode, len(pending), len(items))
        if pending:
            paraphraser = paraphraser or Paraphraser(model_name, dtype=dtype)
            _run_pass(pending, mode, cache, cache_path, paraphraser, batch_size, progress)
    return {i: cached_result(cache, i, t, modes) for i, t in items}
