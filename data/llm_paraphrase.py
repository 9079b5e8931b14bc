"""Whole-text paraphrases by an instruction LLM (greedy), cached per text and resumable.

The model of the evaluation's ``llm_paraphrase`` attack (:mod:`evaluation.attacks`):
each text is rewritten at once, with an instruction that asks for different words and every
fact kept (:data:`INSTRUCTION`). The prompt goes through the tokenizer's chat template, or a plain
"instruction, text, 'Rewritten text:'" prompt when the tokenizer has none. Decoding is greedy:
sampling drops facts.

Each finished batch is appended to a JSONL cache, one record per text with the model's raw
output (``{"key", "model", "text", "output", "finished", "dtype", "batch"}``; ``batch`` is the
size of the batch it was decoded in), so an interrupted run resumes where it stopped and a rerun
decodes nothing. The raw output is cleaned and judged when read
(:func:`data.llm_paraphrase_cleaning.clean_text_paraphrase`), so a change of those rules needs
no new decoding. The key holds
the model name, a digest of the instruction and decoding settings, and a digest of the text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

import data.paraphraser_model  # noqa: F401  (registers the 1.5B paraphraser's short name)
from data.llm_paraphrase_cleaning import clean_text_paraphrase

logger = logging.getLogger(__name__)

INSTRUCTION = (
    "Rewrite the following text in different words and with a different sentence structure. "
    "Keep every fact exactly: all names, numbers, dates, places and events must stay the same. "
    "Do not add or leave out any information. Reply with the rewritten text only."
)
MAX_NEW_FACTOR = 1.5  # new tokens allowed: this times the text's tokens, plus 16
_END_OF_TURN = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<end_of_turn>", "</s>")


@dataclass(frozen=True)
class Task:
    """A whole-text rewrite: the instruction, the answer label of the plain prompt (for a
    tokenizer without a chat template), the judge of a raw output (``None``: rejected) and the
    decoding: greedy at temperature 0, else sampled at that temperature, seeded per batch from
    the batch's texts and ``seed`` (another seed: another draw, e.g. to retry a rejected
    rewrite)."""

    instruction: str
    label: str = "Rewritten text:"
    judge: Callable[[str, str], str | None] = clean_text_paraphrase
    temperature: float = 0.0
    seed: int = 0
    hint: Callable[[str], str] | None = None  # text-specific words after the instruction

    @property
    def prompt_id(self) -> str:
        """The digest of the instruction and the decoding settings, part of every cache key
        (seed 0 adds nothing, so the keys of earlier runs hold)."""
        decoding = "greedy" if self.temperature == 0 else f"t{self.temperature:g}"
        decoding += f"|s{self.seed}" if self.seed and self.temperature else ""
        settings = f"{self.instruction}|{decoding}|{MAX_NEW_FACTOR}"
        settings += f"|{self.hint.__name__}" if self.hint else ""
        return hashlib.sha256(settings.encode()).hexdigest()[:8]


PARAPHRASE = Task(INSTRUCTION)  # the llm_paraphrase attack's task
PROMPT_ID = PARAPHRASE.prompt_id


class TextParaphraser:
    """Batched greedy whole-text rewriting with an instruction-tuned causal LM.

    Args:
        model_name: Anything :func:`watermark.models.loaders.load_lm` accepts.
        dtype: Model dtype; ``None`` picks :func:`default_dtype`.
        task: What to ask for (default: the paraphrase).
    """

    def __init__(
        self, model_name: str, dtype: torch.dtype | None = None, task: Task = PARAPHRASE
    ) -> None:
        from watermark.models.devices import resolve_device
        from watermark.models.loaders import load_lm

        self.dtype, self.task = dtype or default_dtype(), task
        self.model, self.tokenizer = load_lm(model_name, dtype=self.dtype)
        self.model = self.model.to(resolve_device("auto"))
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.chat = bool(getattr(self.tokenizer, "chat_template", None))
        configured = self.model.generation_config.eos_token_id
        stops = set(configured if isinstance(configured, (list, tuple)) else [configured])
        vocab = self.tokenizer.get_vocab()
        stops |= {self.tokenizer.eos_token_id} | {vocab[t] for t in _END_OF_TURN if t in vocab}
        self.stop_ids = sorted(i for i in stops if isinstance(i, int))

    def prompt(self, text: str) -> str:
        """The prompt for one text: chat-formatted, or plain without a chat template."""
        hint = f" {self.task.hint(text)}" if self.task.hint else ""
        request = f"{self.task.instruction}{hint}\n\nText:\n{text}"
        if not self.chat:
            return f"{request}\n\n{self.task.label}\n"
        messages = [{"role": "user", "content": request}]
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )

    @torch.inference_mode()
    def generate(self, texts: Sequence[str]) -> list[tuple[str, bool]]:
        """``(raw output, finished)`` per text; ``finished`` is false when the output was cut
        off at the token limit instead of ending with an end-of-turn token."""
        longest = max(len(self.tokenizer(t, add_special_tokens=False).input_ids) for t in texts)
        batch = self.tokenizer(
            [self.prompt(t) for t in texts],
            return_tensors="pt",
            padding=True,
            add_special_tokens=not self.chat,  # a chat template writes its own special tokens
        ).to(self.model.device)
        sample = self.task.temperature > 0
        if sample:  # the same batch gives the same draws
            drawn = int(hashlib.sha256("".join(texts).encode()).hexdigest()[:8], 16)
            torch.manual_seed(drawn + self.task.seed)
        out = self.model.generate(
            **batch,
            do_sample=sample,
            **({"temperature": self.task.temperature, "top_k": 0, "top_p": 1.0} if sample else {}),
            max_new_tokens=int(MAX_NEW_FACTOR * longest) + 16,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=self.stop_ids,
        )
        new = out[:, batch.input_ids.shape[1] :].cpu()
        finished = torch.isin(new, torch.tensor(self.stop_ids)).any(dim=1).tolist()
        return list(zip(self.tokenizer.batch_decode(new, skip_special_tokens=True), finished))


def default_dtype() -> torch.dtype:
    """bfloat16 on a GPU and on a CPU with AVX512-BF16 (3.4x the float32 throughput of a
    decoding-size matrix product on this project's 2-core machine); float32 on other CPUs, where
    bfloat16 products run about 2.5x slower (measured on an AVX2 machine)."""
    if torch.cuda.is_available() or torch.cpu._is_avx512_bf16_supported():
        return torch.bfloat16
    return torch.float32


def cache_key(model_name: str, text: str, task: Task = PARAPHRASE) -> str:
    """The cache key of one text's rewrite by ``model_name`` under ``task``'s prompt."""
    return f"{model_name}|{task.prompt_id}|{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def read_cache(path: Path) -> dict[str, dict]:
    """``{key: record}`` of a paraphrase cache; a truncated last line is ignored."""
    records: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            records[record["key"]] = record
    return records


def judged(record: dict | None, text: str, task: Task = PARAPHRASE) -> str | None:
    """The accepted rewrite in a cache record of ``text``, or ``None``."""
    if not record or record["text"] != text or not record["finished"]:
        return None
    return task.judge(record["output"], text)


def run_text_paraphrases(
    texts: Sequence[str],
    cache_path: Path,
    model_name: str,
    batch_size: int = 8,
    dtype: torch.dtype | None = None,
    progress: bool = True,
    task: Task = PARAPHRASE,
) -> list[str | None]:
    """Rewrite each text whole (``task``: a paraphrase unless said), reusing and extending the
    JSONL cache.

    The model is loaded only if a text is missing from the cache. Texts are decoded in
    length-sorted batches (fewer pad tokens), each batch appended to the cache when done.

    Args:
        texts: The texts (empty ones are not sent and come back as ``None``).
        cache_path: The JSONL cache file (created if missing).
        model_name: The paraphrasing model (also part of every cache key).
        batch_size: Texts per ``generate`` call.
        dtype: The model's dtype (``None``: :func:`default_dtype`). It is written in each
            record, not in the key: a greedy paraphrase depends on it only through rounding.
        progress: Show a progress bar.
        task: The instruction and the judge (part of every cache key).

    Returns:
        The accepted rewrite of each text, ``None`` where it was rejected.
    """
    cache = read_cache(cache_path)
    wanted = {cache_key(model_name, t, task): t for t in texts if t.strip()}
    pending = sorted(
        ((k, t) for k, t in wanted.items() if cache.get(k, {}).get("text") != t),
        key=lambda item: (len(item[1]), item[0]),
    )
    logger.info(
        "LLM paraphrase (%s): %d of %d texts to decode", model_name, len(pending), len(wanted)
    )
    if pending:
        paraphraser = TextParaphraser(model_name, dtype=dtype, task=task)
        start = time.perf_counter()
        _decode(paraphraser, pending, cache, cache_path, model_name, batch_size, progress)
        elapsed = time.perf_counter() - start
        logger.info(
            "LLM paraphrase: %d texts in %.0f s (batch %d)", len(pending), elapsed, batch_size
        )
    keys = [cache_key(model_name, t, task) for t in texts]
    return [judged(cache.get(k), t, task) if t.strip() else None for k, t in zip(keys, texts)]


def _decode(
    paraphraser: TextParaphraser,
    pending: list[tuple[str, str]],
    cache: dict[str, dict],
    cache_path: Path,
    model_name: str,
    batch_size: int,
    progress: bool,
) -> None:
    """Rewrite the ``(key, text)`` pairs in batches, each batch's records added to ``cache``
    and appended to the file."""
    from watermark.models.devices import dtype_name

    cache_path.parent.mkdir(parents=True, exist_ok=True)
    dtype_text = dtype_name(paraphraser.dtype)
    with (
        cache_path.open("a", encoding="utf-8") as handle,
        tqdm(total=len(pending), desc="llm paraphrase", unit="text", disable=not progress) as bar,
    ):
        for b in range(0, len(pending), batch_size):
            batch = pending[b : b + batch_size]
            outputs = paraphraser.generate([t for _, t in batch])
            lines = []
            for (key, text), (output, finished) in zip(batch, outputs):
                cache[key] = {
                    "key": key,
                    "model": model_name,
                    "text": text,
                    "output": output,
                    "finished": bool(finished),
                    "dtype": dtype_text,
                    "batch": len(batch),
                }
                lines.append(json.dumps(cache[key], ensure_ascii=False) + "\n")
            handle.write("".join(lines))
            handle.flush()
            bar.update(len(batch))
