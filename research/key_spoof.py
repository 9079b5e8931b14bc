"""Spoofers against sentence keys drawn by place or per text, beside today's key (issue 96; a
simulation printing JSON lines).

As in :mod:`research.sentence_spoof`, marked texts are simulated from held-out human
sentences: each of a text's ``--sentences`` sentences is the best of ``--candidates`` under
the key (:func:`research.common.choose`, the layer's rule), from a pool of sentences the
spoofer never sees. The spoofer sees ``--learn`` marked texts and human text of his own, never
the key; he forges ``--forged`` texts from a third pool, each sentence the best of M
(``--forge-candidates``) under his estimate; the real test (the product's exact
:func:`~watermark.sentences.significance.sentence_test`, each sentence in its cell) flags a
forgery at p < 0.01 (with K keys per text, K min p < 0.01, as key rotation tests).

Keyings (:data:`KEYINGS`), each over ``--keys`` secrets:

* ``today``: 2 own context bits, 4 groups (the robust config); the spoofer learns one global
  lean (:func:`research.sentence_spoof.learnt_key`), as measured until now.
* ``position``: sentence i's targets drawn from the key and i; the spoofer sorts the marked
  sentences by their public place and learns a set per place.
* ``position+bit``: a place's targets also depend on one secret own output (2 sets a place);
  the spoofer learns a set per place.
* ``per-text K``: one of K keys drawn per text (each its own outputs and targets); the spoofer
  clusters the marked texts by their leans (k-means on the mean signs of their sentences, less
  his human mean) into K groups and learns a key per cluster; ``oracle`` spoofers know each
  text's key (the bound of any clustering).
* ``per-text K x position``: both; the texts are clustered on their signs by place.

    python -m research.key_spoof --keys 5 --learn 300 --forge-candidates 4,64,256
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from research.common import choose
from research.sentence_spoof import HELDOUT, learnt_key, sentence_outputs
from watermark.api import Watermark
from watermark.config.watermark_config import WatermarkConfig
from watermark.sentences.key import SentenceKey
from watermark.sentences.significance import sentence_test

NORMAL = torch.distributions.Normal(0.0, 1.0)
SCREEN = 0.2  # the exact test runs where the normal reading's p is below this


@dataclass(frozen=True)
class Keying:
    """``cells``: ``group`` (today's), ``one``, ``position`` or ``position+bit``; ``texts_keys``
    K keys per text; ``oracle``: the spoofer knows each marked text's key."""

    name: str
    cells: str
    texts_keys: int = 1
    oracle: bool = False


KEYINGS = [
    Keying("today (2 own context bits)", "group"),
    Keying("one target set", "one"),
    Keying("position", "position"),
    Keying("position + secret output", "position+bit"),
    Keying("per-text 4, one set", "one", 4),
    Keying("per-text 4, one set, oracle clusters", "one", 4, True),
    Keying("per-text 16, one set", "one", 16),
    Keying("per-text 4 x position", "position", 4),
    Keying("per-text 4 x position, oracle clusters", "position", 4, True),
    Keying("per-text 16 x position", "position", 16),
]


class PlaceKey:
    """A key of one keying: per place (one place for ``group`` and ``one``) a
    :class:`SentenceKey` with that place's targets, all on the same tested outputs."""

    def __init__(self, keying: Keying, secret: str, dims: int, bits: int, places: int) -> None:
        context = {"group": 2, "position+bit": 1}.get(keying.cells, 0)
        self.base = SentenceKey.of(secret, dims, bits, context, "own", "margin")
        self.positional = keying.cells.startswith("position")
        seed = hashlib.sha256(f"{secret}|places".encode()).digest()[:8]
        rng = torch.Generator().manual_seed(int.from_bytes(seed, "little"))
        shape = (places, len(self.base.targets), bits)
        drawn = torch.randint(0, 2, shape, generator=rng).bool()
        self.targets = drawn if self.positional else self.base.targets[None]  # (P, G, b)
        self.places = [replace(self.base, targets=t) for t in self.targets]

    def at(self, i: int) -> SentenceKey:
        return self.places[i] if self.positional else self.places[0]

    def read(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """A text of sentences x (n, D) in order: each one's cell (its place and its own
        group), hits, positive tested outputs and weights."""
        groups = self.base.text_groups(x)
        place = torch.arange(len(x)) if self.positional else torch.zeros(len(x), dtype=torch.long)
        positive = x[:, self.base.dims] > 0
        hits = positive == self.targets[place, groups]
        return groups + len(self.base.targets) * place, hits, positive, self.base.weights(x)

    def z(self, x: torch.Tensor) -> float:
        """The normal reading of the test: sum w (2 hit - 1) / sqrt(sum over cells and outputs
        of (the cell's signed weights)^2) (mean 0, variance 1 over keys)."""
        cells, hits, positive, w = self.read(x)
        signed = w.double() * (2 * positive.double() - 1)
        sums = torch.zeros(int(cells.max()) + 1, signed.shape[1], dtype=torch.float64)
        sums.index_add_(0, cells, signed)
        return float((w.double() * (2 * hits.double() - 1)).sum() / sums.norm().clamp_min(1e-12))

    def p_value(self, x: torch.Tensor) -> float:
        """The product's exact test of a text of sentences x (n, D) in order, each in its
        cell."""
        cells, hits, positive, w = self.read(x)
        return sentence_test(hits, cells, positive, w)


def write(v: torch.Tensor, keys: list, texts: int, length: int, pick: int, rng) -> list:
    """``texts`` texts of ``length`` rows of v, each row the best of ``pick`` random rows
    under the text's key (a :class:`PlaceKey` or a spoofer's per-place list), the key of text
    t being ``keys[t % len(keys)]``."""
    found = []
    for t in range(texts):
        key, rows = keys[t % len(keys)], []
        for i in range(length):
            cand = torch.randint(0, v.shape[0], (pick,), generator=rng)
            place = key.at(i) if isinstance(key, PlaceKey) else key[min(i, len(key) - 1)]
            rows.append(int(cand[choose(place, v[cand])]))
        found.append(rows)
    return found


def clusters(features: torch.Tensor, k: int, rng, rounds: int = 30, starts: int = 8):
    """k-means of the rows of ``features`` (n, F) by cosine, the best of ``starts``: (n,)."""
    x, k = torch.nn.functional.normalize(features, dim=1), min(k, len(features))
    best, best_fit = torch.zeros(len(x), dtype=torch.long), -1.0
    for _ in range(starts):
        centres = x[torch.randperm(len(x), generator=rng)[:k]]
        for _ in range(rounds):
            label = (x @ centres.T).argmax(1)
            centres = torch.stack(
                [x[label == c].mean(0) if (label == c).any() else centres[c] for c in range(k)]
            )
            centres = torch.nn.functional.normalize(centres, dim=1)
        fit = float((x @ centres.T).max(1).values.sum())
        if fit > best_fit:
            best, best_fit = label, fit
    return best


def spoofer_keys(keying: Keying, v: torch.Tensor, marked: list, labels, human, like, length):
    """Per learnt cluster, the spoofer's key: a list of per-place :class:`SentenceKey`
    (one entry without places), each his global lean estimate (``learnt_key``)."""
    found = []
    for c in labels.unique().tolist():
        texts = [rows for rows, label in zip(marked, labels.tolist()) if label == c]
        if keying.cells.startswith("position"):
            found.append([learnt_key(v[[r[i] for r in texts]], human, like) for i in range(length)])
        else:
            found.append([learnt_key(v[[r for rows in texts for r in rows]], human, like)])
    return found


def measure(args, keying: Keying, secret: str, pools, rng) -> dict:
    """One key's figures: the marked and human texts' p < 0.01 and the forgeries' per M."""
    marked_pool, own, forge = pools
    dims = marked_pool.shape[1]
    keys = [
        PlaceKey(keying, f"{secret}/{k}", dims, args.bits, args.sentences)
        for k in range(keying.texts_keys)
    ]

    def flagged(v: torch.Tensor, texts: list) -> float:
        """The share flagged at K min p < 0.01; the exact test only where the normal reading
        gives p < SCREEN (a key whose z is below cannot reach 0.01 / K)."""
        found = 0
        for rows in texts:
            near = [k for k in keys if NORMAL.cdf(torch.tensor(-k.z(v[rows]))) < SCREEN]
            found += any(len(keys) * k.p_value(v[rows]) < 0.01 for k in near)
        return found / len(texts)

    marked = write(marked_pool, keys, args.learn, args.sentences, args.candidates, rng)
    human = write(forge, keys, args.forged, args.sentences, 1, rng)
    truth = torch.arange(args.learn) % len(keys)
    if keying.oracle or len(keys) == 1:
        labels = truth
    else:
        signs = torch.stack([(marked_pool[rows] > 0).float() for rows in marked])  # (T, L, D)
        lean = signs - (own > 0).float().mean(0)
        features = lean.flatten(1) if keying.cells.startswith("position") else lean.mean(1)
        labels = clusters(features, len(keys), rng)
    learnt = spoofer_keys(keying, marked_pool, marked, labels, own, keys[0].base, args.sentences)
    line = {
        "marked_p<0.01": flagged(marked_pool, marked[: args.forged]),
        "human_p<0.01": flagged(forge, human),
        "cluster_purity": purity(labels, truth),
    }
    for pick in args.forge_candidates:
        forged = write(forge, learnt, args.forged, args.sentences, pick, rng)
        line[f"forged_p<0.01_M{pick}"] = flagged(forge, forged)
    return line


def purity(labels: torch.Tensor, truth: torch.Tensor) -> float:
    """The share of texts whose cluster's most common key is their own."""
    right = 0
    for c in labels.unique():
        right += int(torch.bincount(truth[labels == c]).max())
    return right / len(labels)


def _parser() -> argparse.ArgumentParser:
    ints = lambda x: [int(n) for n in x.split(",")]  # noqa: E731
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--texts", type=int, default=353, help="held-out human texts to cut")
    parser.add_argument("--bits", type=int, default=32)
    parser.add_argument("--candidates", type=int, default=8, help="N of the marked texts")
    parser.add_argument("--sentences", type=int, default=7, help="sentences per text")
    parser.add_argument("--learn", type=int, default=300, help="marked texts the spoofer sees")
    parser.add_argument("--forge-candidates", type=ints, default=[4, 64, 256])
    parser.add_argument(
        "--forged",
        type=int,
        default=100,
        help="forged and human texts (and marked texts tested) per key",
    )
    parser.add_argument("--keys", type=int, default=5, help="secrets per keying")
    parser.add_argument("--only", default="", help="keyings whose name holds this")
    parser.add_argument("--heldout", type=Path, default=HELDOUT, help="held-out corpus")
    parser.add_argument("--cache", type=Path, default=None, help="the sentence outputs' file")
    return parser


def main(argv: list[str] | None = None, wm: Watermark | None = None) -> None:
    """Prints a line per keying and key, then a line per keying with the means over keys."""
    args = _parser().parse_args(argv)
    wm = wm or Watermark.load(WatermarkConfig.default())
    if args.cache is not None and args.cache.exists():
        v = torch.load(args.cache)
    else:
        v = sentence_outputs(wm, args.texts, args.heldout)
        if args.cache is not None:
            args.cache.parent.mkdir(parents=True, exist_ok=True)
            torch.save(v, args.cache)
    order = torch.randperm(len(v), generator=torch.Generator().manual_seed(0))
    pools = tuple(v[p] for p in torch.tensor_split(order, 3))  # marked / spoofer's / forging
    for keying in [k for k in KEYINGS if args.only in k.name]:
        lines = []
        for k in range(args.keys):
            rng = torch.Generator().manual_seed(k)
            line = measure(args, keying, f"spoof-{k}", pools, rng)
            lines.append(line)
            print(json.dumps({"keying": keying.name, "key": k, **line}), flush=True)
        mean = {f: round(sum(x[f] for x in lines) / len(lines), 4) for f in lines[0]}
        print(json.dumps({"keying": keying.name, "keys": args.keys, "mean": mean}), flush=True)
        print(f"{keying.name}: done", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
