"""A pilot of the meaning-keeping rewrites on a few texts: how many words they keep, and how
much meaning, before the full curves run (configs/evaluation/rewrites.yaml).

Takes the first ``--texts`` texts of a JSONL file (``text`` field, e.g. the loops run's
watermarked texts), rewrites each by the round trip through French (also followed by the
paraphrase) and by the forced rewrite, greedy and at temperature 0.7 (:mod:`data.llm_rewrites`,
cached in ``--cache``), and prints per rewrite the median share of
words kept (as the evaluation's curves count it), the median MPNet similarity to the original,
the share of texts keeping at least 80% of their facts (:mod:`evaluation.meaning`), and the share
rejected; then three examples of each.

    python research/rewrite_pilot.py --input runs/loops/kept-heldout.jsonl --texts 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from data import llm_rewrites  # noqa: E402
from data.llm_paraphrase import run_text_paraphrases  # noqa: E402
from evaluation.meaning import cosines, keeps_facts  # noqa: E402
from evaluation.run import words_kept  # noqa: E402


def figures(originals: list[str], rewrites: list[str | None], embedder: str) -> dict:
    """Median words kept and similarity over the accepted rewrites, facts kept, rejections."""
    pairs = [(o, r) for o, r in zip(originals, rewrites) if r]
    kept = [words_kept([o], [r]) for o, r in pairs]
    sims = cosines(embedder, [o for o, _ in pairs], [r for _, r in pairs])
    return {
        "accepted": len(pairs),
        "rejected": len(originals) - len(pairs),
        "words_kept_median": statistics.median(kept) if kept else None,
        "similarity_median": statistics.median(sims) if sims else None,
        "facts_kept_share": sum(keeps_facts(o, r) for o, r in pairs) / max(1, len(pairs)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--texts", type=int, default=10)
    parser.add_argument("--cache", default="runs/rewrites/llm_paraphrases.jsonl")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--embedder", default="mpnet")
    parser.add_argument(
        "--rewrites",
        default="round_trip,forced,forced_t0.7,round_trip+paraphrase",
        help="comma-separated: round_trip, forced, forced_t0.7, forced_t1.0, round_trip+paraphrase",
    )
    args = parser.parse_args()
    lines = Path(args.input).read_text(encoding="utf-8").splitlines()[: args.texts]
    texts = [json.loads(line)["text"].strip() for line in lines]
    cache = Path(args.cache)

    def round_trip_then_paraphrase(texts, cache, model, batch):
        back = llm_rewrites.round_trip(texts, cache, model, batch)
        again = run_text_paraphrases([b or "" for b in back], cache, model, batch)
        return [a if b else None for a, b in zip(again, back)]

    def forced_at(temperature: float):
        task = llm_rewrites.forced_task(temperature)
        return lambda *a: llm_rewrites.forced_rewrite(*a, task=task)

    rewrites = {
        "round_trip": llm_rewrites.round_trip,
        "forced": llm_rewrites.forced_rewrite,
        "forced_t0.7": forced_at(0.7),
        "forced_t1.0": forced_at(1.0),
        "round_trip+paraphrase": round_trip_then_paraphrase,
    }
    for name in args.rewrites.split(","):
        out = rewrites[name](texts, cache, args.model, args.batch)
        print(json.dumps({"rewrite": name, **figures(texts, out, args.embedder)}), flush=True)
        for original, rewrite in list(zip(texts, out))[:3]:
            print(json.dumps({"rewrite": name, "original": original, "output": rewrite}))


if __name__ == "__main__":
    main()
