"""The sections of an evaluation config that every stage shares, and what a section is.

Each section is a frozen dataclass that checks its own fields: :class:`Part` checks each field's
type as its annotation says, a section adds its ranges in ``validate``. Here: ``models`` (the
models and where they run), ``texts`` (the corpus, the prompts, the lengths and the seed every
stage shares) and ``methods`` (the baselines' settings and the variants); the sections of the
stages are in :mod:`evaluation.config_stages`. What needs two sections (a method named in one,
defined in another) is checked by :class:`evaluation.config.EvalConfig`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from watermark.config.sections import json_types

METHODS = ("unwatermarked", "ours", "kgw0", "kgw1", "kgw2", "synthid")
KGW_BASES = ("kgw0", "kgw1", "kgw2")  # the baselines a variant may sweep


def listed(*items: Any) -> Any:
    """A list field whose default holds ``items``."""
    return field(default_factory=lambda: list(items))


@dataclass(frozen=True)
class Part:
    """A section: its fields and their checks."""

    name: ClassVar[str]

    def problems(self) -> list[str]:
        """Every type or range problem (empty: valid)."""
        found = []
        for f in fields(self):
            value, types = getattr(self, f.name), json_types(f.type)
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                found.append(f"{self.name}.{f.name} must be {f.type}, got {value!r}")
        return found or self.validate()

    def validate(self) -> list[str]:
        """The section's range problems, once its types are right."""
        return []


@dataclass(frozen=True)
class Models(Part):
    """The models and where they run.

    Attributes:
        watermark_config: Our method's watermark config JSON (``None``: the shipped default).
        generator: Generator of every method (short name, folder or hub id).
        oracle: Perplexity oracle LM; must not be the generator.
        paraphraser: Instruction model of the sentence-level ``paraphrase`` attacks.
        llm_paraphraser: Instruction model of the whole-text ``llm_*`` attacks
            (``qwen2.5-coder-1.5b`` needs the ``paraphraser`` extra); its name is part of those
            attacks' cache keys.
        llm_paraphrase_batch: Texts per ``generate`` call of ``llm_paraphraser`` (texts of
            similar length share a batch; greedy outputs differ across batch sizes only by
            rounding). ``python -m benchmarks.bench_llm_paraphrase`` times it.
        similarity_embedder: Embedder that measures how much meaning an attack kept.
        device: Where the generator and our watermark's models run: ``cpu``, ``cuda``,
            ``cuda:N`` or ``auto`` (CUDA when available). A generation's record names the
            device that made it, and a cached generation is read whichever device made it.
        threads: torch threads (0: torch's default).
    """

    name: ClassVar[str] = "models"
    watermark_config: str | None = None
    generator: str = "smollm2-135m"
    oracle: str = "gemma3-270m"
    paraphraser: str = "smollm2-135m"
    llm_paraphraser: str = "qwen2.5-coder-1.5b"
    llm_paraphrase_batch: int = 32
    similarity_embedder: str = "mpnet"
    device: str = "cpu"
    threads: int = 0

    def validate(self) -> list[str]:
        found = []
        if self.device != "auto" and not re.fullmatch(r"cpu|cuda(:\d+)?", self.device):
            found.append(f"models.device must be cpu, cuda, cuda:N or auto, got {self.device!r}")
        if self.oracle == self.generator:
            found.append("models.oracle (the perplexity oracle) must not be the generator")
        if self.llm_paraphrase_batch < 1 or self.threads < 0:
            found.append(
                "need models.llm_paraphrase_batch >= 1 and models.threads >= 0, got "
                f"{self.llm_paraphrase_batch}, {self.threads}"
            )
        return found


@dataclass(frozen=True)
class Texts(Part):
    """The held-out documents and the texts every stage makes of them.

    Attributes:
        heldout: Held-out corpus (JSONL.gz with ``doc``, ``source``, ``text``), never trained on.
        sources: Corpus sources the documents come from (``news``, ``wiki``).
        unit_pool: ``long``: the documents whose text after the prompt has at least 0.75
            ``human_tokens`` tokens, the units of every stage; ``short``: the others (their
            human texts are too short to be negatives), prompts no stage of a ``long`` run
            uses, for quality checks on further prompts.
        prompts: Units of the main table, the spoofing test and the ablations (prompt = the
            first two sentences, human text = what follows).
        human_tokens: Human text = the next this many generator tokens (at least 0.75 of it).
        new_tokens: Generated tokens per text (at most).
        min_new_tokens: EOS is blocked before this many tokens (the same for every method).
        batch_size: Generation batch size (the rows of a batch share one sampling seed).
        seed: Base seed; batch ``b`` is sampled with ``seed + b``.
    """

    name: ClassVar[str] = "texts"
    heldout: str = "data/corpus/heldout.jsonl.gz"
    sources: list[str] = listed("news", "wiki")
    unit_pool: str = "long"
    prompts: int = 48
    human_tokens: int = 200
    new_tokens: int = 200
    min_new_tokens: int = 170
    batch_size: int = 8
    seed: int = 0

    def validate(self) -> list[str]:
        found = []
        if self.unit_pool not in ("long", "short"):
            found.append(f"texts.unit_pool must be 'long' or 'short', got {self.unit_pool!r}")
        if not 0 < self.min_new_tokens <= self.new_tokens:
            found.append("need 0 < texts.min_new_tokens <= texts.new_tokens")
        if min(self.prompts, self.human_tokens, self.batch_size - 1) < 0:
            found.append("need texts.prompts >= 0, human_tokens >= 0 and batch_size >= 1")
        return found


@dataclass(frozen=True)
class Methods(Part):
    """The baselines' settings and the named variants of every method.

    Attributes:
        kgw_gamma: Green-list fraction of KGW-0/1/2.
        kgw_delta: Logit bias of KGW-0/1/2.
        kgw_key: Integer key of KGW-0/1/2 (SynthID-Text's layer keys are derived from it).
        synthid_layers: Tournament layers (keys) of SynthID-Text.
        synthid_ngram_len: n of SynthID-Text's hashed n-grams (a context of n - 1 tokens).
        variants: Named variants, usable wherever a stage names methods: of our method,
            ``{name: {watermark config field: value}}`` (the evaluation's flat field names,
            :mod:`evaluation.config_fields`), or of a KGW baseline, ``{name: {base: kgw1,
            kgw_gamma: 0.25, kgw_delta: 1.0}}``.
    """

    name: ClassVar[str] = "methods"
    kgw_gamma: float = 0.5
    kgw_delta: float = 2.0
    kgw_key: int = 15485863
    synthid_layers: int = 30
    synthid_ngram_len: int = 5
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)

    def base_method(self, name: str) -> str:
        """The method a name runs: a variant's ``base`` (ours unless named), else ``name``."""
        spec = self.variants.get(name)
        return name if spec is None else spec.get("base", "ours")

    def validate(self) -> list[str]:
        if not all(isinstance(spec, dict) for spec in self.variants.values()):
            return ["methods.variants must map each name to a mapping of its settings"]
        found = []
        clash = sorted(set(self.variants) & set(METHODS))
        if clash:
            found.append(f"variant names {clash} clash with methods {list(METHODS)}")
        for name, spec in self.variants.items():
            base = self.base_method(name)
            if base not in ("ours", *KGW_BASES):
                found.append(f"variant {name}: base {base!r} is not ours or {KGW_BASES}")
            bad = sorted(set(spec) - {"base", "kgw_gamma", "kgw_delta"})
            if base in KGW_BASES and bad:
                found.append(
                    f"variant {name}: a {base} variant sets kgw_gamma / kgw_delta, not {bad}"
                )
        return found
