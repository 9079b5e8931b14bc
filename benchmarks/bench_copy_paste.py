"""Copy-paste check: a watermarked text spliced into human text, detected with and without the
windowed test (a script, not a timed test; prints one JSON line per placement).

The watermarked texts come from ``bench_watermark.py generate`` records (``token_ids``); the
human text from held-out passages not used for them. Each watermarked text makes ``--share`` of
the spliced text, placed first or in the middle.

Example::

    python benchmarks/bench_copy_paste.py --wm runs/wm/gen150.jsonl --limit 32 --share 0.25
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from watermark.config import as_config  # noqa: E402
from watermark.evaluate.heldout import units  # noqa: E402
from watermark.text import decode_ids, encode_text  # noqa: E402
from watermark.watermark import Watermark  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wm", type=Path, required=True, help="watermarked records (JSONL)")
    parser.add_argument("--config", help="watermark config JSON (default: shipped)")
    parser.add_argument("--windows", default="16,32,64", help="window sizes of the test")
    parser.add_argument("--limit", type=int, default=32)
    parser.add_argument("--share", type=float, default=0.25, help="watermarked share")
    parser.add_argument("--heldout", type=Path, default=ROOT / "data/corpus/heldout.jsonl.gz")
    args = parser.parse_args()
    sizes = [int(w) for w in args.windows.split(",")]
    wm = Watermark.load(replace(as_config(args.config), window_sizes=sizes))
    marked = [json.loads(x) for x in args.wm.read_text().splitlines() if x.strip()][: args.limit]
    humans = [u["human"] for u in units(args.heldout, wm.tokenizer, None, 150, 200)][100:]
    texts: dict[str, list[str]] = {"first": [], "middle": []}
    nxt = 0  # the next human passage; each is used once, in order (cycled if they run out)
    for rec in marked:
        ids = rec["token_ids"]
        need = round(len(ids) * (1 - args.share) / args.share)
        human: list[int] = []
        while len(human) < need:
            human += encode_text(wm.tokenizer, humans[nxt % len(humans)])
            nxt += 1
        human = human[:need]
        half = len(human) // 2
        texts["first"].append(decode_ids(wm.tokenizer, ids + human))
        texts["middle"].append(decode_ids(wm.tokenizer, human[:half] + ids + human[half:]))
    for placement, spliced in texts.items():
        res = wm.detect(spliced, progress=True)
        print(json.dumps({
            "placement": placement, "texts": len(res), "share": args.share,
            "mean_tokens": sum(r.num_tokens for r in res) / len(res),
            "watermarked_tokens": sum(len(r["token_ids"]) for r in marked) / len(marked),
            "detected_whole_text": sum(r.p_value < 0.01 for r in res) / len(res),
            "detected_windowed": sum(r.window_p_value < 0.01 for r in res) / len(res),
        }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
