"""The attacks of a run: the one registry of attack kinds, its checks, and the cached stage.

An attack is a mapping of the config: ``kind`` (a key of :data:`KINDS`), ``strength``, and the
options its kind accepts (:class:`AttackKind`): ``passes`` (the paraphrase repeated on its own
output), ``temperature`` (sampled), ``retries`` and ``list_facts`` (the forced rewrite's meaning
checks), ``paraphrase_after`` (one ``llm_paraphrase`` after a whole-text rewrite). The config
checks an attack with :func:`attack_problems`; :class:`AttackStage` runs it, each attacked text
cached under a key that names everything it depends on (:func:`cache_name`). The attacks
themselves are in :mod:`evaluation.attacks`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from evaluation import attacks as atk
from evaluation.cache_keys import text_hash
from evaluation.store import Store

OPTIONS = ("kind", "strength", "passes", "temperature", "retries", "list_facts", "paraphrase_after")


@dataclass(frozen=True)
class AttackKind:
    """What one kind of attack accepts, and how it runs.

    Attributes:
        run: ``run(stage, attack, texts, humans, draws)``: the attacked texts.
        whole_text: It rewrites the whole text: its strength must be 1.0.
        llm: The instruction LLM ``models.llm_paraphraser`` writes it (its name keys the cache).
        passes: It takes ``passes``.
        sampled: It takes a ``temperature``.
        checked: It takes ``retries`` (a sampled draw that fails the meaning checks is drawn
            again) and ``list_facts`` (its prompt names the text's names and numbers).
        then_paraphrase: It takes ``paraphrase_after``.
        first: The kind run before the synonym swaps (a composite attack), if any.
    """

    run: Callable[..., list[str]]
    whole_text: bool = False
    llm: bool = False
    passes: bool = False
    sampled: bool = False
    checked: bool = False
    then_paraphrase: bool = False
    first: str | None = None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def attack_problems(attack: dict) -> list[str]:
    """Why ``attack`` is not a known kind with a strength and the options its kind takes (empty:
    it is)."""
    kind = KINDS.get(attack.get("kind")) if isinstance(attack, dict) else None
    if kind is None or "strength" not in attack:
        return [f"bad attack {attack!r}: need a kind in {list(KINDS)} and a strength"]
    bad = f"bad attack {attack!r}:"
    if not isinstance(attack["strength"], (int, float)) or isinstance(attack["strength"], bool):
        return [f"{bad} strength must be a number"]
    unknown = sorted(set(attack) - set(OPTIONS))
    found = [f"{bad} unknown options {unknown}; known: {list(OPTIONS)}"] if unknown else []
    passes, temperature = attack.get("passes", 1), attack.get("temperature", 0.0)
    retries = attack.get("retries", 0)
    if not _is_int(passes) or passes < 1 or (passes > 1 and not kind.passes):
        found.append(f"{bad} passes must be an integer >= 1, and 1 for {attack['kind']}")
    if kind.whole_text and float(attack["strength"]) != 1.0:
        found.append(f"{bad} {attack['kind']} rewrites the whole text, its strength must be 1.0")
    for option in ("paraphrase_after", "list_facts"):
        if not isinstance(attack.get(option, False), bool):
            found.append(f"{bad} {option} must be true or false")
    if attack.get("paraphrase_after") and not kind.then_paraphrase:
        found.append(f"{bad} only llm_round_trip and llm_forced take paraphrase_after")
    if (retries or attack.get("list_facts")) and not kind.checked:
        found.append(f"{bad} only llm_forced is retried or lists facts")
    if temperature and not kind.sampled:
        found.append(f"{bad} only llm_forced and paraphrase are sampled")
    if not (isinstance(temperature, (int, float)) and 0 <= temperature <= 2):
        found.append(f"{bad} temperature must be in [0, 2]")
    if not _is_int(retries) or retries < 0 or (retries and not temperature):
        found.append(f"{bad} retries is an integer >= 0, for a temperature > 0")
    return found


def cache_name(attack: dict, llm_name: str) -> str:
    """The part of an attacked text's cache key that names the attack and its options (an LLM
    kind names ``llm_name``: two paraphrasers never share an entry)."""
    passes = int(attack.get("passes", 1))
    name = attack["kind"] + (f"[{llm_name}]" if KINDS[attack["kind"]].llm else "")
    name += f"x{passes}" if passes > 1 else ""
    if attack.get("temperature"):  # sampled, each draw checked for the meaning
        name += f"@t{float(attack['temperature']):g}r{int(attack.get('retries', 0))}"
    name += "+facts" if attack.get("list_facts") else ""
    return name + ("+llm_paraphrase" if attack.get("paraphrase_after") else "")


class AttackStage:
    """Runs attacks on texts, cached per text in ``store``'s ``attacks`` table.

    Args:
        store: The run's cache.
        tokenizer: The generator's tokenizer (``truncate`` counts its tokens).
        seed: The run's seed (every attack is deterministic given it).
        paraphraser: Folder or name of the sentence-level paraphraser.
        paraphrase_cache: Its per-sentence cache (keyed by id, so never seeded).
        llm_name, llm_path: The whole-text rewriter as the config names it, and resolved.
        llm_batch: Texts per ``generate`` call of the rewriter.
        similarity_embedder: The embedder of the meaning checks.
        progress: Show progress bars.
    """

    def __init__(
        self,
        store: Store,
        tokenizer: object,
        *,
        seed: int,
        paraphraser: str,
        paraphrase_cache: Path,
        llm_name: str,
        llm_path: str,
        llm_batch: int,
        similarity_embedder: str,
        progress: bool = True,
    ) -> None:
        self.store, self.tokenizer, self.seed, self.progress = store, tokenizer, seed, progress
        self.paraphraser, self.paraphrase_cache = paraphraser, paraphrase_cache
        self.llm_name, self.llm_path, self.llm_batch = llm_name, llm_path, llm_batch
        self.similarity_embedder = similarity_embedder
        self._thesaurus = None  # the synonym attacks' Moby thesaurus, parsed once (about 3 s)

    def attacked(self, attack: dict, texts: list[str], humans: list[str]) -> list[str]:
        """``texts`` after ``attack`` (``humans``: the host texts of copy-paste), cached."""
        name = f"{cache_name(attack, self.llm_name)}|{float(attack['strength'])}|{self.seed}"
        table = self.store.table("attacks")
        keys = [f"{name}|{text_hash(t)}" for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in table]
        if todo:
            outs = self._run(attack, [texts[i] for i in todo], [humans[i] for i in todo])
            self.store.put("attacks", [{"key": keys[i], "text": o} for i, o in zip(todo, outs)])
        return [table[k]["text"] for k in keys]

    def draw_log(self, attack: dict, texts: list[str]) -> list[dict]:
        """Per draw of a sampled rewrite of ``texts`` (read from the cache: run the attack
        first), the shares each check rejects (:func:`evaluation.meaning.draw_figures`)."""
        from evaluation.meaning import draw_figures  # the embedders load torch: at first use

        draws: list = []
        self._run(attack, texts, list(texts), draws=draws)
        originals = [t.strip() for t in texts]
        return draw_figures(self.similarity_embedder, originals, draws)

    def _run(
        self, attack: dict, texts: list[str], humans: list[str], draws: list | None = None
    ) -> list[str]:
        return KINDS[attack["kind"]].run(self, attack, texts, humans, draws)

    def _llm(self) -> tuple[Path, str]:
        """The rewriter's cache (one for every LLM kind) and model."""
        return self.store.file("llm_paraphrases"), self.llm_path

    def paraphrase(self, attack: dict, texts: list[str], humans: list[str], draws) -> list[str]:
        return atk.paraphrase_texts(
            texts,
            float(attack["strength"]),
            self.paraphrase_cache,
            self.paraphraser,
            seed=self.seed,
            passes=int(attack.get("passes", 1)),
            progress=self.progress,
            temperature=float(attack.get("temperature", 0.0)),
        )

    def llm_paraphrase(self, attack: dict, texts: list[str], humans, draws) -> list[str]:
        passes = int(attack.get("passes", 1))
        return atk.llm_paraphrase_texts(
            texts, *self._llm(), passes=passes, batch_size=self.llm_batch, progress=self.progress
        )

    def rewrite(self, attack: dict, texts: list[str], humans, draws, *, task: str) -> list[str]:
        """The LLM's ``task`` (``round_trip``, ``forced``): meaning kept, most words changed."""
        from evaluation.meaning import meaning_kept

        temperature = float(attack.get("temperature", 0.0))
        texts = atk.llm_rewrite_texts(
            texts,
            task,
            *self._llm(),
            self.llm_batch,
            self.progress,
            temperature=temperature,
            retries=int(attack.get("retries", 0)),
            list_facts=bool(attack.get("list_facts")),
            accept=partial(meaning_kept, self.similarity_embedder) if temperature else None,
            draws=draws,
        )
        if attack.get("paraphrase_after"):
            texts = atk.llm_paraphrase_texts(
                texts, *self._llm(), batch_size=self.llm_batch, progress=self.progress
            )
        return texts

    def deletion(self, attack: dict, texts: list[str], humans, draws) -> list[str]:
        return [atk.delete_words(t, float(attack["strength"]), self.seed) for t in texts]

    def copy_paste(self, attack: dict, texts: list[str], humans: list[str], draws) -> list[str]:
        strength = float(attack["strength"])
        return [atk.copy_paste(t, h, strength, self.seed) for t, h in zip(texts, humans)]

    def truncate(self, attack: dict, texts: list[str], humans, draws) -> list[str]:
        """The first share of each text's generator tokens."""
        ids = [self.tokenizer(t, add_special_tokens=False).input_ids for t in texts]
        strength = float(attack["strength"])
        return [self.tokenizer.decode(i[: round(strength * len(i))]) for i in ids]

    def synonyms(self, attack: dict, texts: list[str], humans: list[str], draws) -> list[str]:
        """That share of the content words swapped, after the kind's ``first`` attack if any."""
        first = KINDS[attack["kind"]].first
        if first:
            passes = int(attack.get("passes", 1))
            texts = self.attacked({"kind": first, "strength": 1.0, "passes": passes}, texts, humans)
        if self._thesaurus is None:
            from data.synonyms import Thesaurus

            self._thesaurus = Thesaurus.load()
        strength = float(attack["strength"])
        return [atk.substitute_synonyms(t, strength, self._thesaurus, self.seed) for t in texts]


S = AttackStage
KINDS: dict[str, AttackKind] = {
    "deletion": AttackKind(S.deletion),
    "synonym": AttackKind(S.synonyms),
    "paraphrase": AttackKind(S.paraphrase, passes=True, sampled=True),
    "copy_paste": AttackKind(S.copy_paste),
    "truncate": AttackKind(S.truncate),
    "paraphrase_synonym": AttackKind(S.synonyms, passes=True, first="paraphrase"),
    "llm_paraphrase": AttackKind(S.llm_paraphrase, whole_text=True, llm=True, passes=True),
    "llm_paraphrase_synonym": AttackKind(S.synonyms, llm=True, passes=True, first="llm_paraphrase"),
    "llm_round_trip": AttackKind(
        partial(S.rewrite, task="round_trip"), whole_text=True, llm=True, then_paraphrase=True
    ),
    "llm_forced": AttackKind(
        partial(S.rewrite, task="forced"),
        whole_text=True,
        llm=True,
        sampled=True,
        checked=True,
        then_paraphrase=True,
    ),
}
