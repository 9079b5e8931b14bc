"""The sentence layer's cost and null, measured side by side (issue 54).

Subcommands (each prints JSON lines on stdout; progress on stderr):

* ``speed``: on the same held-out prompts, tokens per second of plain ``generate``
  (unwatermarked), of the token-level watermark, and of the sentence layer at each N of
  ``--candidates``, all at ``--batch`` prompts per call, with the ratios to plain generation;
  with ``--reference`` also the sentence layer's reference path (a ``generate`` call per prompt
  and sentence, :func:`~watermark.generate.per_prompt.sample_by_sentences`) beside its decode
  loop.
* ``memory``: one call of ``--prompts`` prompts (the robust config's keying at ``--bits``,
  ``--candidates`` and ``--resample-every``): the process's peak resident set and tokens/s.
* ``null``: the sentence test on held-out human continuations under the demo key and
  ``--keys`` - 1 others, and
  each ``--context-bits``: the share of texts at p < 0.01 and p < 0.05 (the test is exact over
  keys, so these estimate the false positive rate for a fixed key over texts), and the mean
  number of tested sentences. The sentences are embedded once; the keys only change the test.

Examples::

    python -m benchmarks.bench_sentences speed --prompts 8 --tokens 100 --candidates 2,4 --reference
    python -m benchmarks.bench_sentences null --texts 353 --keys 20 --context-bits 0,2
    python -m benchmarks.bench_sentences memory --prompts 16 --tokens 200 --candidates 4
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import torch

from evaluation.heldout import units
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig
from watermark.generate.generation import eos_ids, generation_of
from watermark.generate.keep import MAX_SENTENCE_TOKENS
from watermark.generate.loop import Limits
from watermark.generate.own_call import warpers_off
from watermark.generate.per_prompt import sample_by_sentences
from watermark.generate.processor import AdaptiveWatermarkLogitsProcessor
from watermark.sentences.key import SentenceKey
from watermark.sentences.significance import text_test
from watermark.sentences.spans import sentence_spans

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "data" / "corpus" / "heldout.jsonl.gz"


# the robust config's keying and test (watermark/robust_config.json), at the bits given
ROBUST_KEYING = {"context_bits": 2, "keying": "own", "test": "margin"}


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


def held_out(n: int) -> list[dict]:
    """The first ``n`` held-out units (prompt: two sentences; human: the next ~200 tokens)."""
    from watermark.models.loaders import load_lm

    _, tokenizer = load_lm("smollm2-135m")
    return units(HELDOUT, tokenizer, ["news", "wiki"], 150, 200)[:n]  # as the evaluation


def reference_path(wm: Watermark, prompts: list[str], tokens: int, seed: int) -> list:
    """The sentence layer's reference path: one ``model.generate`` call per prompt and round."""
    model, stop = wm.generator, eos_ids(wm.generator, wm.tokenizer)
    processor = AdaptiveWatermarkLogitsProcessor(wm.core, stop, True)
    torch.manual_seed(seed)
    limits, layer = Limits(tokens, MAX_SENTENCE_TOKENS), wm.sentences
    found = sample_by_sentences(
        model, wm.tokenizer, prompts, processor, layer, limits, stop, warpers_off()
    )
    return [generation_of(wm.tokenizer, *each) for each in found]


def speed(args: argparse.Namespace) -> None:
    prompts = [u["prompt"] for u in held_out(args.prompts)]
    base = WatermarkConfig.default()
    wm = Watermark.load(base)
    runs = [("plain", wm, False, False), ("token-level", wm, True, False)]
    for n in args.candidates:
        for every in args.resample_every:
            cfg = base.evolve(
                bits=args.bits,
                candidates=n,
                resample_every=every,
                **ROBUST_KEYING,
            )
            layered = Watermark.load(cfg, generator=wm.generator)
            name = f"sentences N={n}" + (f", k={every}" if every else "")
            runs.append((name, layered, True, False))
        if args.reference:  # one model.generate per prompt and sentence
            runs.append((f"sentences N={n}, reference path", layered, True, True))
    plain = None
    for name, model, marked, reference in runs:
        start, tokens = time.perf_counter(), 0
        for b in range(0, len(prompts), args.batch):
            batch = prompts[b : b + args.batch]
            if reference:
                outs = reference_path(model, batch, args.tokens, b)
            else:
                outs = model.generate(batch, max_new_tokens=args.tokens, seed=b, watermark=marked)
            tokens += sum(len(o.token_ids) for o in outs)
        rate = tokens / (time.perf_counter() - start)
        plain = plain or rate
        row = {"run": name, "tokens_per_s": round(rate, 2), "vs_plain": round(rate / plain, 3)}
        print(json.dumps({**row, "batch": args.batch, "threads": torch.get_num_threads()}))


def memory(args: argparse.Namespace) -> None:
    """One call of ``--prompts`` prompts through the sentence layer, each to ``--tokens`` tokens
    (no EOS before): the process's peak resident set (models included) and tokens per second."""
    prompts = [u["prompt"] for u in held_out(args.prompts)]
    cfg = WatermarkConfig.default().evolve(
        bits=args.bits,
        candidates=args.candidates,
        resample_every=args.resample_every,
        **ROBUST_KEYING,
    )
    wm = Watermark.load(cfg)
    start = time.perf_counter()
    outs = wm.generate(prompts, max_new_tokens=args.tokens, min_new_tokens=args.tokens, seed=0)
    seconds = time.perf_counter() - start
    tokens = sum(len(o.token_ids) for o in outs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    row = {"batch": len(prompts), "candidates": args.candidates, "k": args.resample_every}
    row.update(tokens=tokens, tokens_per_s=round(tokens / seconds, 2), peak_gib=round(peak, 2))
    print(json.dumps(row))


def null(args: argparse.Namespace) -> None:
    texts = [u["human"] for u in held_out(args.texts)]
    wm = Watermark.load(WatermarkConfig.default())
    semantic = wm.core.semantic
    cut = [sentence_spans(t) for t in texts]
    pieces = [[t[a:b] for a, b, _ in spans] for t, spans in zip(texts, cut)]
    flat = [p for ps in pieces for p in ps]
    log(f"embedding {len(flat)} sentences of {len(texts)} texts")
    v_all = semantic.outputs(semantic.embed(flat, progress=True)).float().cpu()
    v, at = [], 0
    for ps in pieces:
        v.append(v_all[at : at + len(ps)])
        at += len(ps)
    for context in args.context_bits:
        ps, tested, per_key = [], [], []
        names = ["demo"] + [f"null-key-{k}" for k in range(1, args.keys)]
        for name in names:
            secret = wm.config.secret_keys()[0] if name == "demo" else name
            key = SentenceKey.of(secret, semantic.num_dims, args.bits, context, args.keying)
            for text, spans, vs in zip(texts, cut, v):
                found = text_test(key, spans, text, vs)
                ps.append(found.p_value)
                tested.append(found.num_sentences)
            per_key.append(sum(p < 0.01 for p in ps[-len(texts) :]) / len(texts))
        row = {
            "context_bits": context,
            "keying": args.keying,
            "bits": args.bits,
            "texts": len(texts),
            "keys": args.keys,
            "p<0.01": sum(p < 0.01 for p in ps) / len(ps),
            "p<0.05": sum(p < 0.05 for p in ps) / len(ps),
            "p<0.01 demo key": per_key[0],
            "p<0.01 worst key": max(per_key),
            "p<0.01 mean of keys 1-3": sum(per_key[:3]) / min(3, len(per_key)),
            "mean_sentences": sum(tested) / len(tested),
        }
        print(json.dumps(row))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("speed", help="generation speed against plain generate")
    s.add_argument("--prompts", type=int, default=8)
    s.add_argument("--tokens", type=int, default=100)
    s.add_argument("--batch", type=int, default=8)
    s.add_argument("--bits", type=int, default=16)
    s.add_argument("--candidates", type=lambda x: [int(n) for n in x.split(",")], default=[4])
    s.add_argument("--reference", action="store_true", help="also the reference path (slow)")
    s.add_argument(
        "--resample-every",
        type=lambda x: [int(k) for k in x.split(",")],
        default=[0],
        help="k values of sentences.resample_every (0: best-of-N)",
    )
    m = sub.add_parser("memory", help="peak memory of one batch through the sentence layer")
    m.add_argument("--prompts", type=int, default=16)
    m.add_argument("--tokens", type=int, default=200)
    m.add_argument("--bits", type=int, default=32)
    m.add_argument("--candidates", type=int, default=4)
    m.add_argument("--resample-every", type=int, default=0)
    n = sub.add_parser("null", help="the sentence test on human text under random keys")
    n.add_argument("--texts", type=int, default=353)
    n.add_argument("--keys", type=int, default=20)
    n.add_argument("--bits", type=int, default=16)
    n.add_argument("--context-bits", type=lambda x: [int(c) for c in x.split(",")], default=[0])
    n.add_argument("--keying", default="previous", help="previous or own (with c > 0)")
    args = parser.parse_args(argv)
    {"speed": speed, "memory": memory, "null": null}[args.command](args)


if __name__ == "__main__":
    main()
