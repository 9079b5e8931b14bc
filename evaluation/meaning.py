"""The meaning checks of a rewrite: an embedder's similarity, and the facts it keeps.

:func:`embed_texts` embeds texts under an embedder that is not the watermark's (MPNet by
default), each distinct text once per process; :func:`cosines` gives the similarity of pairs.

A text's facts are its numbers and its names: the capitalised words that do not open a
sentence. A rewrite that keeps the meaning keeps them (in any order and any wording around them),
so :func:`facts_kept`, the share of the original's facts found in the rewrite, is a check a reader
can verify by eye and that no embedder decides. :func:`keeps_facts` applies the threshold, and
:func:`meaning_kept` both checks (the retry rule of the sampled rewrites).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

from data.llm_rewrites import NUMBER, WORD, facts

FACTS_KEPT = 0.8  # the share of facts a rewrite must keep to pass
MIN_SIMILARITY = 0.85  # the embedder's cosine a rewrite must reach to pass
_EMBEDDERS: dict[str, object] = {}  # similarity embedders, loaded once per process
_EMBEDDED: dict[tuple[str, str], object] = {}  # (embedder, text) -> unit embedding


def embed_texts(name: str, texts: Sequence[str]) -> list:
    """Normalised embeddings of ``texts`` under embedder ``name``, computing only new texts."""
    new = list(dict.fromkeys(t for t in texts if (name, t) not in _EMBEDDED))
    if new:
        from watermark.models.loaders import load_embedder

        if name not in _EMBEDDERS:
            _EMBEDDERS[name] = load_embedder(name)
        out = _EMBEDDERS[name].encode(new, convert_to_tensor=True, normalize_embeddings=True)
        _EMBEDDED.update({(name, t): e for t, e in zip(new, out)})
    return [_EMBEDDED[(name, t)] for t in texts]


def cosines(name: str, originals: Sequence[str], rewrites: Sequence[str]) -> list[float]:
    """The cosine similarity of each pair under embedder ``name``."""
    a, b = embed_texts(name, originals), embed_texts(name, rewrites)
    return [float((x * y).sum()) for x, y in zip(a, b)]


def facts_kept(original: str, rewrite: str) -> float:
    """The share of ``original``'s facts found among ``rewrite``'s words or numbers (1.0 when
    the original has none)."""
    wanted = facts(original)
    if not wanted:
        return 1.0
    there = {re.sub(r"[.,]", "", n) for n in NUMBER.findall(rewrite)}
    there |= {w.lower() for w in WORD.findall(rewrite)}
    return len(wanted & there) / len(wanted)


def keeps_facts(original: str, rewrite: str, share: float = FACTS_KEPT) -> bool:
    """Whether the rewrite keeps at least ``share`` of the original's facts."""
    return facts_kept(original, rewrite) >= share


def meaning_kept(
    name: str,
    originals: Sequence[str],
    rewrites: Sequence[str],
    similarity: float = MIN_SIMILARITY,
    share: float = FACTS_KEPT,
) -> list[bool]:
    """Whether each rewrite passes both checks: cosine at least ``similarity`` under embedder
    ``name`` and at least ``share`` of the facts kept."""
    sims = cosines(name, originals, rewrites)
    return [
        c >= similarity and keeps_facts(o, r, share) for c, o, r in zip(sims, originals, rewrites)
    ]


def words_kept_share(original: str, rewrite: str) -> float:
    """The share of ``original``'s distinct words (split on whitespace) still in ``rewrite``."""
    words = set(original.split())
    return len(words & set(rewrite.split())) / len(words) if words else 1.0


def ngrams_kept(original: str, rewrite: str, n: int = 5) -> float:
    """The share of ``original``'s distinct word n-grams (lowercased words, punctuation
    dropped) still in ``rewrite``: the contexts a token-hash key reads, roughly."""

    def grams(text: str) -> set[tuple[str, ...]]:
        words = [w.lower() for w in WORD.findall(text)]
        return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}

    wanted = grams(original)
    return len(wanted & grams(rewrite)) / len(wanted) if wanted else 1.0


def rewrite_figures(
    originals: Sequence[str],
    rewrites: Sequence[str],
    sims: Sequence[float],
    done: Sequence[bool] | None = None,
) -> dict[str, float]:
    """Per-cell figures of an attack: the share of texts rewritten at all (``done``, default:
    changed), the median words kept, mean 5-grams kept and median similarity of those rewrites,
    and the share of *all* texts whose rewrite passes each meaning check (a text left as it was,
    because every draw failed or the judge refused it, passes none)."""
    done = (
        list(done)
        if done is not None
        else [o.strip() != r.strip() for o, r in zip(originals, rewrites)]
    )
    pairs = [(o, r, c) for o, r, c, d in zip(originals, rewrites, sims, done) if d]
    facts_ok = [keeps_facts(o, r) for o, r, _ in pairs]
    similar = [c >= MIN_SIMILARITY for *_, c in pairs]
    total = len(done)
    return {
        "rewritten": len(pairs) / total,
        "words_kept_median": statistics.median(words_kept_share(o, r) for o, r, _ in pairs)
        if pairs
        else 1.0,
        "ngrams5_kept": statistics.fmean(ngrams_kept(o, r) for o, r, _ in pairs) if pairs else 1.0,
        "similarity_median": statistics.median(c for *_, c in pairs) if pairs else 1.0,
        "facts_pass": sum(facts_ok) / total,
        "similarity_pass": sum(similar) / total,
        "meaning_pass": sum(f and c for f, c in zip(facts_ok, similar)) / total,
    }


def draw_figures(name: str, originals: Sequence[str], draws: list) -> list[dict]:
    """Per draw of a sampled rewrite (``draws`` from :func:`evaluation.attacks.llm_rewrite_texts`):
    the texts drawn, and the shares of them that the judge, the embedder ``name`` (cosine below
    :data:`MIN_SIMILARITY`) and the facts check reject, and that pass."""
    found = []
    for number, drawn in enumerate(draws):
        judged = [(i, r) for i, r in drawn if r is not None]
        sims = cosines(name, [originals[i] for i, _ in judged], [r for _, r in judged])
        facts_ok = [keeps_facts(originals[i], r) for i, r in judged]
        n = max(1, len(drawn))
        found.append(
            {
                "draw": number,
                "texts": len(drawn),
                "judge_rejects": (len(drawn) - len(judged)) / n,
                "similarity_rejects": sum(c < MIN_SIMILARITY for c in sims) / n,
                "facts_rejects": sum(not f for f in facts_ok) / n,
                "passed": sum(c >= MIN_SIMILARITY and f for c, f in zip(sims, facts_ok)) / n,
            }
        )
    return found


def draws_table(rows: list[dict]) -> list[str]:
    """Markdown: per curve cell with sampled draws, what each check rejected in each draw."""
    lines = [
        "| method | attack | draw | texts | judge rejects | similarity rejects | facts reject "
        "| pass |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        for d in r.get("draws", []):
            lines.append(
                f"| {r['method']} | {r['attack']} | {d['draw']} | {d['texts']} | "
                f"{d['judge_rejects']:.3f} | {d['similarity_rejects']:.3f} | "
                f"{d['facts_rejects']:.3f} | {d['passed']:.3f} |"
            )
    return lines if len(lines) > 2 else []
