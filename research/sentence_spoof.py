"""How far a spoofer gets against the sentence layer after learning its keyed region from
marked sentences (issue 54, security; a script printing JSON lines, a simulation).

The marked sentences are simulated, not generated: each is the best of ``--candidates``
held-out human sentences under the real key, as generation picks the best of N sampled
candidates (the candidates' embeddings come from human text, not from the generator). Texts
are ``--sentences`` such choices in a row, each the layer's choice
(:func:`research.common.choose`) after the sentence kept before it, so a key keyed by the
previous sentence (``--context-bits``) sees real predecessors.

The spoofer sees only the marked texts' sentence outputs and human text of his own, never the
key. He estimates, for each mapper output, how much more often it is positive in marked
sentences than in his human ones, and takes the ``bits`` outputs that lean most, with their
signs, as the key. He then forges texts from *other* human sentences, each slot the best of
``--forge-candidates`` under his estimate, and the real detector's sentence test reads them.
Human texts built the same way without the choice give the false-positive baseline.

Three disjoint pools of held-out human sentences: the candidates of the marked texts, the
spoofer's own text, and the sentences the forger and the baseline draw from.

Example::

    python -m research.sentence_spoof --learn 30,100,300 --context-bits 0,2
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import torch

from evaluation.heldout import units
from research.common import ROOT, choose, shared_targets
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig
from watermark.sentences.key import SentenceKey
from watermark.sentences.significance import sentence_test
from watermark.sentences.spans import sentence_spans

HELDOUT = ROOT / "data/corpus/heldout.jsonl.gz"


def chain(
    v: torch.Tensor, key: SentenceKey, texts: int, length: int, pick: int, rng, choice="score"
) -> list:
    """``texts`` texts of ``length`` sentence rows of ``v``, each the best of ``pick`` random
    rows under ``key`` (``pick`` = 1: no choice), each row rated in its group by the layer's
    ``choice`` (its tanh ``score`` or its ``survival``)."""
    found = []
    for _ in range(texts):
        rows: list[int] = []
        for _ in range(length):
            cand = torch.randint(0, v.shape[0], (pick,), generator=rng)
            previous = v[rows[-1]] if rows else None
            rows.append(int(cand[choose(key, v[cand], previous, choice)]))
        found.append(rows)
    return found


def p_value(v: torch.Tensor, rows: list[int], key: SentenceKey) -> float:
    """The detector's sentence test of a text made of these sentence rows (all distinct and
    complete; the first in group 0)."""
    x = v[rows]
    groups = key.text_groups(x)
    return sentence_test(key.hits(x, groups), groups, x[:, key.dims] > 0, key.weights(x))


def hit_rate(v: torch.Tensor, texts: list[list[int]], key: SentenceKey) -> float:
    """The share of tested outputs on their target over the texts' sentences."""
    hits = total = 0
    for rows in texts:
        x = v[rows]
        groups = key.text_groups(x)
        hits += int(key.hits(x, groups).sum())
        total += x.shape[0] * key.bits
    return hits / total


def learnt_key(marked: torch.Tensor, human: torch.Tensor, like: SentenceKey) -> SentenceKey:
    """The spoofer's estimate: the ``like.bits`` outputs whose positive share differs most
    between marked and human sentences, with the sign of the difference (a global key, weighed
    as ``like`` weighs its hits)."""
    lean = (marked > 0).float().mean(0) - (human > 0).float().mean(0)
    dims = torch.argsort(lean.abs(), descending=True)[: like.bits]
    none = torch.zeros(0, dtype=torch.long)
    return SentenceKey(dims, none, (lean[dims] > 0)[None], margin=like.margin, power=like.power)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=353, help="held-out human texts to cut")
    parser.add_argument("--bits", type=int, default=16)
    parser.add_argument(
        "--context-bits", type=lambda x: [int(c) for c in x.split(",")], default=[0]
    )
    parser.add_argument("--keying", default="previous", help="previous or own (with c > 0)")
    parser.add_argument("--test", default="hits", help="hits or margin: the detector's test")
    parser.add_argument("--power", type=int, default=1, help="the margin weights' power")
    parser.add_argument("--choice", default="score", help="score or survival: the layer's rule")
    parser.add_argument("--candidates", type=int, default=4, help="N of the simulated generation")
    parser.add_argument("--sentences", type=int, default=7, help="sentences per text")
    parser.add_argument("--learn", type=lambda x: [int(n) for n in x.split(",")], default=[300])
    parser.add_argument(
        "--forge-candidates", type=lambda x: [int(n) for n in x.split(",")], default=[16]
    )
    parser.add_argument("--forged", type=int, default=200, help="forged and baseline texts")
    parser.add_argument(
        "--redraw",
        type=float,
        default=1.0,
        help="share of each group's targets drawn anew from group 0's (1: independent groups)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--heldout", type=Path, default=HELDOUT, help="held-out corpus")
    return parser


def sentence_outputs(wm: Watermark, texts: int, heldout: Path = HELDOUT) -> torch.Tensor:
    """The mapper outputs of the distinct complete sentences of ``texts`` held-out human texts
    (a news or wiki document's ~200 generator tokens after its first two sentences)."""
    sentences = []
    for unit in units(heldout, wm.tokenizer, ["news", "wiki"], 150, 200)[:texts]:
        text = unit["human"]
        sentences += [text[a:b] for a, b, done in sentence_spans(text) if done]
    sentences = list(dict.fromkeys(sentences))
    print(f"embedding {len(sentences)} distinct held-out sentences", file=sys.stderr, flush=True)
    semantic = wm.core.semantic
    return semantic.outputs(semantic.embed(sentences, progress=True)).float().cpu()


def forged_rows(
    args: argparse.Namespace,
    key: SentenceKey,
    pools: tuple[torch.Tensor, ...],
    marked: list[list[int]],
    rng: torch.Generator,
) -> Iterator[dict]:
    """Per number of marked texts learnt from and of forge candidates: how the spoofer's key
    compares with ``key`` and how often the real test flags his forged texts."""
    pool_marked, pool_own, pool_forge = pools
    for learn in args.learn:
        seen = torch.cat([pool_marked[rows] for rows in marked[:learn]])
        guess = learnt_key(seen, pool_own, key)
        right = set(guess.dims.tolist()) & set(key.dims.tolist())
        for pick in args.forge_candidates:
            forged = chain(pool_forge, guess, args.forged, args.sentences, pick, rng, args.choice)
            forged_p = [p_value(pool_forge, rows, key) for rows in forged]
            yield {
                "learnt_from_texts": learn,
                "learnt_sentences": int(seen.shape[0]),
                "keyed_outputs_found": len(right),
                "forge_candidates": pick,
                "forged_hit_rate": round(hit_rate(pool_forge, forged, key), 4),
                "forged_p<0.01": sum(p < 0.01 for p in forged_p) / len(forged_p),
                "forged_p_median": sorted(forged_p)[len(forged_p) // 2],
            }


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints JSON lines per context width (``wm``: the watermark whose SE, SM and key are
    read, instead of the shipped default)."""
    args = _parser().parse_args(argv)
    wm = wm or Watermark.load(WatermarkConfig.default())
    v = sentence_outputs(wm, args.texts, args.heldout)
    order = torch.randperm(len(v), generator=torch.Generator().manual_seed(args.seed))
    pools = tuple(v[p] for p in torch.tensor_split(order, 3))  # marked / spoofer's / forging
    pool_marked, _, pool_forge = pools
    secret, num_dims = wm.config.secret_keys()[0], wm.core.semantic.num_dims
    for context in args.context_bits:
        key = SentenceKey.of(
            secret, num_dims, args.bits, context, args.keying, args.test, args.power
        )
        key = shared_targets(key, args.redraw, args.seed)
        rng = torch.Generator().manual_seed(args.seed + 1)
        n = max(args.learn)
        marked = chain(pool_marked, key, n, args.sentences, args.candidates, rng, args.choice)
        marked_p = [p_value(pool_marked, rows, key) for rows in marked]
        base = chain(pool_forge, key, args.forged, args.sentences, 1, rng)
        base_p = [p_value(pool_forge, rows, key) for rows in base]
        row = {
            "context_bits": context,
            "keying": args.keying,
            "test": args.test,
            "power": args.power,
            "choice": args.choice,
            "bits": args.bits,
            "candidates": args.candidates,
            "redraw": args.redraw,
        }
        print(
            json.dumps(
                {
                    **row,
                    "what": "simulated marked texts and the human baseline",
                    "marked_texts": n,
                    "marked_hit_rate": round(hit_rate(pool_marked, marked, key), 4),
                    "marked_p<0.01": sum(p < 0.01 for p in marked_p) / n,
                    "marked_p_median": sorted(marked_p)[n // 2],
                    "human_hit_rate": round(hit_rate(pool_forge, base, key), 4),
                    "human_p<0.01": sum(p < 0.01 for p in base_p) / len(base_p),
                }
            ),
            flush=True,
        )
        for forged in forged_rows(args, key, pools, marked, rng):
            print(json.dumps({**row, **forged}), flush=True)


if __name__ == "__main__":
    main()
