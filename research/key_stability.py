"""Flip-rate diagnostic of semantic key designs: how many tokens each design tests, and how many of
the kept ones keep their green bit after a rewrite (a script; one JSON line per design and attack).

No watermarked generation is needed: a design's key is a function of the text, so the stability
of a kept token's bit can be read on any text and its rewrite. The texts are the evaluation's
unwatermarked generations of the first ``--texts`` units, attacked as the evaluation attacks them
(both cached in the evaluation's store, so a rerun costs only the embeddings).

A design is a key span and a margin:

* ``window:W``: the last W generated tokens at every step (the shipped ``embed_window``);
  ``prefix``: the prefix from its start (W = 0);
* ``sent:N:C``: the last N complete sentences known at the step, at most C tokens; before the
  first sentence end, the last 32 tokens. A sentence ends after a token whose piece ends with
  ``.!?`` (and closing quotes) when the next piece starts with whitespace, or after a line break;
  the end is known once that next token is in the prefix (:func:`sentence_ends`);
* margin q: a token is tested only if |v| of its mapper output is above the q-quantile of |v| at
  its step (q = 0: every scored token).

Per design: tested units per original text, the share of them kept (tested again in the rewrite),
the flip rate of kept units' bits, and (``by_cosine``) the kept units and their flip rate by the
cosine between the embeddings of the unit's key span before and after the rewrite. ``z_proj``
projects the mean z after the attack for a watermark whose tested tokens are green at rate
``--green`` before it, new units at 0.5.

Example::

    python research/key_stability.py --texts 32 --designs window:32,sent:1:64 --margins 0,0.5
    python research/key_stability.py --config configs/evaluation/matched.yaml --texts-of ours \
        --embedder mpnet --mapper checkpoints/mapper-mpnet --designs window:32 --margins 0
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.config import EvalConfig  # noqa: E402
from evaluation.run import Evaluation  # noqa: E402
from watermark.core.text import decode_ids, encode_text  # noqa: E402

_CLOSES = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")


def token_pieces(tokenizer: object, ids: Sequence[int]) -> list[str]:
    """Each token decoded on its own (what the rule reads; spaces and punctuation survive)."""
    return [
        tokenizer.decode([int(i)], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        for i in ids
    ]


def sentence_ends(pieces: Sequence[str]) -> list[int]:
    """Sentence ends of a text: the token counts n such that a sentence ends after token n - 1.

    Args:
        pieces: The text piece of each token (:func:`token_pieces`).

    Returns:
        Increasing counts n (1 <= n < len(pieces)): the tokens ``ids[:n]`` end a sentence and the
        end is known from step n + 2 on (once token n, 0-based, is in the prefix).
    """
    ends = []
    for j in range(len(pieces) - 1):
        piece, following = pieces[j], pieces[j + 1]
        if "\n" in piece or (_CLOSES.search(piece.rstrip(" ")) and following[:1].isspace()):
            ends.append(j + 1)
    return ends


def anchor_span(ends: Sequence[int], step: int, sentences: int, cap: int) -> tuple[int, int]:
    """Token span ``[a, b)`` of the prefix S_{0:t-1} that step t embeds under a sentence anchor.

    The last ``sentences`` complete sentences known at step t, at most their last ``cap``
    tokens. Before the first known end the span is empty (``(0, 0)``): the caller decides what
    such steps do.

    Args:
        ends: :func:`sentence_ends` of the text (ends past the prefix are ignored).
        step: The 1-based step t.
        sentences: How many complete sentences to embed (>= 1).
        cap: At most this many tokens (the last ones of the span).
    """
    known = bisect.bisect_right(ends, step - 2)  # an end n is known once n + 1 <= t - 1
    if known == 0:
        return 0, 0
    b = ends[known - 1]
    a = ends[known - 1 - sentences] if known > sentences else 0
    return max(a, b - cap), b


ATTACKS = {
    "paraphrase": {"kind": "paraphrase", "strength": 1.0},
    "para_syn_0.5": {"kind": "paraphrase_synonym", "strength": 0.5},
    "para_syn_1.0": {"kind": "paraphrase_synonym", "strength": 1.0},
}


def spans(design: str, tokenizer: object, ids: list[int], steps: list[int]) -> list[tuple]:
    """Key span ``[a, b)`` of each step under a design."""
    kind, *args = design.split(":")
    if kind == "window":
        w = int(args[0])
        return [(max(0, t - 1 - w), t - 1) for t in steps]
    if kind == "prefix":
        return [(0, min(t - 1, 512)) for t in steps]
    n, cap = int(args[0]), int(args[1])
    ends = sentence_ends(token_pieces(tokenizer, ids))
    out = []
    for t in steps:
        a, b = anchor_span(ends, t, n, cap)
        out.append((a, b) if b > 0 else (max(0, t - 1 - 32), t - 1))
    return out


class Keys:
    """Embeddings u and mapper outputs v of key texts, embedded once per process."""

    def __init__(self, wm: object) -> None:
        self.wm, self.cache = wm, {}

    def values(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(u, v)``: float (N, E) embeddings and float (N, D) mapper outputs of the texts."""
        new = sorted({t for t in texts if t not in self.cache})
        if new:
            semantic = self.wm.core.semantic
            with torch.inference_mode():
                u = semantic.embed(new)
                self.cache.update(zip(new, zip(u, semantic.mapper(u))))
        found = [self.cache[t] for t in texts]
        return torch.stack([f[0] for f in found]), torch.stack([f[1] for f in found])


def units(wm, keys: Keys, gate_cache: dict, text: str, design: str, q: float) -> dict:
    """Tested units of one text: token id -> (green bit, embedding of its key span)."""
    tok = wm.tokenizer
    ids = encode_text(tok, text)
    if text not in gate_cache:
        gate_cache[text] = wm.core.text_gate(ids).gated
    gated = gate_cache[text]
    seen, steps = set(), []
    for t in range(1, len(ids) + 1):  # fresh only: first occurrence, if scored
        if ids[t - 1] not in seen and bool(gated[t - 1]):
            steps.append(t)
        seen.add(ids[t - 1])
    if not steps:
        return {}
    u, v = keys.values([decode_ids(tok, ids[a:b]) for a, b in spans(design, tok, ids, steps)])
    dims = wm.token_maps[0][torch.tensor([ids[t - 1] for t in steps])]
    val = v.gather(1, dims[:, None])[:, 0]
    keep = torch.ones_like(val, dtype=torch.bool)
    if q > 0:
        keep = val.abs() > torch.quantile(v.abs(), q, dim=1)
    return {ids[t - 1]: (bool(x > 0), e) for t, x, e, k in zip(steps, val, u, keep) if k}


COSINE_BINS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99)


def flips_by_cosine(pairs: list[tuple]) -> dict:
    """Share of kept units and their flip rate per bin of the cosine between the key spans'
    embeddings before and after the rewrite; ``pairs``: (bit before, bit after, cosine)."""
    out = {}
    for lo, hi in zip(COSINE_BINS, (*COSINE_BINS[1:], 1.01)):
        inside = [a != b for a, b, c in pairs if lo <= c < hi]
        out[f"{lo}-{min(hi, 1.0)}"] = {
            "share": round(len(inside) / max(1, len(pairs)), 3),
            "flip_rate": round(sum(inside) / max(1, len(inside)), 3),
        }
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs/evaluation/eval.yaml"))
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--designs", default="window:32,prefix,sent:1:64,sent:2:96")
    parser.add_argument("--margins", default="0,0.5,0.75")
    parser.add_argument("--attacks", default="paraphrase,para_syn_0.5")
    parser.add_argument("--green", type=float, default=0.85)
    parser.add_argument("--alpha", type=float, help="entropy gate (default: the shipped one)")
    parser.add_argument(
        "--texts-of",
        default="unwatermarked",
        help="the method whose cached generations are read (e.g. ours, whose "
        "rewrites configs/evaluation/matched.yaml caches)",
    )
    parser.add_argument("--embedder", help="sentence embedder (with --mapper; default: shipped)")
    parser.add_argument("--mapper", help="mapper folder trained on that embedder's outputs")
    return parser


def design_row(
    wm,
    keys: Keys,
    gates: dict,
    originals: list[str],
    attacked: list[str],
    design: str,
    q: float,
    g: float,
) -> dict:
    """One design's and margin's figures on the texts and their rewrites, for a watermark whose
    tested tokens are green at rate ``g``."""
    n_orig = n_att = 0
    pairs = []  # per kept unit: bit before, bit after, cosine of the key spans
    for a, b in zip(originals, attacked):
        before = units(wm, keys, gates, a, design, q)
        after = units(wm, keys, gates, b, design, q)
        n_orig, n_att = n_orig + len(before), n_att + len(after)
        pairs += [
            (
                before[u][0],
                after[u][0],
                float(torch.cosine_similarity(before[u][1], after[u][1], dim=0)),
            )
            for u in after
            if u in before
        ]
    n, kept = len(originals), len(pairs)
    f = sum(x != y for x, y, _ in pairs) / max(1, kept)
    green_after = kept * (g * (1 - f) + (1 - g) * f) + (n_att - kept) * 0.5
    z_after = (green_after - n_att / 2) / math.sqrt(n_att / 4) / math.sqrt(n)
    return {
        "design": design,
        "margin": q,
        "texts": n,
        "alpha": wm.config.scheme.alpha,
        "units_original": round(n_orig / n, 1),
        "units_attacked": round(n_att / n, 1),
        "kept_of_original": round(kept / max(1, n_orig), 3),
        "kept_of_attacked": round(kept / max(1, n_att), 3),
        "flip_rate": round(f, 3),
        "z_orig_proj": round((2 * g - 1) * math.sqrt(n_orig / n), 2),
        "z_proj": round(z_after, 2),
        "by_cosine": flips_by_cosine(pairs),
    }


def main() -> None:
    args = _parser().parse_args()
    ev = Evaluation(EvalConfig.load(args.config))
    overrides = {k: getattr(args, k) for k in ("alpha", "embedder", "mapper") if getattr(args, k)}
    wm = ev.ours_variant(**overrides).wm if overrides else ev.method("ours").wm
    unit_list = ev.all_units[: args.texts]
    originals = [g["text"] for g in ev.generations(ev.method(args.texts_of), unit_list)]
    humans = [u["human"] for u in unit_list]
    keys, gates = Keys(wm), {}
    for attack in args.attacks.split(","):
        attacked = ev.attacked(ATTACKS[attack], originals, humans)
        for design in args.designs.split(","):
            for q in map(float, args.margins.split(",")):
                row = design_row(wm, keys, gates, originals, attacked, design, q, args.green)
                print(json.dumps({"attack": attack, **row}), flush=True)


if __name__ == "__main__":
    main()
