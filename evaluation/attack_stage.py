"""The attack stage of :class:`evaluation.run.Evaluation`: each attack's texts, cached per text.

An attack is a dict from the config (``kind``, ``strength``, and for some kinds ``passes``,
``temperature``, ``retries``, ``paraphrase_after``); its cache key names everything the
attacked text depends on. The attacks themselves are in :mod:`evaluation.attacks`.
"""

from __future__ import annotations

from functools import partial

from evaluation import attacks as atk
from evaluation.cache_keys import text_hash
from evaluation.meaning import draw_figures, meaning_kept


class AttackStage:
    """Mixed into :class:`~evaluation.run.Evaluation`, whose ``cfg``, ``store``, ``out`` and
    ``progress`` it reads."""

    _thesaurus = None  # the synonym attacks' Moby thesaurus, parsed once (about 3 s)

    def attacked(self, attack: dict, texts: list[str], humans: list[str]) -> list[str]:
        """``texts`` after ``attack`` (``humans``: the host texts of copy-paste), cached."""
        passes = int(attack.get("passes", 1))
        name = attack["kind"]
        if name.startswith("llm_"):  # two paraphrasers never share an entry
            name += f"[{self.cfg.llm_paraphraser}]"
        name += f"x{passes}" if passes > 1 else ""
        if attack.get("temperature"):  # sampled, each draw checked for the meaning
            name += f"@t{float(attack['temperature']):g}r{int(attack.get('retries', 0))}"
        name += "+facts" if attack.get("list_facts") else ""
        name += "+llm_paraphrase" if attack.get("paraphrase_after") else ""
        table = self.store.table("attacks")
        keys = [f"{name}|{float(attack['strength'])}|{self.cfg.seed}|{text_hash(t)}" for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in table]
        if todo:
            outs = self._attack(attack, [texts[i] for i in todo], [humans[i] for i in todo])
            self.store.put("attacks", [{"key": keys[i], "text": o} for i, o in zip(todo, outs)])
        return [table[k]["text"] for k in keys]

    def draw_log(self, attack: dict, texts: list[str]) -> list[dict]:
        """Per draw of a sampled rewrite of ``texts`` (read from the cache: run the attack
        first), the shares each check rejects (:func:`evaluation.meaning.draw_figures`)."""
        draws: list = []
        self._attack(attack, texts, list(texts), draws=draws)
        originals = [t.strip() for t in texts]
        return draw_figures(self.cfg.similarity_embedder, originals, draws)

    def _attack(
        self, attack: dict, texts: list[str], humans: list[str], draws: list | None = None
    ) -> list[str]:
        kind, strength, seed = attack["kind"], float(attack["strength"]), self.cfg.seed
        passes = int(attack.get("passes", 1))
        if kind == "paraphrase":
            return atk.paraphrase_texts(
                texts,
                strength,
                self.out / "cache" / "paraphrases.jsonl",  # keyed by id, so never seeded
                self.cfg.resolve(self.cfg.paraphraser),
                seed=seed,
                passes=passes,
                progress=self.progress,
                temperature=float(attack.get("temperature", 0.0)),
            )
        batch = self.cfg.llm_paraphrase_batch
        if kind.startswith("llm_") and not kind.endswith("_synonym"):
            # the instruction LLM's rewrites of whole texts, one cache for every kind
            llm = (self.store.file("llm_paraphrases"), self.cfg.resolve(self.cfg.llm_paraphraser))
        if kind in ("llm_round_trip", "llm_forced"):  # meaning kept, most words changed
            temperature = float(attack.get("temperature", 0.0))
            texts = atk.llm_rewrite_texts(
                texts,
                kind.removeprefix("llm_"),
                *llm,
                batch,
                self.progress,
                temperature=temperature,
                retries=int(attack.get("retries", 0)),
                list_facts=bool(attack.get("list_facts")),
                accept=partial(meaning_kept, self.cfg.similarity_embedder) if temperature else None,
                draws=draws,
            )
            if attack.get("paraphrase_after"):
                texts = atk.llm_paraphrase_texts(
                    texts, *llm, batch_size=batch, progress=self.progress
                )
            return texts
        if kind == "llm_paraphrase":
            return atk.llm_paraphrase_texts(
                texts, *llm, passes=passes, batch_size=batch, progress=self.progress
            )
        if kind == "deletion":
            return [atk.delete_words(t, strength, seed) for t in texts]
        if kind == "copy_paste":
            return [atk.copy_paste(t, h, strength, seed) for t, h in zip(texts, humans)]
        if kind == "truncate":  # the first share of the generator's tokens
            ids = [self.tokenizer(t, add_special_tokens=False).input_ids for t in texts]
            return [self.tokenizer.decode(i[: round(strength * len(i))]) for i in ids]
        if kind in ("paraphrase_synonym", "llm_paraphrase_synonym"):  # paraphrase, then synonyms
            first = kind.removesuffix("_synonym")
            texts = self.attacked({"kind": first, "strength": 1.0, "passes": passes}, texts, humans)
        if self._thesaurus is None:
            from data.synonyms import Thesaurus

            self._thesaurus = Thesaurus.load()
        return [atk.substitute_synonyms(t, strength, self._thesaurus, seed) for t in texts]
