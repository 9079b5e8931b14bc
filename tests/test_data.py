"""Tests for the offline corpus builder (data/): splitting, augmentations, splits, corpus files."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import pytest

from data.augment import MIN_KEEP, expand, shorten
from data.loaders import load_corpus
from data.paraphrase import clean_paraphrase
from data.sources import Document, clean_wiki_paragraph, keep_sentence, split_sentences
from data.splits import HELDOUT, TRAIN, VAL, assign_splits, heldout_passages
from data.synonyms import Thesaurus

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"
SENTENCES = [
    "The government said on Tuesday that it would spend $3.5 million on new bushfire defences.",
    "Lithium, the lightest of the alkali metals, is the only metal which reacts with nitrogen.",
    "In 2009, President Karzai created two anti-corruption units within the Interior Ministry.",
    "Hoping for another victory, on October 4 Washington mounted a surprise assault at Germantown.",
    "The victim was hit in the upper body (police said) and died about three hours later.",
    "Volunteers hope to clean up the last of the oil at Phillip Island today, officials say.",
]


# --------------------------------------------------------------------------- sentence splitter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Mr. Smith met Dr. Jones. They talked.",
            ["Mr. Smith met Dr. Jones.", "They talked."],
        ),
        (
            "The U.S. Senate voted. It passed 3.5 to 1.",
            ["The U.S. Senate voted.", "It passed 3.5 to 1."],
        ),
        (
            "Lee surrendered to Ulysses S. Grant in 1865. Robert E. Lee went home.",
            ["Lee surrendered to Ulysses S. Grant in 1865.", "Robert E. Lee went home."],
        ),
        ("Prices rose 2.5% in Jan. and fell later.", ["Prices rose 2.5% in Jan. and fell later."]),
        (
            'He said "stop!" Then he left. Was it over? Yes.',
            ['He said "stop!"', "Then he left.", "Was it over?", "Yes."],
        ),
        (
            "He moved to the U.S. The move was hard.",
            ["He moved to the U.S.", "The move was hard."],
        ),
        ("It ends at 4 p.m. on Friday.", ["It ends at 4 p.m. on Friday."]),
    ],
)
def test_split_sentences_tricky_cases(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_keep_sentence_filters_length_and_junk() -> None:
    assert keep_sentence("The council will meet again next week to discuss the plan.")
    assert not keep_sentence("Too short to keep.")
    assert not keep_sentence(" ".join(["word"] * 61) + ".")
    assert not keep_sentence("lower case start is not a sentence we keep here at all.")
    assert not keep_sentence("The table | has pipes | and other | junk in it, sadly.")


def test_clean_wiki_paragraph_strips_markup_and_drops_lists() -> None:
    raw = "'''Albedo''' () is the ''reflection coefficient'' of a surface. " + "word " * 40
    cleaned = clean_wiki_paragraph(raw)
    assert cleaned is not None and "'" not in cleaned and "()" not in cleaned
    assert cleaned.startswith("Albedo is the reflection coefficient")
    assert clean_wiki_paragraph("* a list item " + "word " * 50) is None
    assert clean_wiki_paragraph("Short paragraph.") is None


# --------------------------------------------------------------------------- augmentations


@pytest.mark.parametrize("sentence", SENTENCES)
def test_shortened_removes_words_and_keeps_most(sentence: str) -> None:
    out = shorten(sentence, random.Random(0))
    assert len(out) == 1
    n_in, n_out = len(sentence.split()), len(out[0].split())
    assert n_out < n_in
    assert n_out >= MIN_KEEP * n_in
    assert out[0][0].isupper() and out[0].endswith(".")


def test_shortened_is_empty_when_nothing_is_removable() -> None:
    assert shorten("Cats sleep a lot.", random.Random(0)) == []


@pytest.mark.parametrize("sentence", SENTENCES)
def test_expanded_adds_words(sentence: str) -> None:
    out = expand(sentence, random.Random(1))
    assert len(out) == 1
    assert len(out[0].split()) > len(sentence.split())
    assert out[0].endswith((".", "!", "?"))


def test_expanded_varies_with_seed_and_is_deterministic() -> None:
    sentence = SENTENCES[0]
    variants = {expand(sentence, random.Random(seed))[0] for seed in range(20)}
    assert len(variants) > 3
    assert expand(sentence, random.Random(7)) == expand(sentence, random.Random(7))


@pytest.fixture(scope="module")
def tiny_thesaurus() -> Thesaurus:
    pairs = {
        "government": ["administration", "regime"],
        "administration": ["government", "regime"],
        "regime": ["government", "administration"],
        "spend": ["expend", "disburse"],
        "expend": ["spend", "disburse"],
        "disburse": ["spend", "expend"],
        "defences": ["protections"],
        "new": ["novel", "fresh"],
        "novel": ["new", "fresh"],
        "fresh": ["new", "novel"],
    }
    return Thesaurus(pairs)


def test_synonym_swap_changes_some_words_deterministically(tiny_thesaurus: Thesaurus) -> None:
    sentence = SENTENCES[0]
    first = tiny_thesaurus.variants(sentence, random.Random(3))
    again = tiny_thesaurus.variants(sentence, random.Random(3))
    assert first == again and len(first) == 1
    before, after = sentence.split(), first[0].split()
    assert len(before) == len(after)
    changed = sum(a != b for a, b in zip(before, after))
    assert 1 <= changed <= len(before) // 2
    assert after[0] == "The" and after[-1] == "defences."  # stopwords and one-way entries kept


def test_synonym_swap_keeps_capitalisation(tiny_thesaurus: Thesaurus) -> None:
    out = tiny_thesaurus.variants("Government plans were new and costly overall.", random.Random(0))
    assert out and out[0].split()[0] in {"Government", "Administration", "Regime"}
    assert tiny_thesaurus.variants("Nothing here matches at all.", random.Random(0)) == []


# --------------------------------------------------------------------------- paraphrase cleanup


def test_clean_paraphrase_rejects_copies_and_meta_answers() -> None:
    src = "The victim was hit in the stomach and died three hours later in hospital."
    good = "Struck in the stomach, the victim died in hospital three hours afterwards."
    assert clean_paraphrase(good, src) == good
    assert clean_paraphrase(f'"{good}"\nExplanation: ...', src) == good
    assert clean_paraphrase(f"Here is the paraphrased sentence: {good}", src) == good
    assert clean_paraphrase(src.upper(), src) is None
    assert clean_paraphrase("", src) is None
    assert clean_paraphrase("Died.", src) is None
    assert clean_paraphrase("The sentence can be rephrased as follows:", src) is None
    assert clean_paraphrase(clean_paraphrase(good, src) or "", src) == good


# --------------------------------------------------------------------------- splits


def _fake_docs() -> list[Document]:
    docs = [Document(f"news-lee-{i:03d}", "news", ["x"], sentences=["s"] * 6) for i in range(5)]
    docs += [Document(f"news-bg-{i:03d}", "news", ["x"], sentences=["s"] * 7) for i in range(40)]
    docs += [
        Document(f"wiki-{i}", "wiki", ["x"], sentences=["s"] * (20 + 7 * i)) for i in range(30)
    ]
    return docs


def test_split_is_by_document_and_deterministic() -> None:
    docs = _fake_docs()
    split = assign_splits(docs, seed=0, heldout_news_background=10, min_val_sentences=200)
    assert split == assign_splits(docs, seed=0, heldout_news_background=10, min_val_sentences=200)
    assert set(split) == {d.doc for d in docs}
    assert all(split[d.doc] == HELDOUT for d in docs if d.doc.startswith("news-lee-"))
    assert sum(split[d.doc] == HELDOUT for d in docs if d.doc.startswith("news-bg-")) == 10
    val = [d for d in docs if split[d.doc] == VAL]
    assert sum(len(d.sentences) for d in val) >= 200
    assert {d.source for d in val} == {"news", "wiki"}
    assert any(split[d.doc] == TRAIN for d in docs)
    assert split != assign_splits(docs, seed=1, heldout_news_background=10, min_val_sentences=200)


def test_heldout_passages_have_bounded_length() -> None:
    sentence = "The river rose quickly after a week of heavy rain in the hills. "
    paragraphs = [sentence * n for n in (3, 5, 30, 2, 8, 4)]
    doc = Document("wiki-1", "wiki", [p.strip() for p in paragraphs])
    passages = heldout_passages(doc)
    assert len(passages) >= 3
    assert len({p["doc"] for p in passages}) == len(passages)
    lengths = [len(p["text"].split()) for p in passages]
    assert all(150 <= n <= 300 + 13 for n in lengths[:-1])
    assert sum(lengths) == sum(len(p.split()) for p in paragraphs)
    news = Document("news-bg-001", "news", ["One article."])
    expected = [{"doc": "news-bg-001", "source": "news", "text": "One article."}]
    assert heldout_passages(news) == expected


def test_load_corpus_missing_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="python -m data.build"):
        load_corpus(tmp_path / "nope.jsonl.gz")


def test_sentence_compression_loader_maps_pairs(tmp_path: Path, monkeypatch) -> None:
    import datasets

    from data.loaders import load_sentence_compression, write_corpus

    rows = [
        {"set": ["The mayor of the city said on Monday that taxes will rise.", "Taxes will rise."]},
        {"set": ["Same sentence twice.", "Same sentence twice."]},
    ]
    monkeypatch.setattr(datasets, "load_dataset", lambda name, split: rows)
    records = load_sentence_compression(val_fraction=0.0)
    assert [r["shortened"] for r in records] == [["Taxes will rise."], []]
    assert {r["split"] for r in records} == {"train"}
    assert records[0]["paraphrase"] == [] and records[0]["doc"] == records[0]["id"]
    assert load_corpus(write_corpus(records, tmp_path / "sc.jsonl.gz")) == records


# --------------------------------------------------------------------------- committed corpus


@pytest.fixture(scope="module")
def corpus() -> tuple[list[dict], list[dict]]:
    if not (CORPUS / "sentences.jsonl.gz").is_file():
        pytest.skip("corpus not built yet (python -m data.build)")
    return load_corpus(CORPUS / "sentences.jsonl.gz"), load_corpus(CORPUS / "heldout.jsonl.gz")


def test_corpus_schema_and_counts(corpus: tuple[list[dict], list[dict]]) -> None:
    sentences, heldout = corpus
    keys = {"id", "doc", "source", "split", "text", "paraphrase", "shortened", "expanded"}
    for record in sentences:
        assert set(record) == keys | {"synonym"}
        assert record["source"] in {"wiki", "news"} and record["split"] in {TRAIN, VAL}
        assert all(isinstance(x, str) and x for k in ("paraphrase", "shortened") for x in record[k])
    assert len({r["id"] for r in sentences}) == len(sentences)
    val = [r for r in sentences if r["split"] == VAL]
    assert len(val) >= 1000 and len({r["doc"] for r in val}) >= 20
    assert {r["source"] for r in val} == {"wiki", "news"}
    assert sum(len(r["paraphrase"]) for r in sentences) >= 4000
    for kind in ("shortened", "expanded", "synonym"):
        assert sum(bool(r[kind]) for r in sentences) >= 0.6 * len(sentences)
    long_passages = [h for h in heldout if len(h["text"].split()) >= 150]
    assert len(long_passages) >= 300
    assert len({h["doc"] for h in heldout}) == len(heldout)


def test_corpus_splits_do_not_share_documents(corpus: tuple[list[dict], list[dict]]) -> None:
    sentences, heldout = corpus
    splits_of = defaultdict(set)
    for record in sentences:
        splits_of[record["doc"]].add(record["split"])
    assert all(len(s) == 1 for s in splits_of.values())
    heldout_docs = {h["doc"].split("-p")[0] for h in heldout}
    assert not heldout_docs & set(splits_of)
