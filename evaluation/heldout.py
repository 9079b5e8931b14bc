"""Evaluation data from the held-out corpus: prompts and the human text that follows them.

A document gives one unit: prompt = its first two sentences, human text = the next
``max_tokens`` generator tokens of the rest (kept only if there are at least ``min_tokens``).
The held-out documents were never used to train the mapper.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

from data.sources import split_sentences
from watermark.core.text import decode_ids, encode_text


def units(
    path: str | Path,
    tokenizer: object,
    sources: Sequence[str] | str | None,
    min_tokens: int,
    max_tokens: int,
) -> list[dict]:
    """``{"id", "source", "prompt", "human"}`` units of the corpus at ``path``, in file order.

    Args:
        path: JSONL.gz corpus with ``doc``, ``source`` and ``text`` fields.
        tokenizer: The generator tokenizer (measures the human text).
        sources: Sources to keep (a name, a list, or ``None`` for all).
        min_tokens: Skip documents whose text after the prompt is shorter than this.
        max_tokens: Human text = at most this many tokens after the prompt.
    """
    if isinstance(sources, str):
        sources = [sources]
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"held-out corpus {path} not found (build it with `make corpus`)")
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if sources and rec["source"] not in sources:
                continue
            sents = split_sentences(rec["text"].replace("\n", " "))
            if len(sents) < 4:
                continue
            ids = encode_text(tokenizer, " " + " ".join(sents[2:]))[:max_tokens]
            if len(ids) >= min_tokens:
                out.append(
                    {
                        "id": rec["doc"],
                        "source": rec["source"],
                        "prompt": " ".join(sents[:2]),
                        "human": decode_ids(tokenizer, ids),
                    }
                )
    return out
