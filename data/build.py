"""Build the offline training corpus for the Semantic Mapping Model: ``python -m data.build``.

Steps: read the gensim news and Wikipedia text (:mod:`data.sources`), split documents into
held-out / train / val (:mod:`data.splits`), paraphrase all val and part of the train sentences with
SmolLM2 (:mod:`data.paraphrase`, cached and resumable), add rule-based shortened, expanded and
synonym-swapped variants (:mod:`data.augment`, :mod:`data.expansion`), and write

* ``data/corpus/sentences.jsonl.gz`` - train/val sentences with their augmentations,
* ``data/corpus/heldout.jsonl.gz`` - held-out documents / passages,
* ``data/corpus/stats.json`` and ``data/corpus/BUILD.md``.

Everything is deterministic given ``--seed``; gzip files are written with a fixed mtime.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import random
import time
from collections import Counter
from pathlib import Path

import torch

from data.augment import WORD
from data.sources import load_documents
from data.splits import HELDOUT, TRAIN, VAL, assign_splits, heldout_passages

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "data" / "corpus"
DEFAULT_CACHE = ROOT / ".cache" / "data" / "paraphrases.jsonl"
KINDS = ("paraphrase", "shortened", "expanded", "synonym")


def write_jsonl_gz(path: Path, records: list[dict]) -> None:
    """Write records as gzip JSONL with a fixed header mtime (byte-identical rebuilds)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with (
        open(tmp, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz,
    ):
        for record in records:
            gz.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
    tmp.replace(path)


def sentence_records(docs: list, splits: dict[str, str]) -> list[dict]:
    """One record per train/val sentence, in document order, with empty augmentation lists."""
    records = []
    for doc in docs:
        split = splits[doc.doc]
        if split == HELDOUT:
            continue
        for index, text in enumerate(doc.sentences):
            record = {"id": f"{doc.doc}-s{index:03d}", "doc": doc.doc, "source": doc.source}
            record.update({"split": split, "text": text})
            record.update({kind: [] for kind in KINDS})
            records.append(record)
    return records


def paraphrase_selection(
    records: list[dict], limit: int, seed: int, max_train_words: int = 0
) -> list[dict]:
    """All val sentences, then train sentences in a seeded order, up to ``limit`` in total.

    Train sentences longer than ``max_train_words`` words are skipped (0: no cap); long
    sentences cost the LLM several times more than short ones.
    """
    val = [r for r in records if r["split"] == VAL]
    train = [r for r in records if r["split"] == TRAIN]
    random.Random(f"{seed}:paraphrase").shuffle(train)
    if max_train_words:
        train = [r for r in train if len(r["text"].split()) <= max_train_words]
    return (val + train)[: max(0, limit)]


def add_paraphrases(records: list[dict], args: argparse.Namespace) -> dict:
    """Fill ``paraphrase`` lists from the cache, running the LLM first unless ``--no-llm``."""
    from data.paraphrase import BAN_FIRST, PLAIN, cached_result, read_cache, run_paraphrases

    chosen = paraphrase_selection(
        records, args.paraphrase_limit, args.seed, args.paraphrase_max_words
    )
    info: dict = {"requested": len(chosen), "batch_size": args.batch_size}
    info["max_train_words"] = args.paraphrase_max_words
    if not args.no_llm:
        torch.manual_seed(args.seed)
        if args.threads:
            torch.set_num_threads(args.threads)
        start = time.perf_counter()
        run_paraphrases(
            [(r["id"], r["text"]) for r in chosen], args.cache, batch_size=args.batch_size
        )
        info["wall_seconds_this_run"] = round(time.perf_counter() - start, 1)
    cache = read_cache(args.cache)
    for record in records:
        found = cached_result(cache, record["id"], record["text"])
        if found:
            record["paraphrase"] = [found]
    for mode in (PLAIN, BAN_FIRST):
        info[f"attempted_{mode}"] = sum(1 for r in records if (r["id"], mode) in cache)
    info["accepted"] = sum(1 for r in records if r["paraphrase"])
    return info


def add_rule_augmentations(records: list[dict], seed: int) -> None:
    """Fill ``shortened``, ``expanded`` and ``synonym`` lists (seeded per sentence id)."""
    from tqdm import tqdm

    from data.augment import shorten
    from data.expansion import expand
    from data.synonyms import Thesaurus

    counts = Counter(w.lower() for r in records for w in WORD.findall(r["text"]))
    thesaurus = Thesaurus.load(frequencies=counts)
    for record in tqdm(records, desc="augment", unit="sent"):
        rng = random.Random(f"{seed}:{record['id']}")
        record["shortened"] = shorten(record["text"], rng)
        record["expanded"] = expand(record["text"], rng, thesaurus.vocabulary)
        record["synonym"] = thesaurus.variants(record["text"], rng)


def count_stats(records: list[dict], heldout: list[dict], paraphrase_info: dict) -> dict:
    """Counts per split, source and augmentation kind."""
    stats: dict = {"sentences": {}, "documents": {}, "augmentations": {}, "heldout": {}}
    for split in (TRAIN, VAL):
        subset = [r for r in records if r["split"] == split]
        for source in ("news", "wiki"):
            part = [r for r in subset if r["source"] == source]
            stats["sentences"][f"{split}/{source}"] = len(part)
            stats["documents"][f"{split}/{source}"] = len({r["doc"] for r in part})
            for kind in KINDS:
                key = f"{split}/{source}/{kind}"
                stats["augmentations"][key] = sum(len(r[kind]) for r in part)
    for source in ("news", "wiki"):
        part = [h for h in heldout if h["source"] == source]
        stats["heldout"][f"{source}/passages"] = len(part)
        stats["heldout"][f"{source}/passages_150w"] = sum(
            len(h["text"].split()) >= 150 for h in part
        )
        stats["heldout"][f"{source}/documents"] = len({h["doc"].split("-p")[0] for h in part})
    stats["paraphrase"] = paraphrase_info
    return stats


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="paraphrase cache")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--paraphrase-limit",
        type=int,
        default=4500,
        help="sentences to paraphrase: all val sentences first, then seeded train sentences",
    )
    parser.add_argument(
        "--paraphrase-max-words",
        type=int,
        default=25,
        help="paraphrase only train sentences of at most this many words (0: any length)",
    )
    parser.add_argument("--batch-size", type=int, default=32, help="LLM batch size")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument(
        "--no-llm", action="store_true", help="skip the LLM; reuse cached paraphrases"
    )
    parser.add_argument(
        "--llm-only", action="store_true", help="only fill the paraphrase cache, write nothing"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Build the corpus."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    start = time.perf_counter()
    docs = load_documents()
    splits = assign_splits(docs, seed=args.seed)
    records = sentence_records(docs, splits)
    paraphrase_info = add_paraphrases(records, args)
    if args.llm_only:
        print(json.dumps(paraphrase_info, indent=2))
        return
    add_rule_augmentations(records, args.seed)
    heldout = [p for d in docs if splits[d.doc] == HELDOUT for p in heldout_passages(d)]
    write_jsonl_gz(args.out / "sentences.jsonl.gz", records)
    write_jsonl_gz(args.out / "heldout.jsonl.gz", heldout)
    stats = count_stats(records, heldout, paraphrase_info)
    stats["seed"] = args.seed
    (args.out / "stats.json").write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n")
    elapsed = time.perf_counter() - start
    print(json.dumps(stats, indent=2, sort_keys=True))
    print(f"Wrote {args.out} in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
