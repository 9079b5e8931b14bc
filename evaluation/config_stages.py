"""The sections of an evaluation config for its stages, one each, and the list of sections.

``table`` (the main table), ``spoofing`` (the decryption test and watermark stealing),
``frontier``, ``curves`` and ``ablations``; each checks its own fields
(:class:`evaluation.config_sections.Part`), attacks by the registry of their kinds
(:func:`evaluation.attack_stage.attack_problems`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evaluation.attack_stage import attack_problems
from evaluation.config_sections import METHODS, Methods, Models, Part, Texts, listed


def expand_cells(specs: list[dict]) -> list[dict]:
    """Every combination of the list values of each spec, in order."""
    cells = []
    for spec in specs:
        values = [v if isinstance(v, list) else [v] for v in spec.values()]
        cells += [dict(zip(spec, combo)) for combo in itertools.product(*values)]
    return cells


@dataclass(frozen=True)
class Table(Part):
    """The main table: every method on ``texts.prompts`` units, unattacked and attacked.

    Attributes:
        methods: Methods of the table (a subset of :data:`METHODS`).
        attacks: Attacks, ``{"kind", "strength", ...}`` mappings
            (:data:`evaluation.attack_stage.KINDS` lists the kinds and their options).
        paraphrase_limit: Texts per method given to the ``paraphrase`` attack (``None``: all).
        green_share_texts: Our texts whose every token's greenness is computed for |G| / |U + W|
            (an extra embedding pass over all prefixes; 0 skips it).
    """

    name: ClassVar[str] = "table"
    methods: list[str] = listed(*METHODS[:5])
    attacks: list[dict[str, Any]] = field(default_factory=list)
    paraphrase_limit: int | None = None
    green_share_texts: int = 0

    def validate(self) -> list[str]:
        unknown = sorted(set(self.methods) - set(METHODS))
        found = [f"table.methods: unknown {unknown}; known: {list(METHODS)}"] if unknown else []
        return found + [p for attack in self.attacks for p in attack_problems(attack)]


@dataclass(frozen=True)
class Spoofing(Part):
    """The security tests (:mod:`evaluation.security`, :mod:`evaluation.stealing`).

    Attributes:
        texts: Texts per method of the first-tokens decryption test (0 skips it).
        tokens: Tokens per text of both tests.
        common: Size of the common-token set C (the most frequent tokens of human text).
        top: Size of H, the most frequent tokens of C in watermarked text.
        steal_texts: Watermarked texts per method the stealing attacker collects (and as many
            of its own); 0 skips the attack.
        steal_methods: Methods the stealing attack targets.
        steal_prompts: Texts the stealing attacker writes per method and context width.
        steal_boost: The attacker's logit boost per unit of its estimate.
    """

    name: ClassVar[str] = "spoofing"
    texts: int = 0
    tokens: int = 100
    common: int = 181
    top: int = 50
    steal_texts: int = 0
    steal_methods: list[str] = listed("kgw0", "kgw1", "ours")
    steal_prompts: int = 64
    steal_boost: float = 2.0


@dataclass(frozen=True)
class Frontier(Part):
    """The quality / power frontier (:mod:`evaluation.frontier`).

    Attributes:
        prompts: Units of the frontier (0 skips it); the first ``texts.prompts`` of them are
            the main table's.
        baselines: Methods drawn next to ours (any of :data:`METHODS`).
        cells: Cells of our method, as mappings of watermark config fields (flat names); a list
            value expands into one cell per element (all combinations), e.g.
            ``{scaling: additive, bias: [1.0, 2.0], context_guard: [0, 4]}``.
    """

    name: ClassVar[str] = "frontier"
    prompts: int = 0
    baselines: list[str] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)

    def validate(self) -> list[str]:
        unknown = sorted(set(self.baselines) - set(METHODS))
        found = (
            [f"frontier.baselines: unknown {unknown}; known: {list(METHODS)}"] if unknown else []
        )
        if not all(isinstance(cell, dict) for cell in self.cells):
            found.append("frontier.cells must be mappings of watermark config fields")
        return found


@dataclass(frozen=True)
class Curves(Part):
    """Detection against measured attack strength (:mod:`evaluation.curves`).

    Attributes:
        prompts: Texts per method (0 skips the curves); the frontier's units come first.
        attacked: Texts per method and attack.
        negatives: Human texts detected as negatives (0: the curve prompts' own human texts;
            more come from the units after them). The TPR at 1% FPR is read above the k-th
            highest negative, k = floor(0.01 N): with 64 negatives the single highest one.
        offset: Units skipped before the curve units (128 gives a second set of prompts that
            played no part in choosing a setting on the first).
        detect: Detect the methods' texts (false: their quality rows only).
        methods: Methods on the curves (methods or variants).
        attacks: The curves' attacks, as in ``table.attacks``.
        matched_only: Attack only the methods within the matched-quality limits (median PPL
            <= 1.10x, rep-4 <= 1.25x the ``unwatermarked`` curve method's, which must come
            first); the others get their quality row only.
        baseline: The method our methods' difference tables compare to (empty: the KGW-1
            setting within the quality limits, if any).
        also_against: Further methods each of ours is compared to, after ``baseline``.
        rows_from: ``results.json`` of earlier runs on the same prompts, human texts and
            attacks whose curve rows join this run's comparisons, so ``baseline`` and
            ``also_against`` may name their methods (:mod:`evaluation.earlier_rows`).
        map_with: ``results.json`` of other runs whose attacked cells the report's map of
            ROC-AUC against words kept (``attack_map.png``) draws beside this run's.
    """

    name: ClassVar[str] = "curves"
    prompts: int = 0
    attacked: int = 64
    negatives: int = 0
    offset: int = 0
    detect: bool = True
    methods: list[str] = listed("ours", "kgw0", "kgw1", "kgw2")
    attacks: list[dict[str, Any]] = field(default_factory=list)
    matched_only: bool = False
    baseline: str = ""
    also_against: list[str] = field(default_factory=list)
    rows_from: list[str] = field(default_factory=list)
    map_with: list[str] = field(default_factory=list)

    def validate(self) -> list[str]:
        found = [p for attack in self.attacks for p in attack_problems(attack)]
        named = set(self.also_against) | ({self.baseline} - {""})
        missing = sorted(named - set(self.methods))
        if missing and not self.rows_from:
            found.append(f"curves.baseline / also_against {missing} are not in curves.methods")
        return found


@dataclass(frozen=True)
class Ablations(Part):
    """Our method with one watermark config field varied at a time.

    Attributes:
        prompts: Units per variant (the first of the main table's).
        tokens: New tokens per text (``None``: ``texts.new_tokens``).
        attack: An attack also scored for each variant, as the paper scores its ablations under
            paraphrase (``None``: none).
        vary: ``{field: [values]}`` (flat names); a value may be a mapping of fields set together.
    """

    name: ClassVar[str] = "ablations"
    prompts: int = 0
    tokens: int | None = None
    attack: dict[str, Any] | None = None
    vary: dict[str, list[Any]] = field(default_factory=dict)

    def validate(self) -> list[str]:
        found = attack_problems(self.attack) if self.attack else []
        if not all(isinstance(values, list) for values in self.vary.values()):
            found.append("ablations.vary must map each field to a list of values")
        return found


SECTIONS: dict[str, type[Part]] = {
    cls.name: cls for cls in (Models, Texts, Methods, Table, Spoofing, Frontier, Curves, Ablations)
}
