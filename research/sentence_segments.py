"""The sentence test read at more than one segmentation (issue 70): single sentences, and adjacent
pairs at both offsets, so that sentences a rewrite merged are read as one (a script printing
JSON lines).

For each sentence-layer method of an evaluation YAML, its texts unattacked and under each curve
attack come from the run's caches (nothing is generated or attacked here; a missing entry
fails), with the run's human texts as negatives. Each text gets the sentence test of the
config's key at three segmentations (:func:`segmentations`), and these statistics:

* ``single``: the layer's own test (single sentences);
* ``pairs``: the better of the two pair segmentations, times 2 (Bonferroni);
* ``any``: the best of the three, times 3 (Bonferroni: a valid level without a search null);
* ``verdict_single`` / ``verdict_any``: Fisher's combination of the token-level verdict
  p-value with ``single`` / ``any`` (the product's rule, :meth:`SentenceLayer.verdict`).

Printed per cell: detected at p < 0.01, the human texts flagged at p < 0.01, ROC-AUC and TPR at
1% FPR against the human texts.

    python research/sentence_segments.py --config configs/evaluation/sentence-rewrites.yaml \
        --set curve_prompts=32
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sentence_parts import curve_texts  # noqa: E402

from evaluation.config import EvalConfig  # noqa: E402
from evaluation.metrics import detection_metrics  # noqa: E402
from evaluation.run import Evaluation  # noqa: E402
from watermark.detect.verdict import fisher  # noqa: E402
from watermark.sentences.significance import text_test as test_sentences  # noqa: E402
from watermark.sentences.spans import sentence_spans  # noqa: E402


def segmentations(text: str) -> list[list[tuple[int, int, bool]]]:
    """The text's sentence spans, and its adjacent pairs joined, starting at the first and at
    the second sentence (a lone sentence at either end stays alone)."""
    single = sentence_spans(text)
    out = [single]
    for offset in (0, 1):
        spans = single[:offset]
        for i in range(offset, len(single), 2):
            pair = single[i : i + 2]
            spans.append((pair[0][0], pair[-1][1], pair[-1][2]))
        out.append(spans)
    return out


def statistics_of(layer, text: str, token_p: float) -> dict[str, float]:
    """The module docstring's p-values of one text under the layer's first key."""
    found = []
    for spans in segmentations(text):
        v = layer.outputs([text[a:b] for a, b, _ in spans])
        found.append(test_sentences(layer.key, spans, text, v).p_value)
    single, pairs = found[0], min(1.0, 2 * min(found[1:]))
    best = min(1.0, 3 * min(found))
    return {
        "single": single,
        "pairs": pairs,
        "any": best,
        "verdict_single": fisher([token_p, single]),
        "verdict_any": fisher([token_p, best]),
    }


def read(wm, texts: list[str]) -> list[dict]:
    """The statistics of each text under watermark ``wm`` (its token-level verdict, once)."""
    tokens = [r.token_verdict_p_value for r in wm.detect(texts)]
    return [statistics_of(wm.sentences, t, p) for t, p in zip(texts, tokens)]


def cell(name: str, attack: str, ours: list[dict], human: list[dict]) -> dict:
    row: dict = {"method": name, "attack": attack, "texts": len(ours)}
    for part in ours[0]:
        pos, neg = [r[part] for r in ours], [r[part] for r in human]
        metrics = detection_metrics([-p for p in pos], [-p for p in neg])
        row[part] = {
            "detected": statistics.fmean(p < 0.01 for p in pos),
            "human_flagged": statistics.fmean(p < 0.01 for p in neg),
            "roc_auc": round(metrics["roc_auc"], 4),
            "tpr@1%fpr": metrics["tpr@1%fpr"],
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", action="append", default=[], help="as python -m evaluation")
    args = parser.parse_args()
    cfg = EvalConfig.load(args.config, overrides=args.set)
    for name, wm, humans, cells in curve_texts(Evaluation(cfg, progress=False)):
        human = read(wm, humans)
        for attack, texts in cells:
            print(json.dumps(cell(name, attack, read(wm, texts), human)), flush=True)


if __name__ == "__main__":
    main()
