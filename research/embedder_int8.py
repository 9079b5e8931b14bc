"""Would an int8 sentence embedder pay off? Speed and sign agreement against float32.

Takes the key spans of held-out human texts (the last 32 tokens before every step, as detection
embeds them), embeds them with the shipped MiniLM in float32 and with a copy whose linear layers
are quantized to int8 (``torch.ao.quantization.quantize_dynamic``), timed alternately in one run,
and compares the mapper signs of the two: the share of identical signs and of steps whose 6
lists' bits all agree for the token drawn. A backend that moves signs would have to be a pinned
config field like ``compute_dtype``; this only measures whether one is worth it.

    python research/embedder_int8.py --texts 8
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.inputs import human_texts  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.core.text import decode_ids, encode_text  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(2)
    wm = Watermark.load()
    semantic, tokenizer = wm.core.semantic, wm.core.tokenizer
    spans, tokens = [], []
    for text in human_texts(tokenizer, args.texts, 200):
        ids = encode_text(tokenizer, text)
        spans.append(
            [decode_ids(tokenizer, ids[max(0, t - 33) : t - 1]) for t in range(2, len(ids))]
        )
        tokens.append(torch.tensor(ids[1:-1]))
    float_model = semantic.embedder
    int8_model = torch.ao.quantization.quantize_dynamic(
        copy.deepcopy(float_model), {torch.nn.Linear}, dtype=torch.qint8
    )
    seconds = {"float32": 0.0, "int8": 0.0}
    found: dict[str, list[torch.Tensor]] = {}
    for _ in range(args.rounds):
        for name, model in (("float32", float_model), ("int8", int8_model)):
            semantic.embedder = model
            start = time.perf_counter()
            found[name] = [semantic.embed(s) for s in spans]
            seconds[name] += time.perf_counter() - start
    semantic.embedder = float_model
    same_signs, same_steps, total = 0, 0, 0
    for u32, u8, drawn in zip(found["float32"], found["int8"], tokens):
        s32, s8 = semantic.signs(u32), semantic.signs(u8)
        same_signs += int((s32 == s8).sum())
        total += s32.numel()
        bits32 = semantic.from_signs(s32).contains(drawn)
        bits8 = semantic.from_signs(s8).contains(drawn)
        same_steps += int((bits32 == bits8).all(-1).sum())
    steps = sum(len(t) for t in tokens)
    print(
        json.dumps(
            {
                "ms_per_text": {
                    k: round(1000 * v / args.rounds / args.texts) for k, v in seconds.items()
                },
                "speedup": round(seconds["float32"] / seconds["int8"], 2),
                "signs_agree": round(same_signs / total, 4),
                "steps_all_bits_agree": round(same_steps / steps, 4),
                "steps": steps,
            }
        )
    )


if __name__ == "__main__":
    main()
