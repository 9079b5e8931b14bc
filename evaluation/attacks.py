"""Attacks on watermarked text, each with a strength knob in [0, 1].

* ``deletion``: delete that share of the words (uniformly at random).
* ``synonym``: replace that share of the content words with close Moby-thesaurus synonyms
  (:class:`data.synonyms.Thesaurus`); words without one stay.
* ``paraphrase``: paraphrase that share of the sentences, one sentence at a time, with the
  instruction model of :mod:`data.paraphrase` (greedy, cached per sentence on disk); rejected
  outputs keep the sentence. An attack's optional ``passes`` (default 1) paraphrases the result
  again that many times in all: the knob that takes the attack past what one pass of a small
  paraphraser changes. With a ``temperature`` each sentence is sampled instead (a rewrite by
  another model and instruction than ``llm_forced``'s).
* ``paraphrase_synonym``: every sentence paraphrased ``passes`` times, then that share of the
  content words replaced by synonyms (the composite attack).
* ``copy_paste``: the watermarked text makes up that share of the result's words, inserted as one
  span at a random word position of the human text (whose words fill the rest).
* ``truncate``: only the first share of the text's tokens (the generator's tokenizer) kept: the
  power of shorter texts, read from the same generations.
* ``llm_paraphrase``: the whole text rewritten at once by the instruction LLM named by the
  evaluation's ``llm_paraphraser`` (:mod:`data.llm_paraphrase`: greedy, every fact kept, cached
  per text on disk); rejected outputs keep the text. Its strength must be 1.0 (the whole text);
  ``passes`` as for ``paraphrase``.
* ``llm_paraphrase_synonym``: ``llm_paraphrase`` (``passes`` times), then that share of the
  content words replaced by synonyms.
* ``llm_round_trip``: the whole text translated into French and back by the same LLM, each leg
  greedy; ``llm_forced``: every sentence restated with other words and structure, reordered where
  the meaning allows (:mod:`data.llm_rewrites`). Strength 1.0; rejected outputs keep the text;
  ``paraphrase_after: true`` adds one ``llm_paraphrase``. The forced rewrite may be sampled
  (``temperature``) and a rewrite that fails the meaning checks (:mod:`evaluation.meaning`)
  drawn again, up to ``retries`` times.

Every attack is deterministic given its seed.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path

from data.sources import split_sentences

logger = logging.getLogger(__name__)


def _rng(seed: int, text: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}|{text}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


def _sentence_id(sentence: str) -> str:
    return hashlib.sha256(sentence.encode()).hexdigest()[:20]


def delete_words(text: str, strength: float, seed: int = 0) -> str:
    """Delete ``round(strength * n)`` of the n words of ``text``."""
    words = text.split()
    k = round(strength * len(words))
    drop = set(_rng(seed, text).sample(range(len(words)), k))
    return " ".join(w for i, w in enumerate(words) if i not in drop)


def substitute_synonyms(text: str, strength: float, thesaurus, seed: int = 0) -> str:
    """Replace about ``strength`` of the content words with close synonyms, sentence by sentence."""
    rng = _rng(seed, text)
    out = []
    for sentence in split_sentences(text.strip()) or [text.strip()]:
        variants = thesaurus.variants(sentence, rng, rate=strength)
        out.append(variants[0] if variants else sentence)
    return (" " if text[:1].isspace() else "") + " ".join(out)


def copy_paste(marked: str, human: str, strength: float, seed: int = 0) -> str:
    """Insert the first ``strength`` share of words (from ``marked``) into ``human``.

    The result has as many words as ``human`` (or as ``marked`` if that is shorter).
    """
    wm_words, human_words = marked.split(), human.split()
    total = min(len(wm_words), len(human_words)) if human_words else len(wm_words)
    k = round(strength * total)
    host = human_words[: total - k]
    at = _rng(seed, marked).randint(0, len(host))
    return " ".join(host[:at] + wm_words[:k] + host[at:])


def paraphrase_texts(
    texts: Sequence[str],
    strength: float,
    cache_path: Path,
    model_name: str,
    seed: int = 0,
    batch_size: int = 16,
    passes: int = 1,
    progress: bool = True,
    temperature: float = 0.0,
) -> list[str]:
    """Paraphrase ``strength`` of each text's sentences with the LLM paraphraser (cached).

    Args:
        texts: Texts to attack.
        strength: Share of sentences (chosen at random per text) to paraphrase.
        cache_path: JSONL cache of sentence paraphrases, shared by all runs of the evaluation.
        model_name: The paraphrasing instruction model.
        seed: Which sentences are chosen.
        batch_size: Sentences per generation batch.
        passes: Times the whole attack is applied (each pass to the previous pass's output).
        progress: Show progress bars.
        temperature: 0: greedy; else each sentence sampled at this temperature (seeded by
            ``seed``; a rejected draw is drawn once more).
    """
    for _ in range(passes):
        texts = _paraphrase_pass(
            texts, strength, cache_path, model_name, seed, batch_size, progress, temperature
        )
    return list(texts)


def _paraphrase_pass(
    texts: Sequence[str],
    strength: float,
    cache_path: Path,
    model_name: str,
    seed: int,
    batch_size: int,
    progress: bool,
    temperature: float = 0.0,
) -> list[str]:
    import torch

    from data.paraphrase import run_paraphrases

    plans = []
    for text in texts:
        sentences = split_sentences(text.strip()) or [text.strip()]
        k = round(strength * len(sentences))
        chosen = set(_rng(seed, text).sample(range(len(sentences)), k))
        plans.append((sentences, chosen))
    items = {
        _sentence_id(s): s
        for sentences, chosen in plans
        for i, s in enumerate(sentences)
        if i in chosen
    }
    # float32: bfloat16 matmuls are emulated (slow) on CPUs without AVX512-BF16
    done = run_paraphrases(
        sorted(items.items()),
        cache_path,
        batch_size,
        model_name,
        dtype=torch.float32,
        progress=progress,
        temperature=temperature,
        seed=seed,
    )
    out = []
    for sentences, chosen in plans:
        parts = []
        for i, s in enumerate(sentences):
            new = done.get(_sentence_id(s)) if i in chosen else None
            parts.append(new or s)
        out.append(" " + " ".join(parts))
    return out


def llm_paraphrase_texts(
    texts: Sequence[str],
    cache_path: Path,
    model_name: str,
    passes: int = 1,
    batch_size: int = 8,
    progress: bool = True,
) -> list[str]:
    """Paraphrase each whole text with the instruction LLM, ``passes`` times (cached).

    Each pass rewrites the previous pass's output; where an output is rejected
    (:func:`data.llm_paraphrase_cleaning.clean_text_paraphrase`) the text stays as it was.
    Leading whitespace of a text is kept.

    Args:
        texts: Texts to attack.
        cache_path: JSONL cache of whole-text paraphrases, shared by all runs of the evaluation.
        model_name: The paraphrasing instruction model (short name, folder or hub id).
        passes: Times each text is paraphrased.
        batch_size: Texts per generation batch.
        progress: Show a progress bar.
    """
    from data.llm_paraphrase import run_text_paraphrases

    out = list(texts)
    for done_passes in range(1, passes + 1):
        bodies = [t.strip() for t in out]
        results = run_text_paraphrases(
            bodies, cache_path, model_name, batch_size, progress=progress
        )
        sent = [r for r, b in zip(results, bodies) if b]
        logger.info(
            "llm_paraphrase pass %d of %d: %d of %d outputs rejected, texts kept",
            done_passes,
            passes,
            sent.count(None),
            len(sent),
        )
        out = [t[: len(t) - len(t.lstrip())] + r if r else t for t, r in zip(out, results)]
    return out


def llm_rewrite_texts(
    texts: Sequence[str],
    rewrite: str,
    cache_path: Path,
    model_name: str,
    batch_size: int = 8,
    progress: bool = True,
    temperature: float = 0.0,
    retries: int = 0,
    accept: Callable[[list[str], list[str]], list[bool]] | None = None,
    draws: list | None = None,
    list_facts: bool = False,
) -> list[str]:
    """Each whole text after ``rewrite``, ``"round_trip"`` (into French and back) or
    ``"forced"`` (every sentence restated, :mod:`data.llm_rewrites`), cached per text, leg and
    draw.

    The forced rewrite may be sampled at ``temperature``. A rewrite that the judge rejects, or
    that ``accept(originals, rewrites)`` refuses (the meaning checks), is drawn again with the
    next seed, up to ``retries`` times. Where every draw fails the text stays as it was (every
    method alike); the counts are logged. ``draws``, if given, receives one list per draw of
    ``(text index, rewrite or None where the judge rejected it)``. ``list_facts``: the forced
    rewrite's prompt names the text's names and numbers.
    """
    from data import llm_rewrites

    if rewrite == "round_trip" and (temperature or retries or list_facts):
        raise ValueError("the round trip is greedy: no temperature, no retries, no fact list")
    bodies = [t.strip() for t in texts]
    results: list[str | None] = [None] * len(bodies)
    todo = [i for i, b in enumerate(bodies) if b]
    for draw in range(retries + 1):
        sent = [bodies[i] for i in todo]
        if rewrite == "round_trip":
            outs = llm_rewrites.round_trip(sent, cache_path, model_name, batch_size, progress)
        else:
            task = llm_rewrites.forced_task(temperature, seed=draw, list_facts=list_facts)
            outs = llm_rewrites.forced_rewrite(
                sent, cache_path, model_name, batch_size, progress, task=task
            )
        if draws is not None:
            draws.append(list(zip(todo, outs)))
        judged, passed = _judged(todo, outs, bodies, accept)
        for (i, o), ok in zip(judged, passed):
            if ok:
                results[i] = o
        logger.info(
            "llm %s draw %d: %d texts, %d rejected by the judge, %d by the meaning checks",
            rewrite,
            draw,
            len(todo),
            len(todo) - len(judged),
            len(judged) - sum(passed),
        )
        todo = [i for i in todo if results[i] is None]
        if not todo:
            break
    logger.info("llm %s: %d of %d texts kept as they were", rewrite, len(todo), len(bodies))
    return [t[: len(t) - len(t.lstrip())] + r if r else t for t, r in zip(texts, results)]


def _judged(
    todo: list[int],
    outs: list[str | None],
    bodies: list[str],
    accept: Callable[[list[str], list[str]], list[bool]] | None,
) -> tuple[list[tuple[int, str]], list[bool]]:
    """The rewrites the judge kept, as ``(text index, rewrite)``, and which of them ``accept``
    passes (all, without ``accept``)."""
    judged = [(i, o) for i, o in zip(todo, outs) if o is not None]
    passed = [True] * len(judged)
    if accept:
        passed = accept([bodies[i] for i, _ in judged], [o for _, o in judged])
    return judged, passed
