"""What the benchmarks run on: held-out prompts and human texts of a fixed token length, taken
from the embedded corpus the same way in every benchmark."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from evaluation.heldout import units
from watermark.core.text import decode_ids, encode_text

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "data/corpus/heldout.jsonl.gz"


def prompts(wm: object, n: int) -> list[str]:
    """``n`` held-out news prompts, cycled when there are fewer."""
    found = [u["prompt"] for u in units(HELDOUT, wm.tokenizer, "news", 0, 1)]
    return [found[i % len(found)] for i in range(n)]


def human_texts(tokenizer: object, n: int, tokens: int) -> list[str]:
    """``n`` distinct texts of ``tokens`` generator tokens: the corpus's training sentences, then
    its held-out passages, joined and cut."""
    texts, ids = [], []
    for name in ("sentences", "heldout"):
        with gzip.open(ROOT / f"data/corpus/{name}.jsonl.gz", "rt", encoding="utf-8") as f:
            for line in f:
                ids += encode_text(tokenizer, " " + json.loads(line)["text"])
                while len(ids) >= tokens and len(texts) < n:
                    texts.append(decode_ids(tokenizer, ids[:tokens]))
                    ids = ids[tokens:]
    if len(texts) < n:
        raise SystemExit(f"error: the corpus gives only {len(texts)} texts of {tokens} tokens")
    return texts
