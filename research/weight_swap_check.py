"""Does the figure of merit flatter heavy margin weights? (issue 79; prints JSON lines)

`research/surviving_evidence.py` weighs a sentence after a rewrite by the original's margins;
a detector reads the rewrite's own. On the held-out forced-rewrite pairs, with 32 keys of the
config's bits (no context bits) and each original's own signs as the targets (a sentence that
hits every tested output), this compares the z the flip model predicts (the original's weights
at each ``power`` of the test, times 2 k - 1 by margin bin) with the z the rewrite really gets
under its own weights. A ratio near 1 says the weight swap costs nothing on average; it does
not cover the selection of a pool's candidate.

    python research/weight_swap_check.py --config configs/watermark-robust.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "research"))

from mapper.sentence_metrics import kept_by_bin, keys, rewrite_agreement  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.sentences.key import margin_bins, margin_weights, margins  # noqa: E402

rewrite_pairs = __import__("surviving_evidence").rewrite_pairs  # the sibling script's pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs/watermark-robust.json")
    parser.add_argument("--powers", default="1,2,3")
    args = parser.parse_args()
    wm = Watermark.load(args.config)
    layer, bits = wm.sentences, wm.config.sentences.bits
    v, w = rewrite_pairs(layer, "forced", "heldout")
    tested = keys(layer.semantic.num_dims, 32, bits=bits, context_bits=0, test="margin")
    kept = torch.tensor(kept_by_bin(rewrite_agreement(v, w, tested)))
    for power in map(int, args.powers.split(",")):
        predicted, real = [], []
        for key in tested:
            d = key.dims
            wv = margin_weights(v, d, power).float()
            ww = margin_weights(w, d, power).float()
            survive = 2 * kept[margin_bins(margins(v)[:, d])] - 1
            predicted.append((wv * survive).sum(1) / wv.norm(dim=1))
            same = ((w[:, d] > 0) == (v[:, d] > 0)).float() * 2 - 1
            real.append((ww * same).sum(1) / ww.norm(dim=1))
        p, r = torch.cat(predicted).mean().item(), torch.cat(real).mean().item()
        row = {"config": str(args.config), "power": power, "pairs": len(v)}
        print(json.dumps({**row, "predicted": round(p, 4), "real": round(r, 4),
                          "ratio": round(r / p, 4)}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
