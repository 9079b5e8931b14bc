"""Score an exported mapper on the validation split, side by side with the SimHash baseline.

Usage: `python -m mapper.compare checkpoints/mapper-minilm [--corpus PATH] [--markdown]`.
Prints one JSON object `{"mapper": {...}, "simhash": {...}}` (or a Markdown table) with the metrics
of `mapper.metrics.code_metrics` computed on the same pairs for both.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

import torch

from mapper.datamodule import MapperDataModule
from mapper.metrics import compare_to_simhash
from watermark.config.paths import resolve_path
from watermark.models.semantic_mapper import SemanticMapper

DEFAULT_CORPUS = "data/corpus/sentences.jsonl.gz"
ROWS = (
    ("sent_balance_p95", "per-sentence abs(frac+ - 0.5), p95", "<= 0.05"),
    ("dim_within_tol", "dims with frac+ in 0.5 +- 0.2", ">= 0.95"),
    ("agree_paraphrase", "agreement, LLM paraphrase", "SimHash + 0.02"),
    ("agree_shortened", "agreement, shortened", "SimHash + 0.02"),
    ("agree_expanded", "agreement, expanded", "SimHash + 0.02"),
    ("agree_synonym", "agreement, synonym swap", "-"),
    ("agree_same_doc", "agreement, same document", "-"),
    ("agree_unrelated", "agreement, unrelated (mean)", "~0.5"),
    ("agree_unrelated_p95", "agreement, unrelated (p95)", "<= 0.60"),
    ("spearman", "Spearman(emb. distance, Hamming)", ">= 0.8"),
)


@torch.no_grad()
def evaluate(
    mapper_dir: str, corpus: str | None = None, cache_dir: str | None = None
) -> dict[str, dict[str, float]]:
    """Metrics of the mapper in `mapper_dir` and of SimHash (same D and centre) on the val split."""
    mapper = SemanticMapper.from_pretrained(resolve_path(mapper_dir))
    # The same sentence selection as in training, so the embedding cache of the run is reused.
    ev = validation_set(mapper, corpus, cache_dir)
    return {
        **compare_to_simhash(mapper, ev.emb, ev.originals, ev.pairs),
        "val_sentences": {"count": float(len(ev.originals))},
    }


@torch.no_grad()
def sign_agreement(a: SemanticMapper, b: SemanticMapper, emb: torch.Tensor) -> float:
    """Share of (sentence, dimension) signs on which two mappers agree, on embeddings (N, E).

    Two mappers are the same key only where this is ~1: at 0.5 their green lists are unrelated.
    """
    return float(((a(emb) > 0) == (b(emb) > 0)).float().mean())


def validation_set(mapper: SemanticMapper, corpus: str | None, cache_dir: str | None = None):
    """The validation sentences, pairs and embeddings of ``mapper``'s training run (the
    data module's ``val_eval``; its embeddings come from the run's cache)."""
    settings = dict(mapper.config.extra.get("data", {}))
    settings.update(corpus=corpus or settings.get("corpus", DEFAULT_CORPUS))
    settings["embedder"] = mapper.config.embedder
    dm = MapperDataModule(**settings, cache_dir=cache_dir)
    dm.prepare_data()
    dm.setup("validate")
    if dm.val_eval is None:
        raise ValueError(f"corpus {settings['corpus']} has no validation sentences")
    return dm.val_eval


def markdown(result: dict[str, dict[str, float]]) -> str:
    """A Markdown table of `evaluate`'s result."""
    lines = ["| metric | mapper | SimHash | target |", "|---|---|---|---|"]
    for key, label, target in ROWS:
        m, s = result["mapper"].get(key), result["simhash"].get(key)
        if m is None:
            continue
        lines.append(f"| {label} | {m:.3f} | {s:.3f} | {target} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mapper_dir")
    parser.add_argument("--corpus", default=None, help="default: the corpus of the training run")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    result = evaluate(args.mapper_dir, args.corpus, args.cache_dir)
    print(markdown(result) if args.markdown else json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
