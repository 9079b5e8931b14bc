"""LLM paraphrases of corpus sentences with SmolLM2-135M-Instruct, cached and resumable.

Sentences are paraphrased in batches with the model's chat template, greedy decoding and left
padding. Each finished batch is appended to a JSONL cache (one ``{"id", "text", "paraphrase"}``
object per sentence, ``paraphrase`` is ``null`` when the output was rejected), so an interrupted
run resumes where it stopped. Batches are formed from a fixed, length-sorted order, so a resumed
run decodes exactly the same batches as an uninterrupted one.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from tqdm import tqdm

logger = logging.getLogger(__name__)

PROMPT = (
    "Rewrite this sentence using different words and a different structure, keeping the meaning:\n"
    "{sentence}"
)
_PREFIX = re.compile(
    r"^(?:here(?:'s| is) (?:the |a |my )?(?:paraphrased? )?"
    r"(?:sentence|version|paraphrase)?\s*[:\-]?|"
    r"paraphrased? (?:sentence|version)?\s*:|paraphrase\s*:|sentence\s*:|answer\s*:)\s*",
    re.IGNORECASE,
)


_META = re.compile(
    r"\b(?:sentences?|paraphras\w*|rephras\w*|rewr[io]t\w*|reword\w*|original text)\b",
    re.IGNORECASE,
)


def word_key(text: str) -> str:
    """``text`` lower-cased with every run of other characters than letters and digits one space
    (two texts with the same key say the same words)."""
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def clean_paraphrase(output: str, source: str) -> str | None:
    """Post-process a raw model output; return ``None`` if it is not a usable paraphrase.

    Keeps the first non-empty line, strips "Here is ..."-style prefixes and wrapping quotes, and
    rejects outputs that are empty, identical to the source (ignoring case and punctuation), far
    off in length (outside 0.5-1.8 times the source's word count), or talk about the task
    ("The sentence can be rephrased as:") instead of doing it. The function is idempotent on its
    accepted outputs, so cached paraphrases can be re-checked with it.

    Args:
        output: The decoded generated text.
        source: The sentence that was paraphrased.

    Returns:
        The cleaned paraphrase, or ``None``.
    """
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
    if not lines:
        return None
    text = lines[0]
    if _PREFIX.match(text) and len(_PREFIX.sub("", text, count=1).strip()) < 3 and len(lines) > 1:
        text = lines[1]  # "Here is the paraphrase:" on its own line
    text = _PREFIX.sub("", text, count=1).strip()
    if len(text) >= 2 and text[0] in "\"'\u201c" and text[-1] in "\"'\u201d":
        text = text[1:-1].strip()
    elif text[:1] in '"\u201c' and text.count(text[0]) == 1:
        text = text[1:].strip()
    if not text or word_key(text) == word_key(source) or text.endswith(":"):
        return None
    if _META.search(text) and not _META.search(source):
        return None
    ratio = len(text.split()) / max(1, len(source.split()))
    if not 0.5 <= ratio <= 1.8:
        return None
    return text


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
    def generate(self, sentences: Sequence[str], ban_first: bool = False) -> list[str]:
        """Return the raw decoded outputs for a batch of sentences.

        Args:
            sentences: The sentences to paraphrase.
            ban_first: Forbid each output to start with its sentence's first token. The small model
                often copies its input verbatim; this forces it to restructure the sentence.
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
            do_sample=False,
            max_new_tokens=int(self.max_new_factor * longest) + 4,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=self.stop_ids,
            logits_processor=processors,
        )
        new = out[:, batch.input_ids.shape[1] :]
        return self.tokenizer.batch_decode(new, skip_special_tokens=True)

    def paraphrase(self, sentences: Sequence[str], ban_first: bool = False) -> list[str | None]:
        """Paraphrase a batch; ``None`` where the output was rejected."""
        outputs = self.generate(sentences, ban_first=ban_first)
        return [clean_paraphrase(o, s) for o, s in zip(outputs, sentences)]


PLAIN, BAN_FIRST = "plain", "ban-first"


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


def cached_result(cache: dict[tuple[str, str], dict], item_id: str, text: str) -> str | None:
    """The accepted paraphrase of one sentence from the cache (plain pass first), re-checked."""
    for mode in (PLAIN, BAN_FIRST):
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
        for batch in batches:
            results = paraphraser.paraphrase([t for _, t in batch], ban_first=mode == BAN_FIRST)
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
) -> dict[str, str | None]:
    """Paraphrase ``(id, text)`` items, reusing and extending the JSONL cache.

    A first pass uses plain greedy decoding. Sentences whose output is rejected (mostly verbatim
    copies) get a second pass with their first token banned, when ``retry`` is set.

    Args:
        items: Sentences to paraphrase, as ``(id, text)`` pairs.
        cache_path: The JSONL cache file (created if missing).
        batch_size: Sentences per ``generate`` call.
        model_name: The paraphrasing model.
        dtype: The paraphrasing model's dtype.
        retry: Run the second pass for rejected sentences.
        progress: Show a progress bar.

    Returns:
        ``{id: paraphrase or None}`` for every item.
    """
    cache = read_cache(cache_path)
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    paraphraser: Paraphraser | None = None

    def fresh(item: tuple[str, str], mode: str) -> bool:
        record = cache.get((item[0], mode))
        return record is None or record["text"] != item[1]

    for mode in (PLAIN, BAN_FIRST) if retry else (PLAIN,):
        pending = [it for it in items if fresh(it, mode)]
        if mode == BAN_FIRST:
            pending = [it for it in pending if cached_result(cache, *it) is None]
        logger.info("Paraphrase pass %s: %d of %d sentences to run", mode, len(pending), len(items))
        if pending:
            paraphraser = paraphraser or Paraphraser(model_name, dtype=dtype)
            _run_pass(pending, mode, cache, cache_path, paraphraser, batch_size, progress)
    return {i: cached_result(cache, i, t) for i, t in items}
