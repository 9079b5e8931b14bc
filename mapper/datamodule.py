"""`MapperDataModule`: corpus sentences with their augmented counterparts, as embedding batches.

The corpus (see `data/`) holds sentences with a `split` (train/val/heldout) and lists of augmented
texts per kind. Every distinct text is embedded once (`embed_corpus`, cached on disk); batches are
built from rows of that embedding table. A train batch is B source sentences plus one augmented
counterpart per kind for each; the validation set is also scored as a whole (`val_eval`).
"""

from __future__ import annotations

import hashlib
import logging
import random
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

from mapper.corpus import AUGMENTATION_KINDS as AUG_KINDS
from mapper.corpus import load_corpus
from mapper.embedding_cache import embed_corpus
from watermark.config.paths import resolve_path
from watermark.models.loaders import EMBEDDER_DIMS, embedder_dim, load_embedder

log = logging.getLogger(__name__)

TRAIN_KINDS = ("paraphrase", "shortened", "expanded")


@dataclass
class Item:
    """One source sentence: its embedding row and the rows of its augmentations, per kind."""

    row: int
    aug: dict[str, list[int]]


@dataclass
class ValEval:
    """Everything the held-out metrics need: embeddings, source rows and pairs by kind."""

    emb: torch.Tensor
    originals: torch.Tensor
    pairs: dict[str, tuple[torch.Tensor, torch.Tensor]]


def _stable_hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


class ItemDataset(Dataset):
    """Items of one split with augmentations of `kinds`; `fixed` picks the first of each kind."""

    def __init__(self, items: list[Item], kinds: list[str], fixed: bool = False) -> None:
        self.items = items
        self.kinds = kinds
        self.fixed = fixed

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[int, list[tuple[int, int]]]:
        item = self.items[i]
        augs = []
        for kind, name in enumerate(self.kinds):
            rows = item.aug.get(name, [])
            if rows:
                pick = 0 if self.fixed else int(torch.randint(len(rows), ()).item())
                augs.append((rows[pick], kind))
        return item.row, augs


class MapperDataModule(L.LightningDataModule):
    """Sentence-embedding batches for training the Semantic Mapping Model.

    Args:
        corpus: path of the corpus (gzip JSONL from `python -m data.build`).
        embedder: sentence embedder: `minilm`, `mpnet`, a local folder or a hub id.
        batch_size: source sentences per batch (each comes with its augmentations).
        aug_kinds: augmentation kinds trained on, among paraphrase, shortened, expanded, synonym
            (validation metrics always use every kind the corpus has).
        max_train_sentences: use at most this many training sentences (a fixed subset that
            prefers sentences with an LLM paraphrase); None uses all. Embedding time grows with it.
        cache_dir: embedding cache folder (default: ~/.cache/adaptive-watermark/embeddings).
        embed_batch_size: batch size when computing embeddings.
        val_pairs: number of unrelated and of same-document pairs drawn for validation metrics.
        pair_seed: seed of the validation pair draw.
        num_workers: DataLoader workers.
    """

    def __init__(
        self,
        corpus: str = "data/corpus/sentences.jsonl.gz",
        embedder: str = "minilm",
        batch_size: int = 128,
        aug_kinds: list[str] | None = None,
        max_train_sentences: int | None = None,
        cache_dir: str | None = None,
        embed_batch_size: int = 64,
        val_pairs: int = 4000,
        pair_seed: int = 1234,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.aug_kinds = list(aug_kinds) if aug_kinds is not None else list(TRAIN_KINDS)
        unknown = sorted(set(self.aug_kinds) - set(AUG_KINDS))
        if unknown:
            raise ValueError(f"unknown augmentation kinds {unknown}; known: {list(AUG_KINDS)}")
        self.save_hyperparameters()
        self.corpus = corpus
        self.max_train_sentences = max_train_sentences
        self.embedder = embedder
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.embed_batch_size = embed_batch_size
        self.val_pairs = val_pairs
        self.pair_seed = pair_seed
        self.num_workers = num_workers
        self.emb: torch.Tensor | None = None
        self._dim: int | None = None

    # -- corpus and embeddings ------------------------------------------------------------------
    def _records(self) -> list[dict]:
        corpus = resolve_path(self.corpus)
        if not Path(corpus).is_file():
            raise FileNotFoundError(
                f"corpus '{self.corpus}' not found: build it with `python -m data.build` or pass "
                "--data.corpus PATH (a clone holds the default corpus in data/corpus/)"
            )
        records = load_corpus(corpus)
        train = [r for r in records if r.get("split") == "train"]
        if not train:
            raise ValueError(f"corpus '{self.corpus}' has no sentences with split 'train'")
        if self.max_train_sentences is not None and len(train) > self.max_train_sentences:
            ranked = sorted(train, key=lambda r: (not r.get("paraphrase"), _stable_hash(r["id"])))
            keep = {id(r) for r in ranked[: self.max_train_sentences]}
            train = [r for r in train if id(r) in keep]
        return train + [r for r in records if r.get("split") == "val"]

    def _kinds(self, record: dict) -> list[str]:
        return self.aug_kinds if record["split"] == "train" else list(AUG_KINDS)

    def _texts(self, records: list[dict]) -> list[str]:
        seen: dict[str, None] = {}
        for r in records:
            seen.setdefault(r["text"], None)
            for kind in self._kinds(r):
                for text in r.get(kind, []):
                    seen.setdefault(text, None)
        return list(seen)

    @property
    def embedding_dim(self) -> int:
        """Width of the embedder's output (read without embedding the corpus where possible)."""
        if self._dim is None:
            if self.emb is not None:
                self._dim = self.emb.shape[1]
            elif self.embedder in EMBEDDER_DIMS:
                self._dim = EMBEDDER_DIMS[self.embedder]
            else:
                self._dim = embedder_dim(load_embedder(self.embedder))
        return self._dim

    def prepare_data(self) -> None:
        """Computes and caches the embeddings (runs on one process only)."""
        records = self._records()
        embed_corpus(self._texts(records), self.embedder, self.cache_dir, self.embed_batch_size)

    def setup(self, stage: str | None = None) -> None:
        """Loads the cached embeddings and builds train items and the validation set."""
        if self.emb is not None:
            return
        records = self._records()
        texts = self._texts(records)
        self.emb = embed_corpus(
            texts, self.embedder, self.cache_dir, self.embed_batch_size, self.embedding_dim
        )
        row = {t: i for i, t in enumerate(texts)}
        self.items: dict[str, list[Item]] = {"train": [], "val": []}
        self.docs: dict[str, list[str]] = {"train": [], "val": []}
        for r in records:
            aug = {k: [row[t] for t in r.get(k, [])] for k in self._kinds(r)}
            self.items[r["split"]].append(Item(row[r["text"]], aug))
            self.docs[r["split"]].append(r["doc"])
        train_rows = torch.tensor([it.row for it in self.items["train"]])
        self.center = self.emb[train_rows].mean(0)
        self.distance_upper = self._max_distance(self.emb[train_rows])
        self.val_eval = self._build_val_eval() if self.items["val"] else None
        log.info(
            "corpus: %d train / %d val sentences, %d texts, dim %d, max distance %.3f",
            len(self.items["train"]),
            len(self.items["val"]),
            len(texts),
            self.emb.shape[1],
            self.distance_upper,
        )

    @staticmethod
    def _max_distance(emb: torch.Tensor, sample: int = 4000) -> float:
        """U of the rescaling: the largest distance in a fixed sample of training embeddings."""
        gen = torch.Generator().manual_seed(0)
        idx = torch.randperm(emb.shape[0], generator=gen)[:sample]
        return float(torch.cdist(emb[idx], emb[idx]).max())

    def _build_val_eval(self) -> ValEval:
        items, docs = self.items["val"], self.docs["val"]
        rows: list[int] = [it.row for it in items]
        local = {r: i for i, r in enumerate(rows)}
        pairs: dict[str, tuple[list[int], list[int]]] = {}
        for kind in AUG_KINDS:
            a, b = [], []
            for i, it in enumerate(items):
                if it.aug.get(kind):
                    aug_row = it.aug[kind][0]
                    if aug_row not in local:
                        local[aug_row] = len(rows)
                        rows.append(aug_row)
                    a.append(i)
                    b.append(local[aug_row])
            if a:
                pairs[kind] = (a, b)
        rng = random.Random(self.pair_seed)
        by_doc: dict[str, list[int]] = {}
        for i, d in enumerate(docs):
            by_doc.setdefault(d, []).append(i)
        multi = [v for v in by_doc.values() if len(v) > 1]
        same = (
            [tuple(rng.sample(rng.choice(multi), 2)) for _ in range(self.val_pairs)]
            if multi
            else []
        )
        unrelated = []
        while len(unrelated) < self.val_pairs and len(by_doc) > 1:
            i, j = rng.randrange(len(items)), rng.randrange(len(items))
            if docs[i] != docs[j]:
                unrelated.append((i, j))
        pairs["same_doc"] = ([p[0] for p in same], [p[1] for p in same])
        pairs["unrelated"] = ([p[0] for p in unrelated], [p[1] for p in unrelated])
        return ValEval(
            emb=self.emb[torch.tensor(rows)],
            originals=torch.arange(len(items)),
            pairs={
                k: (torch.tensor(a, dtype=torch.long), torch.tensor(b, dtype=torch.long))
                for k, (a, b) in pairs.items()
            },
        )

    # -- loaders --------------------------------------------------------------------------------
    def _collate(self, batch: list[tuple[int, list[tuple[int, int]]]]) -> dict[str, torch.Tensor]:
        rows = torch.tensor([b[0] for b in batch])
        aug = [(r, kind, owner) for owner, (_, augs) in enumerate(batch) for r, kind in augs]
        aug_rows = torch.tensor([a[0] for a in aug], dtype=torch.long)
        return {
            "u": self.emb[rows],
            "u_aug": self.emb[aug_rows] if aug else self.emb.new_zeros(0, self.emb.shape[1]),
            "kind": torch.tensor([a[1] for a in aug], dtype=torch.long),
            "owner": torch.tensor([a[2] for a in aug], dtype=torch.long),
        }

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            ItemDataset(self.items["train"], self.aug_kinds),
            batch_size=self.batch_size,
            shuffle=True,
            drop_last=len(self.items["train"]) > self.batch_size,
            collate_fn=self._collate,
            num_workers=self.num_workers,
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(
            ItemDataset(self.items["val"], self.aug_kinds, fixed=True),
            batch_size=self.batch_size,
            collate_fn=self._collate,
            num_workers=self.num_workers,
        )
