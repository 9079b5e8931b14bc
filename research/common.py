"""What the research modules share, each part calling the product's own functions.

* **Keys** (:func:`section_keys`): random keys of a config's ``sentences`` section, built by
  :meth:`~watermark.sentences.key.SentenceKey.of_section` as the layer builds its own.
* **Levers on the key the product does not have** (the replay and the spoofer read them):
  context groups that share most of their target signs (:func:`shared_targets`), and a
  sentence weighed by the chance that a rewrite kept its group (:func:`group_kept`).
* **The choice** (:func:`choose`): the candidate the layer keeps under a key, by
  :meth:`~watermark.sentences.key.SentenceKey.order` (what
  :meth:`~watermark.sentences.layer.SentenceLayer.choose` and ``rank`` apply), each candidate
  read after the sentence before it, as generation reads it.
* **Pools** (:func:`read_pools`): the candidate pools of ``data/sentence-key/pools.jsonl.gz``
  (a prefix of a document and the generator's next sentences), read by a layer's SE and SM,
  with the outputs of the prefix's last sentence, the candidates' predecessor.
* **The flip model** (:func:`rewrite_pairs`, :func:`flip_model`, :func:`rewritten`): each sign
  kept with the probability measured for its margin bin on rewrite pairs
  (``data/sentence-key/rewrites.jsonl.gz``: each original sentence paired with the sentence of
  its rewrite nearest to it in the SE, :func:`paired_sentences`).
* **Cached generations** (:func:`rewritten_texts`): the texts of one method in an evaluation
  store that an attack changed, with their rewrites.
* **Loading** (:func:`load_with_generator`): a config's watermark with its generator, as the
  modules that generate load it; each takes another loader (``load``), as the smoke tests give
  the tiny models.

A layer here is the product's :class:`~watermark.sentences.layer.SentenceLayer` (a loaded
watermark's ``sentences``); ``centre`` > 0 reads each sentence with context centring (its
embedding less ``centre`` times how far the mean embedding of the ``context`` sentences before it
sits from the mapper's centre), a research lever the product does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from data.sentence_rewrites import read_jsonl_gz
from evaluation.cache_keys import text_hash
from evaluation.store import Store
from mapper.sentence_data import complete_sentences
from mapper.sentence_metrics import kept_by_bin, nearest, rewrite_agreement
from watermark.api import Watermark
from watermark.config.sections import Sentences
from watermark.config.watermark_config import WatermarkConfig, as_config
from watermark.models.loaders import load_lm
from watermark.sentences.key import MARGIN_KEPT, Previous, SentenceKey, margin_bins, margins
from watermark.sentences.layer import SentenceLayer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "sentence-key"
Load = Callable[[WatermarkConfig | Path | None], Watermark]  # a config, a file or the default


def load_with_generator(config: WatermarkConfig | Path | None) -> Watermark:
    """The watermark of ``config`` (a config, a JSON file, ``None``: the shipped default)
    holding its generator, loaded by name (:func:`~watermark.models.loaders.load_lm`)."""
    cfg = as_config(config)
    model, tokenizer = load_lm(cfg.models.generator)
    return Watermark.load(cfg, tokenizer=tokenizer, generator=model)


def section_keys(settings: Sentences, count: int, num_dims: int) -> list[SentenceKey]:
    """``count`` random keys of the section's settings over ``num_dims`` outputs (fixed names,
    ``measure-<k>``, so that every key space is measured under the same secrets)."""
    return SentenceKey.of_section(settings, [f"measure-{k}" for k in range(count)], num_dims)


def shared_targets(key: SentenceKey, redraw: float, seed: int) -> SentenceKey:
    """``key`` with every group's targets equal to group 0's except a share ``redraw`` of them,
    drawn anew (so two groups agree on 1 - redraw / 2 of their signs, and a sentence read in
    another group than it was chosen in keeps 1 - redraw of its evidence instead of none)."""
    if redraw >= 1 or len(key.targets) == 1:
        return key
    rng = torch.Generator().manual_seed(seed)
    fresh = torch.rand(key.targets.shape, generator=rng) < redraw
    drawn = torch.randint(0, 2, key.targets.shape, generator=rng).bool()
    targets = torch.where(fresh, drawn, key.targets[:1].expand_as(key.targets))
    targets[0] = key.targets[0]
    return replace(key, targets=targets)


def group_kept(key: SentenceKey, v: torch.Tensor) -> torch.Tensor:
    """Float (N,): the chance that a rewrite kept the group of sentences with outputs v (N, D),
    the product of :data:`MARGIN_KEPT` of their context outputs' margin bins (1 without own
    context outputs): what a sentence's evidence is worth in expectation, so its weight."""
    if not key.own or key.context_dims.numel() == 0:
        return torch.ones(len(v))
    kept = torch.tensor(MARGIN_KEPT)
    return kept[margin_bins(margins(v))[:, key.context_dims]].prod(1)


def choose(
    key: SentenceKey, v: torch.Tensor, previous: Previous = None, choice: str = "score"
) -> int:
    """The index of the candidate (outputs v (N, D)) the layer keeps under ``key`` and
    ``choice``, each read after ``previous`` (see
    :meth:`~watermark.sentences.key.SentenceKey.candidate_groups`)."""
    return key.order(v, previous, choice)[0]


def before(sentences: list[str], i: int, context: int) -> list[str]:
    """The ``context`` sentences before the i-th."""
    return sentences[max(0, i - context) : i]


def read_outputs(
    layer: SentenceLayer, sentences: list[str], contexts: list[list[str]], centre: float = 0.0
) -> torch.Tensor:
    """Outputs (N, D) of ``sentences``; with ``centre`` > 0, context centring (module
    docstring), each sentence after its ``contexts`` entry (none for a text's first)."""
    if not centre:
        return layer.outputs(sentences)
    u = layer.semantic.embed(sentences).float()
    mid = layer.semantic.mapper.center.float().cpu()
    flat = [s for c in contexts for s in c]
    found = layer.semantic.embed(flat).float().cpu() if flat else torch.zeros(0, len(mid))
    shift, start = torch.zeros_like(u), 0
    for i, context in enumerate(contexts):
        if context:
            shift[i] = found[start : start + len(context)].mean(0) - mid
        start += len(context)
    return layer.semantic.outputs((u.cpu() - centre * shift).to(u.dtype)).float().cpu()


@dataclass
class Pool:
    """One prefix's candidates: their texts and outputs ``v`` (N, D), and ``previous``, the
    outputs (D,) of the prefix's last complete sentence (``None``: it has none)."""

    id: str
    doc: str
    prefix: str
    texts: list[str]
    v: torch.Tensor
    previous: torch.Tensor | None


def read_pools(
    layer: SentenceLayer,
    split: str,
    candidates: int = 0,
    centre: float = 0.0,
    context: int = 2,
    data: Path = DATA,
) -> list[Pool]:
    """The ``split`` pools with at least 2 candidates (at most the first ``candidates``; 0:
    all), in the file's order, read by ``layer`` after their prefix."""
    rows = [r for r in read_jsonl_gz(Path(data) / "pools.jsonl.gz") if r["split"] == split]
    pools = []
    for r in rows:
        texts = [c for c in r["candidates"] if c][: candidates or None]
        if len(texts) < 2:
            continue
        prefix = complete_sentences(r["prefix"])
        prior = [before(prefix, len(prefix), context)] * len(texts)
        v = read_outputs(layer, texts, prior, centre)
        previous = None
        if prefix:
            last = before(prefix, len(prefix) - 1, context)
            previous = read_outputs(layer, prefix[-1:], [last], centre)[0]
        pools.append(Pool(r["id"], r["doc"], r["prefix"], texts, v, previous))
    return pools


def paired_sentences(
    layer: SentenceLayer, pairs: Sequence[tuple[str, str]], context: int = 2
) -> dict:
    """The complete sentences of each (original, rewrite) text pair, each original sentence
    paired with the sentence of its rewrite nearest to it in the layer's SE: ``originals``,
    ``rewrites`` and their ``contexts`` (the ``context`` sentences before each in its own
    text), and ``merged``, the rewrite sentences nearest to more than one original."""
    found = {"originals": [], "rewrites": [], "original_contexts": [], "rewrite_contexts": []}
    merged = 0
    for text, rewrite in pairs:
        a, b = complete_sentences(text), complete_sentences(rewrite)
        if a and b:
            pick = nearest(layer.semantic.embed(a), layer.semantic.embed(b)).tolist()
            found["originals"] += a
            found["rewrites"] += [b[j] for j in pick]
            found["original_contexts"] += [before(a, i, context) for i in range(len(a))]
            found["rewrite_contexts"] += [before(b, j, context) for j in pick]
            merged += len(pick) - len(set(pick))
    return {**found, "merged": merged}


def rewrite_texts(kind: str, split: str, data: Path = DATA) -> list[tuple[str, str]]:
    """(passage, rewrite) of the ``split`` passages that the judge kept a ``kind`` rewrite of
    (``rewrites.jsonl.gz`` in ``data``)."""
    return [
        (r["text"], r["rewrite"])
        for r in read_jsonl_gz(Path(data) / "rewrites.jsonl.gz")
        if r["split"] == split and r["kind"] == kind and r.get("rewrite")
    ]


def rewrite_pairs(
    layer: SentenceLayer,
    kind: str,
    split: str,
    centre: float = 0.0,
    context: int = 2,
    data: Path = DATA,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs (P, D) of the ``split`` passages' complete sentences and of the sentence of
    their rewrite nearest to each, for rewrites of ``kind`` (each read in its own text)."""
    found = paired_sentences(layer, rewrite_texts(kind, split, data), context)
    v = read_outputs(layer, found["originals"], found["original_contexts"], centre)
    w = read_outputs(layer, found["rewrites"], found["rewrite_contexts"], centre)
    return v, w


def flip_model(v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The share of signs kept (4,) by margin bin of the originals, on pairs (v, w) (P, D)
    (:func:`mapper.sentence_metrics.kept_by_bin`)."""
    return torch.tensor(kept_by_bin(rewrite_agreement(v, w)))


def rewritten(v: torch.Tensor, kept: torch.Tensor, rng: torch.Generator) -> torch.Tensor:
    """v (n, D) with each sign flipped with probability 1 - kept[bin] of its margin bin."""
    stay = kept[margin_bins(margins(v))]
    flip = torch.rand(v.shape, generator=rng) > stay
    return torch.where(flip, -v, v)


def rewritten_texts(store: Store, method: str, attack: str) -> list[tuple[str, str]]:
    """(generated text, its rewrite) of every cached text of ``method`` (the generation cache
    key's prefix) that ``attack`` (the attack cache key's prefix) changed."""
    rewrites = store.table("attacks")
    found = []
    for key, rec in sorted(store.table("generations").items()):
        if key.startswith(method + "|"):
            done = rewrites.get(f"{attack}|{text_hash(rec['text'])}")
            if done and done["text"].strip() != rec["text"].strip():
                found.append((rec["text"], done["text"]))
    return found
