"""The sentence layer's key space on held-out documents: how rewrites move a mapper's signs, how a
prefix's candidates spread, how unrelated sentences agree (a script printing JSON lines).

Reads the held-out rows of the sentence mapper's seeds (``data/sentence-key/``; none of them is
trained on or chosen with): the 1.5B model's forced rewrites of held-out passages, each
sentence paired with the rewrite's sentence nearest to it by the embedder, and the generator's
pools of 32 candidates after held-out prefixes. Unrelated pairs are sentences of different
held-out documents. One line per mapper (``--mappers``, folders; ``shipped``: the token level's
shipped mapper):

* ``agree``: sign agreement under the forced rewrite on every output, by margin bin (the margin
  test's margin) and on the outputs of 32 random keys of the robust setting (32 bits, 2 own
  context bits), with the share of outputs in each bin;
* ``spread``: the kept candidate of each pool under those keys (the layer's tanh score): its hit
  rate, its margin-weighted hit rate, its score in units of the score's spread over unrelated
  sentences, and the pools' lean; ``spread_unrelated``: the same for pools of as many held-out
  sentences drawn at random across documents (candidates that share no topic: the ceiling of
  best-of-N for this mapper);
* ``unrelated``: the mean and 95th percentile share of equal signs of unrelated sentences;
* ``centre``: the lever of reading a sentence against the 3 sentences before it (its embedding
  less ``centre`` times their mean), so that the topic shared by a text and by a prefix's
  candidates drops out; 0 reads sentences alone, as the layer does;
* ``lean``: how far the first 8 sentences of each held-out document agree on the keyed outputs,
  beside the same sentences dealt into texts at random (:func:`mapper.sentence_metrics.text_lean`:
  what takes the exact test's power).

    python research/sentence_key_space.py --mappers shipped,runs/sentence-minilm
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from data.sentence_rewrites import read_jsonl_gz  # noqa: E402
from mapper.sentence_data import complete_sentences  # noqa: E402
from mapper.sentence_metrics import (  # noqa: E402
    keys,
    nearest,
    pool_spread,
    rewrite_agreement,
    text_lean,
    unrelated_agreement,
)
from watermark.config.watermark_config import WatermarkConfig  # noqa: E402
from watermark.core.semantic import MappedEmbedder  # noqa: E402
from watermark.models.loaders import load_embedder  # noqa: E402
from watermark.models.semantic_mapper import SemanticMapper  # noqa: E402

SEEDS = ROOT / "data" / "sentence-key"


def held_out(seeds: Path, kind: str, min_similarity: float, min_facts: float):
    """(rewrite pairs as passage pairs, pools as (prefix sentences, candidates), texts as lists of
    sentences, one per held-out document)."""
    rows = [r for r in read_jsonl_gz(seeds / "rewrites.jsonl.gz") if r["split"] == "heldout"]
    passages = [
        (complete_sentences(r["text"]), complete_sentences(r["rewrite"]))
        for r in rows
        if r["kind"] == kind
        and r["rewrite"]
        and (r["similarity"] or 0) >= min_similarity
        and (r["facts_kept"] or 0) >= min_facts
    ]
    pools = [r for r in read_jsonl_gz(seeds / "pools.jsonl.gz") if r["split"] == "heldout"]
    pools = [(complete_sentences(p["prefix"]), [c for c in p["candidates"] if c]) for p in pools]
    docs = read_jsonl_gz(ROOT / "data" / "corpus" / "heldout.jsonl.gz")
    texts = [complete_sentences(r["text"].replace("\n", " "))[:8] for r in docs]
    passages = [(a, b) for a, b in passages if a and b]
    pools = [(before, c) for before, c in pools if len(c) >= 2]
    return passages, pools, [t for t in texts if len(t) >= 4]


class Reader:
    """Mapper outputs of sentences read in their context: with ``centre`` > 0 a sentence's
    embedding loses ``centre`` times the mean embedding of the ``window`` sentences before it
    (the topic a text's sentences and a prefix's candidates share), then is scaled back to unit
    length; the first sentence of a text is read as it is."""

    def __init__(self, mapped: MappedEmbedder, centre: float, window: int = 3) -> None:
        self.mapped, self.centre, self.window = mapped, centre, window

    def embed(self, texts: list[str]) -> torch.Tensor:
        return torch.nn.functional.normalize(self.mapped.embed(texts), dim=1)

    def read(self, items: list[tuple[list[str], str]]) -> tuple[torch.Tensor, torch.Tensor]:
        """(the sentences' own embeddings (n, E), outputs (n, D) of the centred ones) of
        sentences given with the sentences before them."""
        contexts = [before[-self.window :] if self.centre > 0 else [] for before, _ in items]
        unique = list(dict.fromkeys([s for _, s in items] + [c for cs in contexts for c in cs]))
        e = self.embed(unique)
        row = {s: n for n, s in enumerate(unique)}
        own = e[[row[s] for _, s in items]]
        u = own.clone()
        for i, cs in enumerate(contexts):
            if cs:
                c = e[[row[x] for x in cs]].mean(0)
                u[i] = torch.nn.functional.normalize(u[i] - self.centre * c, dim=0)
        return own, self.mapped.outputs(u).cpu()

    def text(self, sentences: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        return self.read([(sentences[:i], s) for i, s in enumerate(sentences)])


def measure(reader: Reader, passages, pools, texts, count: int) -> dict:
    """The four kinds of figures for one mapper (module docstring)."""
    tested = keys(reader.mapped.num_dims, count)
    va, vb = [], []
    for a, b in passages:
        (ua, oa), (ub, ob) = reader.text(a), reader.text(b)
        va.append(oa)
        vb.append(ob[nearest(ua, ub)])
    read = [reader.text(t)[1] for t in texts]
    v = torch.cat(read)
    doc = torch.cat([torch.full((len(t),), n) for n, t in enumerate(texts)])
    gen = torch.Generator().manual_seed(0)
    i, j = (torch.randint(len(v), (4000,), generator=gen) for _ in range(2))
    i, j = i[doc[i] != doc[j]], j[doc[i] != doc[j]]
    pool_v = [reader.read([(before, c) for c in cands])[1] for before, cands in pools]
    size = max(len(p) for p in pool_v)
    apart = v[torch.randperm(len(v), generator=gen)][: len(pool_v) * size].split(size)
    return {
        "agree": rewrite_agreement(torch.cat(va), torch.cat(vb), tested),
        "spread": pool_spread(pool_v, v, tested),
        "spread_unrelated": pool_spread(list(apart), v, tested),
        **unrelated_agreement(v[i], v[j]),
        "lean": text_lean(read, tested),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mappers", default="shipped", help="comma-separated folders, or shipped")
    parser.add_argument("--seeds", type=Path, default=SEEDS)
    parser.add_argument("--kind", default="forced", help="the rewrite: forced (the attack)")
    parser.add_argument("--keys", type=int, default=32)
    parser.add_argument("--min-similarity", type=float, default=0.85)
    parser.add_argument("--min-facts", type=float, default=0.8)
    parser.add_argument(
        "--centre", type=float, nargs="+", default=[0.0], help="context centring (0: off)"
    )
    args = parser.parse_args()
    torch.set_num_threads(2)
    passages, pools, texts = held_out(args.seeds, args.kind, args.min_similarity, args.min_facts)
    shipped = WatermarkConfig.default()
    embedder = load_embedder(shipped.models.embedder)
    for name in args.mappers.split(","):
        folder = shipped.mapper_dir() if name == "shipped" else Path(name)
        mapped = MappedEmbedder(embedder, SemanticMapper.from_pretrained(folder), batch_size=64)
        for centre in args.centre:
            found = measure(Reader(mapped, centre), passages, pools, texts, args.keys)
            row = {"mapper": name, "centre": centre, "passages": len(passages), **found}
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
