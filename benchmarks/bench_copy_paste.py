"""Copy-paste check: a watermarked text spliced into human text, detected with and without the
windowed test (a script, not a timed test; prints one JSON line per placement).

The watermarked texts come from ``bench_watermark.py generate`` records (``token_ids``) or an
evaluation cache's generations (``ids``, plain or gzipped JSONL); the
human text from held-out passages not used for them. Each watermarked text makes ``--share`` of
the spliced text, placed first or in the middle.

Example::

    python -m benchmarks.bench_copy_paste --wm runs/wm/gen150.jsonl --limit 32 --share 0.25
    python -m benchmarks.bench_copy_paste --wm runs/wm/gen150.jsonl --placements middle
    python -m benchmarks.bench_copy_paste --config robust \
        --wm data/eval-cache/sentence-rewrites/generations.jsonl.gz --placements middle
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from evaluation.calibration import record
from evaluation.heldout import units
from watermark.api import Watermark
from watermark.config.watermark_config import as_config
from watermark.core.text import decode_ids, encode_text

ROOT = Path(__file__).resolve().parents[1]
PLACEMENTS = ("first", "middle")


def splice(
    marked: list[dict], humans: list[str], tokenizer: object, share: float
) -> dict[str, list[str]]:
    """Each watermarked record's ``token_ids`` as ``share`` of a spliced text, placed first or in
    the middle of human text; each human passage is used once, in order (cycled if they run out).
    """
    texts: dict[str, list[str]] = {p: [] for p in PLACEMENTS}
    nxt = 0
    for rec in marked:
        ids = rec["token_ids"]
        need = round(len(ids) * (1 - share) / share)
        human: list[int] = []
        while len(human) < need:
            human += encode_text(tokenizer, humans[nxt % len(humans)])
            nxt += 1
        human = human[:need]
        half = len(human) // 2
        texts["first"].append(decode_ids(tokenizer, ids + human))
        texts["middle"].append(decode_ids(tokenizer, human[:half] + ids + human[half:]))
    return texts


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wm", type=Path, required=True, help="watermarked records (JSONL)")
    parser.add_argument("--config", help="watermark config JSON (default: shipped)")
    parser.add_argument("--windows", default="128,256", help="window sizes of the test (tokens)")
    parser.add_argument("--start", type=int, default=0, help="first watermarked record used")
    parser.add_argument("--min-tokens", type=int, default=100, help="skip shorter passages")
    parser.add_argument("--limit", type=int, default=32)
    parser.add_argument("--share", type=float, default=0.25, help="watermarked share")
    parser.add_argument("--placements", default=",".join(PLACEMENTS), help="first, middle or both")
    parser.add_argument("--out", type=Path, help="also write per-token records (JSONL) here")
    parser.add_argument("--heldout", type=Path, default=ROOT / "data/corpus/heldout.jsonl.gz")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    placements = args.placements.split(",")
    if not set(placements) <= set(PLACEMENTS):
        sys.exit(f"error: --placements takes {', '.join(PLACEMENTS)}, got {args.placements}")
    sizes = [int(w) for w in args.windows.split(",")]
    wm = Watermark.load(as_config(args.config).evolve(window_sizes=sizes))
    opener = gzip.open if args.wm.suffix == ".gz" else open
    with opener(args.wm, "rt", encoding="utf-8") as f:  # an evaluation cache names them "ids"
        marked = [json.loads(x) for x in f if x.strip()]
    marked = [{**r, "token_ids": r.get("token_ids", r.get("ids"))} for r in marked]
    marked = marked[: args.start + args.limit]  # record i always gets the same human text,
    # whatever --start is; passages under --min-tokens (EOS came early) are left out
    humans = [u["human"] for u in units(args.heldout, wm.tokenizer, None, 150, 200)][100:]
    texts = splice(marked, humans, wm.tokenizer, args.share)
    keep = [
        i
        for i, r in enumerate(marked)
        if i >= args.start and len(r["token_ids"]) >= args.min_tokens
    ]
    texts = {k: [v[i] for i in keep] for k, v in texts.items()}
    end = len(marked)  # the file may hold fewer than start + limit records
    skipped = end - args.start - len(keep)
    marked = [marked[i] for i in keep]
    if not marked:
        sys.exit(f"error: no watermarked record of at least {args.min_tokens} tokens")
    if args.out:
        args.out.write_text("")  # one run per file
    for placement in placements:
        res = wm.detect(texts[placement], progress=True)
        if args.out:
            with args.out.open("a") as f:
                for r in res:
                    f.write(json.dumps({"placement": placement, **record(r, wm.config)}) + "\n")
        print(
            json.dumps(
                {
                    "placement": placement,
                    "texts": len(res),
                    "share": args.share,
                    "records": [args.start, end],
                    "skipped_short": skipped,
                    "windows": sizes,
                    "mean_tokens": sum(r.num_tokens for r in res) / len(res),
                    "watermarked_tokens": sum(len(r["token_ids"]) for r in marked) / len(marked),
                    "detected_whole_text": sum(r.p_value < 0.01 for r in res) / len(res),
                    "detected_windowed": sum(r.window_p_value < 0.01 for r in res) / len(res),
                    # the verdict: the windowed test, and the sentence layer where it is on
                    "detected_verdict": sum(r.verdict_p_value < 0.01 for r in res) / len(res),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
