"""Rewrites that keep the meaning and change most of the words, by the instruction LLM.

* **Round trip** (:func:`round_trip`): the whole text into French, then back into English, each
  leg greedy (``TO_FRENCH``, :data:`TO_ENGLISH`). A standard meaning-keeping attack on
  watermarks: the words come back chosen by the model, not by the text.
* **Forced rewrite** (:data:`FORCED`): every sentence restated with other words and another
  structure, the sentences reordered where the meaning allows, every fact kept.

Each leg is a :class:`data.llm_paraphrase.Task`, cached per text in the same JSONL file as the
paraphrases (its own prompt digest in every key), so an interrupted run resumes where it stopped
and a rerun decodes nothing. A leg whose output is rejected (a copy, the wrong length, talk about
the task, or for the first leg text that is still English) gives ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from data.llm_paraphrase import Task, run_text_paraphrases
from data.llm_paraphrase_cleaning import clean_text_paraphrase
from data.sources import split_sentences

KEEP_FACTS = (
    "Keep every fact exactly: all names, numbers, dates, places and events must stay the same. "
    "Do not add or leave out any information."
)
TO_ENGLISH = Task(
    "Translate the following French text into English, every sentence. "
    + KEEP_FACTS
    + " Reply with the English translation only.",
    label="English translation:",
)
FORCED = Task(
    "Rewrite the following text so that no sentence keeps its wording: restate every sentence "
    "with other words and another sentence structure, and put the sentences in another order "
    "wherever the meaning allows. " + KEEP_FACTS + " Reply with the rewritten text only."
)


NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def facts(text: str) -> set[str]:
    """The numbers (digits only, separators dropped) and the capitalised words (acronyms too)
    that do not open a sentence, lowercased."""
    found = {re.sub(r"[.,]", "", n) for n in NUMBER.findall(text)}
    for sentence in split_sentences(text):
        words = WORD.findall(sentence)
        found |= {w.lower() for w in words[1:] if w[0].isupper() and (len(w) > 1 or w != "I")}
    return found


def listed_facts(text: str) -> str:
    """The names and numbers of ``text``, as written, for the prompt of a rewrite that must
    keep them (the words :func:`facts` checks, in their first spelling)."""
    wanted, seen = facts(text), []
    matches = sorted([*NUMBER.finditer(text), *WORD.finditer(text)], key=lambda m: m.start())
    for found in (m.group() for m in matches):  # in the order of the text
        key = re.sub(r"[.,]", "", found) if found[0].isdigit() else found.lower()
        if key in wanted and found not in seen and (found[0].isdigit() or found[0].isupper()):
            seen.append(found)
    if not seen:
        return ""
    return "These names and numbers must all appear in the rewrite: " + ", ".join(seen) + "."


def forced_task(temperature: float = 0.0, seed: int = 0, list_facts: bool = False) -> Task:
    """:data:`FORCED` sampled at ``temperature`` with draw ``seed`` (decoded greedily it keeps
    most of the words: 96% in the pilot of 8 texts; 71% at 0.7, 57.5% at 1.0); with
    ``list_facts`` the prompt also lists the text's names and numbers (:func:`listed_facts`)."""
    hint = listed_facts if list_facts else None
    return replace(FORCED, temperature=temperature, seed=seed, hint=hint)


# words that make up a large share of any English text and of almost no French one
ENGLISH = frozenset("the and of to is was are were in that with for it this from by be".split())
ENGLISH_SHARE = 0.12  # above this share of such words, a "translation" is still English


def english_share(text: str) -> float:
    """The share of ``text``'s words that are common English function words."""
    words = re.findall(r"[a-z']+", text.lower())
    return sum(w in ENGLISH for w in words) / max(1, len(words))


def clean_translation(output: str, source: str) -> str | None:
    """:func:`data.llm_paraphrase_cleaning.clean_text_paraphrase` of the first leg, also
    rejecting an output that is still English."""
    text = clean_text_paraphrase(output, source)
    return None if text is None or english_share(text) > ENGLISH_SHARE else text


TO_FRENCH = Task(
    "Translate the following English text into French, every sentence. "
    + KEEP_FACTS
    + " Reply with the French translation only.",
    label="French translation:",
    judge=clean_translation,
)


def round_trip(
    texts: Sequence[str],
    cache_path: Path,
    model_name: str,
    batch_size: int = 8,
    progress: bool = True,
) -> list[str | None]:
    """Each text into French and back into English (``None`` where a leg was rejected)."""
    french = run_text_paraphrases(
        texts, cache_path, model_name, batch_size, progress=progress, task=TO_FRENCH
    )
    sent = [f or "" for f in french]
    back = run_text_paraphrases(
        sent, cache_path, model_name, batch_size, progress=progress, task=TO_ENGLISH
    )
    return [b if f else None for f, b in zip(french, back)]


def forced_rewrite(
    texts: Sequence[str],
    cache_path: Path,
    model_name: str,
    batch_size: int = 8,
    progress: bool = True,
    task: Task = FORCED,
) -> list[str | None]:
    """Each text rewritten under :data:`FORCED` (or ``task``, e.g. a :func:`forced_task`;
    ``None`` where the output was rejected)."""
    return run_text_paraphrases(
        texts, cache_path, model_name, batch_size, progress=progress, task=task
    )
