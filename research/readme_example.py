"""The README's example: one draw of its snippet, watermarked and unwatermarked, not chosen.

Runs the README's prompt with the shipped default, ``seed=0`` and 200 new tokens, once with the
watermark and once without (``watermark=False``, the same seed and sampling), and prints per text
the p-value, the 4-gram repetition (of the generated ids) and the text, as JSON lines. The README
quotes this output; rerun it whenever the default changes.

    python research/readme_example.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.metrics import ngram_repetition  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.models.loaders import load_lm  # noqa: E402

PROMPT = "Heavy rain flooded the north. Crews worked overnight."  # the README's


def main() -> None:
    model, tokenizer = load_lm("smollm2-135m")
    wm = Watermark.load(tokenizer=tokenizer, generator=model)
    for marked in (True, False):
        out = wm.generate([PROMPT], seed=0, max_new_tokens=200, watermark=marked)[0]
        found = wm.detect([out.text])[0]
        row = {
            "watermarked": marked,
            "p_value": found.p_value,
            "rep4": ngram_repetition(out.token_ids, 4),
        }
        print(json.dumps({**row, "text": out.text}))


if __name__ == "__main__":
    main()
