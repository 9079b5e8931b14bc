"""The sentence layer's false-positive rate on human text, per key, with the token-level part.

``research/rotation_tail.py --out`` keeps every passage's token-level p-values (whole text
and windowed) under the config's key and derived ones. This script adds the sentence test of
each passage under the same keys, for one or more layer settings: the passage's sentences are
embedded and mapped once (the outputs do not depend on the key), then each key's
:class:`~watermark.sentences.key.SentenceKey` reads them. It prints one JSON object per
setting:

- ``sentence``, ``combined_whole``, ``combined_windowed``: the share of passages below each
  cut-off under each key, for the sentence p-value alone and for Fisher's combination of it with
  the whole-text or the windowed token p-value (the windowed one is the verdict the detector
  gives when the config tests windows);
- for each: ``first3_mean`` (the config's key and the next two), ``mean`` and ``worst`` over
  all keys, and ``per_key`` counts at p < 0.01.

Example::

    python research/rotation_tail.py --human runs/calib/human.jsonl \\
        --config runs/calib/default.json --fresh-keys 19 --out runs/calib/tail.jsonl
    python research/sentence_tail.py --human runs/calib/human.jsonl \\
        --tail runs/calib/tail.jsonl --config runs/calib/default.json --settings own:2:32
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from watermark.api import Watermark  # noqa: E402
from watermark.config.watermark_config import WatermarkConfig  # noqa: E402
from watermark.detect.verdict import fisher  # noqa: E402
from watermark.sentences.key import SentenceKey  # noqa: E402
from watermark.sentences.significance import text_test  # noqa: E402
from watermark.sentences.spans import sentence_spans  # noqa: E402

CUTOFFS = (0.01, 0.05)


def summary(p: np.ndarray) -> dict:
    """Shares below each cut-off over keys (p: passages x keys)."""
    out = {}
    for c in CUTOFFS:
        share = (p < c).mean(0)
        out[f"p<{c}"] = {
            "first3_mean": round(float(share[:3].mean()), 5),
            "mean": round(float(share.mean()), 5),
            "worst": round(float(share.max()), 5),
        }
    out["per_key_count_p<0.01"] = (p < 0.01).sum(0).tolist()
    return out


def table(token_p: np.ndarray, window_p: np.ndarray, sent: np.ndarray) -> dict:
    """The summaries of the token parts, the sentence part and their Fisher combinations
    (each array: passages x keys)."""
    combine = np.vectorize(lambda a, b: fisher([a, b]))
    return {
        "token_whole": summary(token_p),
        "token_windowed": summary(window_p),
        "sentence": summary(sent),
        "combined_whole": summary(combine(token_p, sent)),
        "combined_windowed": summary(combine(window_p, sent)),
    }


def setting(text: str) -> tuple[str, int, int, str, int]:
    """``keying:context_bits:bits[:test[:power]]``, e.g. ``own:2:32``, ``own:4:16:margin`` or
    ``own:0:32:margin:4`` (the test counts ``hits`` unless named; the margin weights' power is
    1 unless named)."""
    keying, context, bits, *rest = text.split(":")
    test, power = (rest + ["hits", "1"][len(rest) :])[:2]
    return keying, int(context), int(bits), test, int(power)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--human", type=Path, required=True, help="the passages rotation_tail read")
    parser.add_argument("--tail", type=Path, required=True, help="rotation_tail.py --out JSONL")
    parser.add_argument("--config", type=Path, required=True, help="the config rotation_tail read")
    parser.add_argument("--fresh-keys", type=int, default=19, help="as given to rotation_tail")
    parser.add_argument("--key-prefix", default="rotation-tail-key-")
    parser.add_argument(
        "--settings",
        type=lambda x: [setting(s) for s in x.split(",")],
        default=[setting("own:2:32")],
        help="comma-separated keying:context_bits:bits[:test[:power]]",
    )
    args = parser.parse_args(argv)
    cfg = WatermarkConfig.load(args.config)
    fresh = [f"{args.key_prefix}{i}" for i in range(args.fresh_keys)]
    secrets = cfg.evolve(old_keys=list(cfg.keys.old_keys) + fresh).secret_keys()
    texts = [json.loads(x)["text"] for x in args.human.read_text().splitlines() if x.strip()]
    rows = [json.loads(x) for x in args.tail.read_text().splitlines() if x.strip()]
    widths = sorted({len(row) for row in rows})
    if not texts or len(rows) != len(texts) or widths != [len(secrets)]:
        raise SystemExit(
            f"error: {args.tail} has {len(rows)} passages x {widths} keys; "
            f"expected {len(texts)} x {len(secrets)} (the same --fresh-keys as rotation_tail)"
        )
    token_p = np.array([[k["p"] for k in row] for row in rows])
    window_p = np.array([[k["window_p"] for k in row] for row in rows])
    layer = Watermark.load(cfg.evolve(bits=1)).sentences  # its SE and SM
    spans = [sentence_spans(t) for t in texts]
    flat = [t[a:b] for t, s in zip(texts, spans) for a, b, _ in s]
    outputs = layer.outputs(flat)  # (all sentences, D), once for every key and setting
    per_text, at = [], 0
    for s in spans:
        per_text.append(outputs[at : at + len(s)])
        at += len(s)
    for keying, context, bits, test, power in args.settings:
        keys = [
            SentenceKey.of(k, outputs.shape[1], bits, context, keying, test, power) for k in secrets
        ]
        sent = np.array(
            [
                [text_test(key, s, t, v).p_value for key in keys]
                for t, s, v in zip(texts, spans, per_text)
            ]
        )
        out = {
            "setting": {
                "keying": keying,
                "context_bits": context,
                "bits": bits,
                "test": test,
                "power": power,
            },  # fmt: skip
            "passages": len(texts),
            "keys": len(secrets),
            "sentences_per_passage": round(len(flat) / len(texts), 2),
            **table(token_p, window_p, sent),
        }
        print(json.dumps(out))


if __name__ == "__main__":
    main()
