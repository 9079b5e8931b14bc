"""The evaluation experiment description: :class:`EvalConfig`, in sections, read from YAML.

:class:`EvalConfig` holds the run's name, its output folder and cache seeds, and the sections of
:mod:`evaluation.config_sections` and :mod:`evaluation.config_stages`; read them as
``cfg.curves.prompts``, ``cfg.texts.seed``. Each section checks its own fields; the config
checks what spans sections: every method a stage names is a method or a variant, and every
config of our method that the run makes (its variants, ablation values and frontier cells) is a
valid watermark config. Files are read by :mod:`evaluation.config_files`. Relative paths follow
:func:`watermark.config.paths.resolve_path` (YAML folder, cwd, repo root).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from evaluation.config_fields import evolve, field_names
from evaluation.config_files import TOP, read_file, sections_of
from evaluation.config_sections import METHODS, Methods, Models, Texts
from evaluation.config_stages import (
    SECTIONS,
    Ablations,
    Curves,
    Frontier,
    Spoofing,
    Table,
    expand_cells,
)
from watermark.base import UserError
from watermark.config.paths import resolve_path
from watermark.config.watermark_config import WatermarkConfig, as_config


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation run. Frozen: a changed config is made with ``dataclasses.replace``, which
    runs the checks again.

    Attributes:
        name: Run name (the report's title).
        out_dir: Where results, caches, the report and plots go.
        cache_seeds: Committed folders of cached tables (``<table>.jsonl.gz``) read before
            ``<out_dir>/cache``, so a fresh checkout reuses generations and rewrites that took
            hours; ``--save-cache-seed DIR`` writes one (:mod:`evaluation.store`).
        models, texts, methods, table, spoofing, frontier, curves, ablations: The sections
            (:mod:`evaluation.config_sections`, :mod:`evaluation.config_stages`).
        source_dir: The folder of the YAML it was read from (relative paths resolve there).
    """

    name: str = "default"
    out_dir: str = "runs/eval/default"
    cache_seeds: list[str] = field(default_factory=list)
    models: Models = field(default_factory=Models)
    texts: Texts = field(default_factory=Texts)
    methods: Methods = field(default_factory=Methods)
    table: Table = field(default_factory=Table)
    spoofing: Spoofing = field(default_factory=Spoofing)
    frontier: Frontier = field(default_factory=Frontier)
    curves: Curves = field(default_factory=Curves)
    ablations: Ablations = field(default_factory=Ablations)
    source_dir: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        found = [p for part in self.parts() for p in part.problems()]
        found = found or self._named_methods() or self._our_problems()
        if found:
            raise ValueError("; ".join(found))

    def parts(self) -> tuple:
        """The sections, in file order."""
        return tuple(getattr(self, name) for name in SECTIONS)

    def _named_methods(self) -> list[str]:
        known = set(METHODS) | set(self.methods.variants)
        named = self.curves.methods + self.spoofing.steal_methods
        unknown = sorted(dict.fromkeys(n for n in named if n not in known))
        if unknown:
            variants = sorted(self.methods.variants)
            return [f"unknown methods {unknown}; known: {list(METHODS)}, variants {variants}"]
        return []

    def our_changes(self) -> dict[str, dict[str, Any]]:
        """Every change of our watermark config the run makes, by where it is named
        (``variant NAME``, ``ablation FIELD=VALUE``, ``frontier cell I``), flat field names."""
        found = {}
        for name, spec in self.methods.variants.items():
            if self.methods.base_method(name) == "ours":
                found[f"variant {name}"] = {k: v for k, v in spec.items() if k != "base"}
        for name, values in self.ablations.vary.items():
            for value in values:
                change = value if isinstance(value, dict) else {name: value}
                found[f"ablation {name}={value}"] = change
        for i, cell in enumerate(expand_cells(self.frontier.cells)):
            found[f"frontier cell {i}"] = cell
        return found

    def _our_problems(self) -> list[str]:
        known, found = set(field_names()), []
        for where, change in self.our_changes().items():
            bad = sorted(set(change) - known)
            if bad:
                found.append(
                    f"{where}: unknown watermark config fields {bad}; known: {sorted(known)}"
                )
        if found:
            return found
        base = self.watermark_base()
        for where, change in self.our_changes().items():
            try:
                evolve(base, **change)
            except UserError as err:
                found.append(f"{where}: {err} (change or drop it)")
        return found

    def watermark_base(self) -> WatermarkConfig:
        """Our method's watermark config (``models.watermark_config``), on the run's generator."""
        path = self.models.watermark_config
        base = as_config(self.resolve(path) if path else None)
        if base.models.generator != self.models.generator:
            base = base.evolve(generator=self.resolve(self.models.generator), vocab_size=None)
        return base

    @classmethod
    def from_dict(cls, data: dict[str, Any], source_dir: str | None = None) -> EvalConfig:
        """A config of a mapping in sections (or a flat one, read in sections); unknown keys
        fail."""
        data = sections_of(data)
        unknown = sorted(set(data) - set(TOP) - set(SECTIONS))
        if unknown:
            raise ValueError(f"unknown keys {unknown}; known: {[*TOP, *SECTIONS]}")
        parts = {}
        for name, part in SECTIONS.items():
            values = data.get(name) or {}
            if not isinstance(values, dict):
                raise ValueError(f"section {name!r} must be a mapping of its fields")
            known = {f.name for f in fields(part)}
            bad = sorted(set(values) - known)
            if bad:
                raise ValueError(f"unknown keys {[f'{name}.{k}' for k in bad]}; known: {known}")
            parts[name] = part(**values)
        top = {k: data[k] for k in TOP if k in data}
        return cls(**top, **parts, source_dir=source_dir)

    @classmethod
    def load(
        cls, path: str | Path, quick: bool = False, overrides: list[str] | None = None
    ) -> EvalConfig:
        """Read a YAML file (:func:`evaluation.config_files.read_file`): its ``quick`` changes if
        asked, then each ``SECTION.FIELD=VALUE`` of ``overrides`` (the value read as YAML,
        e.g. ``texts.prompts=8`` or ``curves.methods=[ours, kgw1]``)."""
        path = Path(path)
        data = read_file(path, quick, overrides)
        return cls.from_dict(data, source_dir=str(path.resolve().parent))

    def resolve(self, value: str) -> str:
        """A path resolved by :func:`watermark.config.paths.resolve_path` (YAML folder, cwd, repo
        root)."""
        return resolve_path(value, self.source_dir)

    def output_path(self) -> Path:
        """The output folder (relative paths against the working directory)."""
        return Path(self.out_dir)

    def to_dict(self) -> dict[str, Any]:
        """The top-level keys and every section's fields (what ``results.json`` records)."""
        out: dict[str, Any] = {key: getattr(self, key) for key in TOP}
        return out | {part.name: asdict(part) for part in self.parts()}
