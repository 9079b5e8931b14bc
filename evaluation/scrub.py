"""How many detector queries it takes to scrub our watermark: the oracle attack on an open service.

The detection service holds the secret key. A client that may query it freely can edit a
watermarked text until the detector stops flagging it. Two greedy attackers measure the cost; both
edit words (a close Moby-thesaurus synonym, or a deletion where there is none) and count queries
until the verdict's p-value (the windowed one where the config tests windows) reaches
``target`` (the verdict flips at the default threshold):

* ``blind``: sees only the p-value. Each round it queries ``proposals`` candidate edits of
  ``words_per_edit`` random words in one batch and keeps the best one if it raised the p-value.
* ``guided``: also sees the per-token flags (``per_token`` in ``/v1/detect``, the page's
  highlighting). Each round it edits the words of the tested tokens that are green in most of
  their lists, then queries once.

``python -m evaluation.scrub --texts 8`` generates that many watermarked texts from
held-out prompts with the shipped config and prints one JSON line per text and attacker, then a
summary (docs/service.md, "Exposing the detection service", quotes it).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Callable, Sequence

DetectFn = Callable[[list[str]], list]  # texts -> DetectionResult per text


def _edit(words: list[str], at: Sequence[int], thesaurus, rng: random.Random) -> list[str]:
    """``words`` with each word at ``at`` swapped for a close synonym, or deleted if it has none."""
    out = list(words)
    for i in sorted(set(at), reverse=True):
        core = out[i].strip(".,;:!?\"'()")
        options = thesaurus.replacements(core) if core else []
        if options:
            out[i] = out[i].replace(core, rng.choice(options), 1)
        else:
            del out[i]
    return out


def green_words(result, text: str, lists: int) -> list[int]:
    """Indices of the words of ``text`` (split on spaces) that hold a tested token green in more
    than half of its ``lists`` green lists, most green first."""
    starts, pos = [], 0
    for word in text.split(" "):
        starts.append(pos)
        pos += len(word) + 1
    decoded = "".join(result.tokens)
    shift = len(decoded) - len(decoded.lstrip()) - (len(text) - len(text.lstrip()))
    found: dict[int, int] = {}
    pos = 0
    for piece, tested, bits in zip(result.tokens, result.tested, result.green_bits):
        if tested and 2 * bits > lists:
            char = max(0, pos - shift + len(piece) - len(piece.lstrip()))
            word = max(0, next((n for n, s in enumerate(starts) if s > char), len(starts)) - 1)
            found[word] = max(found.get(word, 0), bits)
        pos += len(piece)
    return sorted(found, key=lambda w: -found[w])


def scrub(
    text: str,
    detect: DetectFn,
    thesaurus,
    guided: bool,
    lists: int = 1,
    target: float = 0.01,
    max_queries: int = 300,
    proposals: int = 4,
    words_per_edit: int = 3,
    guided_words: int = 12,
    seed: int = 0,
) -> dict:
    """Edits ``text`` until its p-value reaches ``target``; returns the queries it took."""
    rng = random.Random(seed)
    words = text.split(" ")
    best, queries = detect([text])[0], 1
    while best.verdict_p_value < target and queries < max_queries:
        current = " ".join(words)
        if guided:
            at = green_words(best, current, lists)[:guided_words] or rng.sample(
                range(len(words)), min(words_per_edit, len(words))
            )
            candidates = [_edit(words, at, thesaurus, rng)]
        else:
            candidates = [
                _edit(
                    words,
                    rng.sample(range(len(words)), min(words_per_edit, len(words))),
                    thesaurus,
                    rng,
                )
                for _ in range(proposals)
            ]
        found = detect([" ".join(c) for c in candidates])
        queries += len(candidates)
        top = max(range(len(found)), key=lambda n: found[n].verdict_p_value)
        if guided or found[top].verdict_p_value > best.verdict_p_value:
            words, best = candidates[top], found[top]
    original = set(text.split())
    kept = len(original & set(words)) / max(1, len(original))
    return {
        "attacker": "guided" if guided else "blind",
        "queries": queries,
        "scrubbed": best.verdict_p_value >= target,
        "p_value": best.verdict_p_value,
        "words_kept": round(kept, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="watermark config (default: the shipped one)")
    parser.add_argument("--texts", type=int, default=8)
    parser.add_argument("--max-queries", type=int, default=300)
    parser.add_argument("--target", type=float, default=0.01)
    args = parser.parse_args(argv)

    import torch

    from data.synonyms import Thesaurus
    from evaluation.heldout import units
    from watermark.api import Watermark
    from watermark.models.loaders import load_lm

    torch.manual_seed(0)
    model, tokenizer = load_lm("smollm2-135m")
    wm = Watermark.load(args.config, tokenizer=tokenizer, generator=model)
    prompts = [
        u["prompt"]
        for u in units("data/corpus/heldout.jsonl.gz", tokenizer, ["news", "wiki"], 150, 200)[
            -args.texts :
        ]
    ]
    texts = [g.text for g in wm.generate(prompts, max_new_tokens=200, seed=0)]
    thesaurus = Thesaurus.load()
    rows = []
    for n, text in enumerate(texts):
        for guided in (False, True):
            row = {
                "text": n,
                **scrub(
                    text,
                    wm.detect,
                    thesaurus,
                    guided,
                    lists=wm.config.green_lists,
                    target=args.target,
                    max_queries=args.max_queries,
                    seed=n,
                ),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    for attacker in ("blind", "guided"):
        mine = [r for r in rows if r["attacker"] == attacker]
        done = [r["queries"] for r in mine if r["scrubbed"]]
        print(
            json.dumps(
                {
                    "attacker": attacker,
                    "texts": len(mine),
                    "scrubbed": len(done),
                    "queries_median": statistics.median(done) if done else None,
                    "queries_max": max(done) if done else None,
                    "words_kept_median": statistics.median(r["words_kept"] for r in mine),
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
