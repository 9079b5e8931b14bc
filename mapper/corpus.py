"""Reading the training corpus: gzip (or plain) JSONL records with a sentence and its variants.

Each record holds ``id``, ``doc``, ``source``, ``split`` (``train`` / ``val``), ``text`` and one
list of variants per :data:`AUGMENTATION_KINDS`. The repository builds its corpus with
``python -m data.build`` (``data/corpus/sentences.jsonl.gz``); any file of the same schema trains
the mapper with ``python -m mapper.train fit --data.corpus FILE``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

AUGMENTATION_KINDS = ("paraphrase", "shortened", "expanded", "synonym")


def load_corpus(path: str | Path) -> list[dict]:
    """Read a gzip (or plain) JSONL corpus into a list of records.

    Args:
        path: The corpus file.

    Returns:
        The records, in file order.

    Raises:
        FileNotFoundError: If the file is missing (the fix: ``python -m data.build`` in a clone).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus {path} not found: build it with `python -m data.build`")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
