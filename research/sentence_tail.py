"""The sentence layer's false-positive rate on human text, per key, with the token-level part.

``python -m research.rotation_tail --out`` keeps every passage's token-level p-values (whole text
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

    python -m research.rotation_tail --human runs/calib/human.jsonl \\
        --config runs/calib/default.json --fresh-keys 19 --out runs/calib/tail.jsonl
    python -m research.sentence_tail --human runs/calib/human.jsonl \\
        --tail runs/calib/tail.jsonl --config runs/calib/default.json --settings own:2:32
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from research.common import Load
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig
from watermark.detect.verdict import fisher
from watermark.sentences.key import SentenceKey
from watermark.sentences.layer import SentenceLayer
from watermark.sentences.significance import text_test
from watermark.sentences.spans import sentence_spans

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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--human", type=Path, required=True, help="the passages rotation_tail read")
    parser.add_argument("--tail", type=Path, required=True, help="rotation_tail's --out JSONL")
    parser.add_argument("--config", type=Path, required=True, help="the config rotation_tail read")
    parser.add_argument("--fresh-keys", type=int, default=19, help="as given to rotation_tail")
    parser.add_argument("--key-prefix", default="rotation-tail-key-")
    parser.add_argument(
        "--settings",
        type=lambda x: [setting(s) for s in x.split(",")],
        default=[setting("own:2:32")],
        help="comma-separated keying:context_bits:bits[:test[:power]]",
    )
    return parser


def sentence_p(
    cfg: WatermarkConfig,
    secrets: list[str],
    texts: list[str],
    layer: SentenceLayer,
    settings: list[tuple[str, int, int, str, int]],
) -> Iterator[tuple[np.ndarray, float]]:
    """Per setting of ``settings``, the sentence test's p-values (passages x keys) of the
    texts, each text's sentences embedded and mapped once by ``layer``."""
    spans = [sentence_spans(t) for t in texts]
    flat = [t[a:b] for t, s in zip(texts, spans) for a, b, _ in s]
    outputs = layer.outputs(flat)  # (all sentences, D), once for every key and setting
    per_text, at = [], 0
    for s in spans:
        per_text.append(outputs[at : at + len(s)])
        at += len(s)
    for keying, context, bits, test, power in settings:
        section = replace(
            cfg.sentences,
            keying=keying,
            context_bits=context,
            bits=bits,
            test=test,
            weight_power=power,
        )
        keys = SentenceKey.of_section(section, secrets, outputs.shape[1])
        sent = [
            [text_test(key, s, t, v).p_value for key in keys]
            for t, s, v in zip(texts, spans, per_text)
        ]
        yield np.array(sent), len(flat) / len(texts)


def main(argv: list[str] | None = None, load: Load = Watermark.load) -> None:
    """Prints one JSON object per setting (``load``: how the watermark of the config is
    loaded, for its SE and SM)."""
    args = _parser().parse_args(argv)
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
    layer = load(cfg.evolve(bits=1)).sentences  # its SE and SM
    found = sentence_p(cfg, secrets, texts, layer, args.settings)
    for (keying, context, bits, test, power), (sent, per_passage) in zip(args.settings, found):
        setting_ = {
            "keying": keying,
            "context_bits": context,
            "bits": bits,
            "test": test,
            "power": power,
        }
        out = {
            "setting": setting_,
            "passages": len(texts),
            "keys": len(secrets),
            "sentences_per_passage": round(per_passage, 2),
            **table(token_p, window_p, sent),
        }
        print(json.dumps(out))


if __name__ == "__main__":
    main()
