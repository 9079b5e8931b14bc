"""The README's example: one draw of its snippet, watermarked and unwatermarked, not chosen.

Runs the README's prompt with the shipped default, ``seed=0`` and 200 new tokens, once with the
watermark and once without (``watermark=False``, the same seed and sampling), and prints per text
the p-value, the 4-gram repetition (of the generated ids) and the text, as JSON lines: what the
README's snippet prints, and its unwatermarked counterpart.

    python -m research.readme_example
"""

from __future__ import annotations

import argparse
import json

from evaluation.metrics import ngram_repetition
from research.common import Load, load_with_generator

PROMPT = "Heavy rain flooded the north. Crews worked overnight."  # the README's


def main(argv: list[str] | None = None, load: Load = load_with_generator) -> None:
    """Prints the two JSON lines (``load``: how the shipped default's watermark is loaded,
    with its generator)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, default=200, help="new tokens (the README's: 200)")
    args = parser.parse_args(argv)
    wm = load(None)
    for marked in (True, False):
        out = wm.generate([PROMPT], seed=0, max_new_tokens=args.tokens, watermark=marked)[0]
        found = wm.detect([out.text])[0]
        row = {
            "watermarked": marked,
            "p_value": found.p_value,
            "rep4": ngram_repetition(out.token_ids, 4),
        }
        print(json.dumps({**row, "text": out.text}))


if __name__ == "__main__":
    main()
