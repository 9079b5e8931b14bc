"""Offline English text sources and the sentence splitter.

The text comes from gensim's test data folder (``gensim/test/test_data/``), which ships with the
``gensim`` wheel:

* ``lee_background.cor`` - 300 ABC news articles, one per line;
* ``lee.cor`` - 50 more ABC news articles;
* a shortened English Wikipedia dump, read with ``gensim.corpora.wikicorpus.extract_pages`` and
  ``filter_wiki`` and cleaned of leftover markup, lists, tables and references.

Every source is returned as :class:`Document` objects with stable ids, in a fixed order.
"""

from __future__ import annotations

import bz2
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

WIKI_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
MIN_PARAGRAPH_WORDS = 40
MIN_SENTENCE_WORDS = 8
MAX_SENTENCE_WORDS = 60


@dataclass
class Document:
    """One source document.

    Attributes:
        doc: Stable document id, e.g. ``news-bg-007`` or ``wiki-25``.
        source: ``"news"`` or ``"wiki"``.
        paragraphs: Cleaned paragraphs, in reading order.
        group: Name of the file (news) or the article title (wiki).
    """

    doc: str
    source: str
    paragraphs: list[str]
    group: str = ""
    sentences: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The full document text, paragraphs joined with newlines."""
        return "\n".join(self.paragraphs)


def gensim_test_data() -> Path:
    """Return gensim's test data folder."""
    import gensim

    return Path(gensim.__file__).parent / "test" / "test_data"


# --------------------------------------------------------------------------- sentence splitting

# Abbreviations after which a period does not end a sentence (compared lower-case, without ".").
_ABBREVIATION_TEXT = """
    mr mrs ms dr prof st jr sr gen col lt sgt capt cpt maj adm gov sen rep rev hon pres
    fr sir mt ft no nos vol vols pp ch fig figs ed eds vs etc inc ltd co corp bros dept univ
    jan feb mar apr jun jul aug sep sept oct nov dec approx est ca cf al op"""
_ABBREVIATIONS = frozenset(_ABBREVIATION_TEXT.split())
# Words that very likely start a new sentence after a dotted abbreviation such as "U.S." or "p.m.".
_STARTER_TEXT = """
    the a an he she it they we i you his her its their our this that these those there
    but and so yet however meanwhile in on at after before when while if as since although
    mr mrs ms dr police officials authorities"""
_STARTERS = frozenset(_STARTER_TEXT.split())
_DOTTED = re.compile(r"(?:[A-Za-z]\.){2,}$")
_CANDIDATE = re.compile(r"([.!?]+)([\"'\u201d\u2019)\]]*)(\s+)(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")


def _ends_with_abbreviation(before: str, next_word: str) -> bool:
    """Whether the period closing ``before`` belongs to an abbreviation, not a sentence end."""
    last = before.rsplit(None, 1)[-1] if before.strip() else ""
    last = last.lstrip("\"'(\u201c[")
    if not last.endswith("."):
        return False
    stem = last[:-1]
    if _DOTTED.search(last):  # U.S. / p.m. / e.g.: ambiguous, split only before a clear starter
        return next_word.lower().strip("\"'(\u201c") not in _STARTERS
    if len(stem) == 1 and stem.isalpha():  # an initial, as in "Ulysses S. Grant"
        return True
    return stem.lower() in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """Split running text into sentences.

    Boundaries are ``.``, ``!`` or ``?`` (optionally followed by closing quotes or brackets),
    then whitespace, then an upper-case letter, a digit or an opening quote. A period does not end
    a sentence after a known abbreviation ("Mr.", "Dr.", "Jan."), after a single-letter initial
    ("Robert E. Lee"), or after a dotted abbreviation ("U.S.", "p.m.") unless the next word is a
    typical sentence opener. Decimals ("3.5") never match, as no space follows their period.

    Args:
        text: A paragraph of text.

    Returns:
        The sentences, stripped, in order.
    """
    text = re.sub(r"\s+", " ", text).strip()
    sentences: list[str] = []
    start = 0
    for match in _CANDIDATE.finditer(text):
        end = match.end(2)
        rest = text[match.end() :]
        next_word = rest.split(" ", 1)[0]
        if match.group(1) == "." and _ends_with_abbreviation(text[start : match.end(1)], next_word):
            continue
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def keep_sentence(sentence: str) -> bool:
    """Whether a sentence is clean enough for the corpus (8-60 words, ends like a sentence)."""
    words = sentence.split()
    if not MIN_SENTENCE_WORDS <= len(words) <= MAX_SENTENCE_WORDS:
        return False
    if not re.match(r"[\"'\u201c(]?[A-Z0-9]", sentence):
        return False
    if not re.search(r"[.!?][\"'\u201d)]*$", sentence):
        return False
    if re.search(r"[|{}\[\]<>=_\\]|\(\s*[,;]?\s*\)|https?:|www\.", sentence):
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * len(sentence.replace(" ", ""))


# --------------------------------------------------------------------------- news


def read_news(path: Path, prefix: str) -> list[Document]:
    """Read a Lee corpus file (one news article per line).

    Args:
        path: ``lee_background.cor`` or ``lee.cor``.
        prefix: Id prefix, e.g. ``news-bg``; documents get ``{prefix}-{index:03d}``.

    Returns:
        One document per non-empty line, in file order.
    """
    lines = path.read_text(encoding="latin-1").splitlines()
    docs = []
    for index, line in enumerate(lines):
        line = re.sub(r"\s+", " ", line).strip()
        if line:
            docs.append(Document(f"{prefix}-{index:03d}", "news", [line], group=path.name))
    return docs


# --------------------------------------------------------------------------- wikipedia

_JUNK_START = tuple("*#:;|{}!=+-\u2014\u2013%^\\~")


def clean_wiki_paragraph(par: str) -> str | None:
    """Clean one line of ``filter_wiki`` output; return ``None`` for lists, tables and junk."""
    par = par.strip()
    if not par or par.startswith(_JUNK_START) or par.upper().startswith("#REDIRECT"):
        return None
    par = par.replace("'''", "").replace("''", "")
    par = par.replace("\xa0", " ")
    par = re.sub(r"\[\[|\]\]|\{\{|\}\}", "", par)
    # empty or punctuation-only brackets left by removed templates: "()", "(; born ...)", "( , )"
    par = re.sub(r"\(\s*[,;:]?\s*\)", "", par)
    par = re.sub(r"\(\s*[,;:]\s*", "(", par)
    par = re.sub(r"\s+([,.;:!?])", r"\1", par)
    par = re.sub(r"\s{2,}", " ", par).strip()
    words = par.split()
    if len(words) < MIN_PARAGRAPH_WORDS:
        return None
    if "ISBN" in par or "Retrieved" in par or "|" in par or "thumb" in par:
        return None
    letters = sum(ch.isalpha() for ch in par)
    if letters < 0.7 * len(par.replace(" ", "")):
        return None
    return par


def read_wiki(path: Path) -> list[Document]:
    """Read the Wikipedia slice; one document per article that has usable paragraphs.

    Args:
        path: The ``.xml.bz2`` dump.

    Returns:
        Documents with id ``wiki-{pageid}``, in dump order.
    """
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    docs = []
    with bz2.open(path) as handle:
        for title, markup, pageid in extract_pages(handle):
            paragraphs = []
            for line in filter_wiki(markup).split("\n"):
                cleaned = clean_wiki_paragraph(line)
                if cleaned is not None:
                    paragraphs.append(cleaned)
            if paragraphs:
                docs.append(Document(f"wiki-{pageid}", "wiki", paragraphs, group=title))
    return docs


def load_documents(folder: Path | None = None) -> list[Document]:
    """Load all source documents with their sentences filled in.

    Args:
        folder: gensim's test data folder (default: located from the installed package).

    Returns:
        News documents (``lee_background`` then ``lee``) followed by Wikipedia articles.
    """
    folder = folder or gensim_test_data()
    docs = (
        read_news(folder / "lee_background.cor", "news-bg")
        + read_news(folder / "lee.cor", "news-lee")
        + read_wiki(folder / WIKI_FILE)
    )
    for doc in docs:
        doc.sentences = [
            s for par in doc.paragraphs for s in split_sentences(par) if keep_sentence(s)
        ]
    logger.info("Loaded %d documents, %d sentences", len(docs), sum(len(d.sentences) for d in docs))
    return docs
