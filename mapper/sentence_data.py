"""`SentenceDataModule`: the sentence mapper's data, as embedding batches.

Three kinds of rows, each from the train or val split only (the held-out rows of the seeds are
for measurement, never read here):

* **rewrite pairs**: each sentence of a passage (cut as detection cuts it,
  :func:`~watermark.sentences.spans.sentence_spans`) and the sentence of the 1.5B model's rewrite
  nearest to it by the embedder's cosine, from ``data/sentence-key/rewrites.jsonl.gz``: rewrites
  whose MPNet similarity and facts kept pass ``min_similarity`` / ``min_facts``; plus, with
  ``corpus_pairs``, the corpus's own augmentations of a sentence (SmolLM2's paraphrases);
* **pools**: the candidates the generator samples after one prefix
  (``data/sentence-key/pools.jsonl.gz``);
* **human sentences** of the training corpus, for the balance, distance and decorrelation
  terms and for unrelated pairs.

Every distinct text is embedded once (:func:`mapper.embedding_cache.embed_corpus`, cached on
disk). A training step is ``pools_per_batch`` pools, ``pairs_per_batch`` pairs and
``sentences_per_batch`` sentences drawn with torch's global RNG (seeded by the run); validation
draws its steps once from a fixed generator, and scores the whole val split at each epoch's end
(``val_eval``).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from mapper.corpus import load_corpus
from mapper.embedding_cache import embed_corpus
from mapper.sentence_metrics import nearest
from watermark.config.paths import resolve_path
from watermark.models.loaders import EMBEDDER_DIMS, embedder_dim, load_embedder
from watermark.sentences.spans import sentence_spans

log = logging.getLogger(__name__)
SPLITS = ("train", "val")


@dataclass
class Split:
    """One split's rows (indices into the embedding table)."""

    pairs: list[tuple[int, int]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # of each pair: forced, round_trip, ...
    pools: list[list[int]] = field(default_factory=list)
    sentences: list[int] = field(default_factory=list)
    docs: list[str] = field(default_factory=list)  # of each sentence
    corpus_from: int = 0  # pairs from here on are the corpus's augmentations, not rewrites


def complete_sentences(text: str) -> list[str]:
    """The complete sentences of ``text``, as detection cuts them."""
    return [text[a:b] for a, b, done in sentence_spans(text) if done]


class Steps(Dataset):
    """``steps`` batches drawn from one split (``fixed``: the same draws every epoch)."""

    def __init__(self, dm: SentenceDataModule, split: Split, steps: int, fixed: bool) -> None:
        self.dm, self.split, self.steps = dm, split, steps
        self.drawn = (
            [self.draw(torch.Generator().manual_seed(i)) for i in range(steps)] if fixed else None
        )

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return self.drawn[i] if self.drawn is not None else self.draw(None)

    def draw(self, gen: torch.Generator | None) -> dict[str, torch.Tensor]:
        dm, split = self.dm, self.split
        pick = lambda n, k: torch.randint(n, (k,), generator=gen).tolist()  # noqa: E731
        pools = [split.pools[i] for i in pick(len(split.pools), dm.pools_per_batch)]
        pairs = [split.pairs[i] for i in pick(len(split.pairs), dm.pairs_per_batch)]
        rows = [split.sentences[i] for i in pick(len(split.sentences), dm.sentences_per_batch)]
        emb = dm.emb
        return {
            "u_pool": emb[[r for p in pools for r in p]],
            "pool": torch.tensor([k for k, p in enumerate(pools) for _ in p], dtype=torch.long),
            "u_a": emb[[a for a, _ in pairs]],
            "u_b": emb[[b for _, b in pairs]],
            "u": emb[rows],
        }


class SentenceDataModule(L.LightningDataModule):
    """The sentence mapper's batches (module docstring).

    ``steps_class`` draws them (`Steps`: embeddings; a subclass may draw other rows).

    Args:
        rewrites: the rewrite seed (gzip JSONL of :mod:`data.sentence_rewrites` records).
        pools: the pool seed (gzip JSONL of :mod:`data.candidate_pools` records).
        corpus: the training corpus (its train / val sentences and their augmentations).
        embedder: sentence embedder: ``minilm``, ``mpnet``, a local folder or a hub id.
        min_similarity: a rewrite's MPNet similarity to its passage, at least.
        min_facts: the share of the passage's names and numbers a rewrite keeps, at least.
        corpus_pairs: corpus augmentation kinds also used as rewrite pairs (e.g. paraphrase).
        max_corpus_sentences: human training sentences used (a fixed subset; None: all).
        pools_per_batch, pairs_per_batch, sentences_per_batch: rows of a step.
        steps_per_epoch: training steps per epoch; validation draws a tenth of it, fixed.
        cache_dir: embedding cache folder (default: ~/.cache/adaptive-watermark/embeddings).
        embed_batch_size: batch size when computing embeddings.
    """

    steps_class: type[Steps] = Steps

    def __init__(
        self,
        rewrites: str = "data/sentence-key/rewrites.jsonl.gz",
        pools: str = "data/sentence-key/pools.jsonl.gz",
        corpus: str = "data/corpus/sentences.jsonl.gz",
        embedder: str = "minilm",
        min_similarity: float = 0.85,
        min_facts: float = 0.8,
        corpus_pairs: list[str] | None = None,
        max_corpus_sentences: int | None = 6000,
        pools_per_batch: int = 8,
        pairs_per_batch: int = 128,
        sentences_per_batch: int = 128,
        steps_per_epoch: int = 200,
        cache_dir: str | None = None,
        embed_batch_size: int = 64,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.corpus, self.embedder, self.cache_dir = corpus, embedder, cache_dir
        self.rewrites_path, self.pools_path = rewrites, pools
        self.min_similarity, self.min_facts = min_similarity, min_facts
        self.corpus_pairs = list(corpus_pairs or [])
        self.max_corpus_sentences = max_corpus_sentences
        self.pools_per_batch, self.pairs_per_batch = pools_per_batch, pairs_per_batch
        self.sentences_per_batch, self.steps_per_epoch = sentences_per_batch, steps_per_epoch
        self.embed_batch_size = embed_batch_size
        self.emb: torch.Tensor | None = None
        self.texts: list[str] = []  # every distinct text, a row of ``emb`` each

    @property
    def embedding_dim(self) -> int:
        """Width of the embedder's output."""
        if self.emb is not None:
            return int(self.emb.shape[1])
        if self.embedder in EMBEDDER_DIMS:
            return EMBEDDER_DIMS[self.embedder]
        return embedder_dim(load_embedder(self.embedder))

    def _read(self, name: str) -> list[dict]:
        path = Path(resolve_path(name))
        if not path.is_file():
            raise FileNotFoundError(
                f"{name} not found: build the sentence mapper's data with `python -m "
                "data.sentence_key` (a clone holds the committed seeds in data/sentence-key/)"
            )
        return load_corpus(path)

    def _sources(self) -> tuple[list[dict], list[dict], list[dict]]:
        """The train / val rows of the three files (rewrites passing the meaning checks)."""
        rewrites = [
            r
            for r in self._read(self.rewrites_path)
            if r["split"] in SPLITS
            and r["rewrite"]
            and (r.get("similarity") or 0) >= self.min_similarity
            and (r.get("facts_kept") or 0) >= self.min_facts
        ]
        pools = [r for r in self._read(self.pools_path) if r["split"] in SPLITS]
        corpus = [r for r in self._read(self.corpus) if r.get("split") in SPLITS]
        train = [r for r in corpus if r["split"] == "train"]
        if self.max_corpus_sentences is not None and len(train) > self.max_corpus_sentences:
            ranked = sorted(train, key=lambda r: hashlib.sha1(r["id"].encode()).hexdigest())
            keep = {r["id"] for r in ranked[: self.max_corpus_sentences]}  # a fixed subset
            corpus = [r for r in corpus if r["split"] == "val" or r["id"] in keep]
        return rewrites, pools, corpus

    def prepare_data(self) -> None:
        """Computes and caches the embeddings (runs on one process only)."""
        embed_corpus(
            self._texts(*self._sources()), self.embedder, self.cache_dir, self.embed_batch_size
        )

    def _texts(self, rewrites: list[dict], pools: list[dict], corpus: list[dict]) -> list[str]:
        seen: dict[str, None] = {}
        for r in rewrites:
            for text in complete_sentences(r["text"]) + complete_sentences(r["rewrite"]):
                seen.setdefault(text, None)
        for r in pools:
            for text in r["candidates"]:
                if text:
                    seen.setdefault(text, None)
        for r in corpus:
            for text in [r["text"]] + [t for kind in self.corpus_pairs for t in r.get(kind, [])]:
                seen.setdefault(text, None)
        return list(seen)

    def setup(self, stage: str | None = None) -> None:
        """Embeds every text (from the cache), aligns each rewrite's sentences and builds the
        splits, the centre and the validation set."""
        if self.emb is not None:
            return
        rewrites, pools, corpus = self._sources()
        texts = self._texts(rewrites, pools, corpus)
        self.emb = embed_corpus(texts, self.embedder, self.cache_dir, self.embed_batch_size)
        self.texts = texts
        row = {t: i for i, t in enumerate(texts)}
        self.splits = {name: Split() for name in SPLITS}
        for r in rewrites:
            a, b = complete_sentences(r["text"]), complete_sentences(r["rewrite"])
            if a and b:
                rows_a, rows_b = [row[t] for t in a], [row[t] for t in b]
                near = nearest(self.emb[rows_a], self.emb[rows_b]).tolist()
                self.splits[r["split"]].pairs += [(x, rows_b[j]) for x, j in zip(rows_a, near)]
                self.splits[r["split"]].kinds += [r["kind"]] * len(rows_a)
        for split in self.splits.values():
            split.corpus_from = len(split.pairs)
        for r in pools:
            found = [row[t] for t in r["candidates"] if t]
            if len(found) >= 2:
                self.splits[r["split"]].pools.append(found)
        for r in corpus:
            split = self.splits[r["split"]]
            split.sentences.append(row[r["text"]])
            split.docs.append(r["doc"])
            for kind in self.corpus_pairs:
                split.pairs += [(row[r["text"]], row[t]) for t in r.get(kind, [])]
                split.kinds += [kind] * len(r.get(kind, []))
        train = self.emb[self.splits["train"].sentences]
        self.center = train.mean(0)
        gen = torch.Generator().manual_seed(0)
        sample = train[torch.randperm(len(train), generator=gen)[:4000]]
        self.distance_upper = float(torch.cdist(sample, sample).max())
        for name, split in self.splits.items():
            candidates = sum(map(len, split.pools))
            log.info(
                "sentence data %s: %d pairs, %d pools (%d candidates), %d sentences",
                name,
                len(split.pairs),
                len(split.pools),
                candidates,
                len(split.sentences),
            )

    def eval_set(self, split: str = "val", unrelated: int = 2000) -> dict:
        """What the epoch-end metrics read of a split: its pairs' embeddings by kind, its pools'
        embeddings, ``unrelated`` pairs of sentences of different documents, and each
        document's first sentences as a text."""
        part, emb = self.splits[split], self.emb
        gen = torch.Generator().manual_seed(1234)
        pairs: dict[str, list[tuple[int, int]]] = {}
        for pair, kind in zip(part.pairs, part.kinds):
            pairs.setdefault(kind, []).append(pair)
        i = torch.randint(len(part.sentences), (3 * unrelated,), generator=gen).tolist()
        j = torch.randint(len(part.sentences), (3 * unrelated,), generator=gen).tolist()
        other = [(a, b) for a, b in zip(i, j) if part.docs[a] != part.docs[b]][:unrelated]
        rows = torch.tensor(part.sentences)
        by_doc: dict[str, list[int]] = {}
        for r, doc in zip(part.sentences, part.docs):
            by_doc.setdefault(doc, []).append(r)
        texts = [emb[rs[:8]] for rs in by_doc.values() if len(rs) >= 4]  # a text: 4-8 sentences
        return {
            "texts": texts,
            "pairs": {
                k: (emb[[a for a, _ in v]], emb[[b for _, b in v]]) for k, v in pairs.items()
            },
            "pools": [emb[p] for p in part.pools],
            "unrelated": (emb[rows[[a for a, _ in other]]], emb[rows[[b for _, b in other]]]),
            "sentences": emb[rows],
        }

    def train_dataloader(self) -> DataLoader:
        steps = self.steps_class(self, self.splits["train"], self.steps_per_epoch, fixed=False)
        return DataLoader(steps, batch_size=None, shuffle=False)

    def val_dataloader(self) -> DataLoader:
        count = max(1, self.steps_per_epoch // 10)
        steps = self.steps_class(self, self.splits["val"], count, fixed=True)
        return DataLoader(steps, batch_size=None, shuffle=False)
