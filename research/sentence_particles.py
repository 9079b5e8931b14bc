"""More margin per candidate: best-of-N against resampling partial sentences, at equal rows
(issue 70; a script printing JSON lines, progress on stderr).

Each setting ``N:k`` generates with the robust config's sentence layer at N candidate rows per
sentence and ``resample_every`` k (0: best-of-N, today's choice): every k tokens the rows still
being written are ranked by their partial sentence's score and the lower half continue copies
of the upper half. The prompts are the mapper seeds' validation prefixes
(``data/sentence-key/pools.jsonl.gz``, split ``val``: not used to train the sentence mapper nor
to measure it). Per setting:

* ``z_margin`` / ``z_hits``: the mean per-sentence z of the margin and hits tests over the
  complete sentences of a text under the generation key (as in
  ``research/sentence_selection.py``), averaged over texts with a bootstrap interval, and
  the paired difference to the first setting;
* ``z_text``: a text's evidence, the sum of its sentences' margin z over the square root of
  their number (what the text's test grows with: fewer, longer sentences carry less);
* ``tokens_per_s`` of the layer (all prompts, ``--batch`` per call) and its ratio to the first;
* ``ppl``: the generator's perplexity of the texts given their prompts (no watermark), and
  ``rep4``: the share of repeated 4-grams, each with an interval.

Texts are cached per setting in ``--cache`` (gzip JSONL; the measured ones are committed in
``data/sentence-particles/``), so a rerun only scores.

    python research/sentence_particles.py --settings 4:0 4:4 4:8 8:0 16:0
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sentence_selection import evidence  # noqa: E402

from data.sentence_rewrites import read_jsonl_gz  # noqa: E402
from evaluation.bootstrap import mean_difference, mean_interval  # noqa: E402
from evaluation.metrics import ngram_repetition  # noqa: E402
from watermark.api import Watermark  # noqa: E402
from watermark.config.watermark_config import WatermarkConfig  # noqa: E402
from watermark.core.text import encode_text  # noqa: E402
from watermark.sentences.spans import sentence_spans  # noqa: E402

POOLS = ROOT / "data" / "sentence-key" / "pools.jsonl.gz"


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


def sentence_evidence(layer, text: str) -> list[tuple[float, float]]:
    """(hits z, margin z) of each complete sentence of ``text`` under the layer's key."""
    spans = [(a, b) for a, b, complete in sentence_spans(text) if complete]
    if not spans:
        return []
    v = layer.outputs([text[a:b] for a, b in spans])
    return [evidence(layer.key, v[[i]]) for i in range(len(v))]


@torch.inference_mode()
def perplexity(wm: Watermark, prompt: str, text: str) -> float:
    """The generator's perplexity of ``text`` after ``prompt`` (no watermark)."""
    model, tokenizer = wm.generator, wm.core.tokenizer
    head, tail = encode_text(tokenizer, prompt), encode_text(tokenizer, text)
    if not tail:
        return float("nan")
    ids = torch.tensor([head + tail])
    logits = model(ids).logits[0, len(head) - 1 : -1].float()
    return float(torch.nn.functional.cross_entropy(logits, ids[0, len(head) :]).exp())


def generate(args, setting: str, prompts: list[str], base: Watermark) -> tuple[list[str], float]:
    """The texts of ``setting`` and the layer's tokens per second (both cached)."""
    path = args.cache / f"{setting.replace(':', '-')}.jsonl.gz"
    if path.is_file():
        with gzip.open(path, "rt", encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        if len(rows) >= len(prompts):
            return [r["text"] for r in rows[: len(prompts)]], rows[0].get("tokens_per_s", 0.0)
    n, every = (int(x) for x in setting.split(":"))
    cfg = WatermarkConfig.load(args.config).evolve(candidates=n, resample_every=every)
    wm = Watermark.load(cfg, generator=base.generator, embedder=base.embedder, mapper=base.mapper)
    texts, tokens, start = [], 0, time.perf_counter()
    for b in range(0, len(prompts), args.batch):
        outs = wm.generate(prompts[b : b + args.batch], max_new_tokens=args.tokens, seed=b)
        texts += [o.text for o in outs]
        tokens += sum(len(o.token_ids) for o in outs)
        log(f"{setting}: {len(texts)}/{len(prompts)} texts, {time.perf_counter() - start:.0f} s")
    rate = tokens / (time.perf_counter() - start)
    args.cache.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": t, "tokens_per_s": rate}) + "\n" for t in texts)
    return texts, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", nargs="+", default=["4:0", "4:4", "4:8", "8:0", "16:0"])
    parser.add_argument("--config", type=Path, default=ROOT / "configs/watermark-robust.json")
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--cache", type=Path, default=ROOT / "data/sentence-particles")
    args = parser.parse_args()
    torch.set_num_threads(2)
    rows = [r for r in read_jsonl_gz(POOLS) if r["split"] == "val"][: args.prompts]
    prompts = [r["prefix"] for r in rows]
    base = Watermark.load(WatermarkConfig.load(args.config))
    first = None
    for setting in args.settings:
        texts, rate = generate(args, setting, prompts, base)
        per_text = [sentence_evidence(base.sentences, t) for t in texts]
        margin = [sum(m for _, m in e) / len(e) if e else 0.0 for e in per_text]
        hits = [sum(h for h, _ in e) / len(e) if e else 0.0 for e in per_text]
        text = [sum(m for _, m in e) / len(e) ** 0.5 if e else 0.0 for e in per_text]
        ppl = [perplexity(base, p, t) for p, t in zip(prompts, texts)]
        reps = [ngram_repetition(t.split(), 4) for t in texts]  # word 4-grams
        row = {"setting": setting, "texts": len(texts)}
        row["sentences"] = sum(len(e) for e in per_text)
        ppl = [p for p in ppl if p == p]  # an empty text has none
        named = {"z_margin": margin, "z_text": text, "z_hits": hits, "ppl": ppl, "rep4": reps}
        for name, values in named.items():
            row[name] = round(sum(values) / len(values), 3)
            row[f"{name}_ci"] = [round(x, 3) for x in mean_interval(values)]
        row["tokens_per_s"] = round(rate, 2)
        if first is None:
            first = (margin, text, rate)
        else:
            pairs = (("z_margin", margin, first[0]), ("z_text", text, first[1]))
            for name, values, before in pairs:
                ci = mean_difference(values, before)["ci"]
                row[f"{name}_vs_first"] = [round(x, 3) for x in ci]
            row["speed_vs_first"] = round(rate / first[2], 3) if first[2] else None
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
