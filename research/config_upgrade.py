"""Detection under every shipped config, for checking that a code change keeps results byte for
byte: run it on two checkouts and compare the files.

For the shipped default and each ``configs/watermark-*.json`` it detects the first ``--texts``
held-out human passages (200 tokens) and writes one JSON line per text with the whole result,
per-token flags included, to ``--out``.

    python research/config_upgrade.py --texts 20 --out runs/config-upgrade-new.jsonl
    (cd OLD_CHECKOUT && python research/config_upgrade.py --texts 20 --out old.jsonl)
    cmp runs/config-upgrade-new.jsonl old.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.heldout import units  # noqa: E402
from watermark.api import Watermark  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    configs = [None, *sorted(str(p) for p in (ROOT / "configs").glob("watermark-*.json"))]
    with Path(args.out).open("w", encoding="utf-8") as out:
        for config in configs:
            wm = Watermark.load(config)
            found = units(ROOT / "data/corpus/heldout.jsonl.gz", wm.tokenizer, None, 150, 200)
            texts = [u["human"] for u in found[: args.texts]]
            name = "default" if config is None else Path(config).name
            for n, result in enumerate(wm.detect(texts)):
                row = {"config": name, "text": n, **result.to_dict(per_token=True)}
                out.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            print(name, len(texts), file=sys.stderr)


if __name__ == "__main__":
    main()
