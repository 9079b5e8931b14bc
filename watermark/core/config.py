"""The watermark configuration: what a user sets, and what generation and detection share.

:class:`WatermarkConfig` holds the fields a user sets, in sections (:data:`SECTIONS`), and the
scheme's :class:`~watermark.core.design.Design` (switches the shipped schemes fix and the
evaluation varies); all read as one flat namespace (``cfg.alpha``, ``cfg.fresh_only``). Saved as
JSON in sections, the design only where it differs from the defaults; the flat JSON of 0.1-0.4
still loads. :meth:`WatermarkConfig.to_dict` is the flat view from which the fingerprint and the
cache keys are computed. Relative paths resolve by :func:`watermark.core.paths.resolve_path`
(next to the config file, the current directory, the package, a clone's root). The secret key
and opening sentence never appear in ``repr`` or logs.
"""

from __future__ import annotations

import json
import os
from dataclasses import Field, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from watermark.core.config_checks import (
    COMPUTE_DTYPES,
    checked_fields,
    own_fields,
    problems,
    read_config_file,
    warn_if_0_1,
)
from watermark.core.design import DETECTION, KINDS, RUNTIME, SAMPLING, SHARED, Design, setting
from watermark.core.errors import UserError
from watermark.core.keys import DEMO_KEY, resolve_key
from watermark.core.paths import DEFAULT_MAPPER, PACKAGE_DIR, resolve_path, search_dirs
from watermark.core.schemes import RULES, RepeatPolicy, Scheme, Tournament, scheme_for

DEFAULT_CONFIG_PATH = PACKAGE_DIR / "default_config.json"
SECTIONS = ("models", "keys", "scheme", "detection", "runtime")


def user_fields() -> tuple[Field, ...]:
    """The fields a user sets, in declaration order."""
    return own_fields(WatermarkConfig)


def all_fields() -> tuple[Field, ...]:
    """Every field: the user's, then the design's."""
    return checked_fields(WatermarkConfig)


def field_names() -> tuple[str, ...]:
    """The names of :func:`all_fields`: the keys of a flat config."""
    return tuple(f.name for f in all_fields())


def default_of(name: str) -> Any:
    """The shipped default of a field."""
    found = {f.name: f for f in all_fields()}[name]
    return found.default_factory() if callable(found.default_factory) else found.default


def fields_of(kind: str) -> tuple[str, ...]:
    """Names of the config fields of one kind, in declaration order."""
    if kind not in KINDS:
        raise ValueError(f"unknown field kind {kind!r}; known: {KINDS}")
    return tuple(f.name for f in all_fields() if f.metadata.get("kind") == kind)


def secret_fields() -> tuple[str, ...]:
    """Names of the fields never shown: the key, the old keys and the opening sentence."""
    return tuple(f.name for f in all_fields() if f.metadata.get("secret"))


@dataclass(frozen=True)
class WatermarkConfig:
    """What a user sets: the models, the keys, the scheme, detection and runtime.

    Frozen: a changed config is made with :meth:`evolve` (any field, the design's included) or
    ``dataclasses.replace`` (the user's fields); both run the checks again. Each field declares
    its kind (:data:`~watermark.core.design.SHARED`, ``SAMPLING``, ``DETECTION``, ``RUNTIME``;
    :func:`fields_of`) and its section. The defaults are the shipped defaults
    (``watermark/default_config.json`` holds the same values, including the public demo key:
    set your own with ``python -m watermark keygen``).

    Models (shared by generation and detection):
        generator: Generator tokenizer / model (short name, folder or hub id); detection
            tokenizes with it, ``python -m watermark generate`` also loads the model.
        measurement_model: Measurement model (MM) of the entropy gate.
        embedder: Sentence embedder (SE), see :func:`watermark.core.models.load_embedder`.
        mapper: Folder of an exported :class:`~watermark.core.semantic_mapper.SemanticMapper`.
        mapper_digest, embedder_digest: ``"sha256:..."`` of the tensors; loading refuses another
            mapper or embedder (:mod:`watermark.core.identity`). ``None``: the shipped digest
            for the shipped part, else unpinned (loading warns).
    Keys:
        key: Secret key of the token map, or ``"env:NAME"`` / ``"file:PATH"``
            (:mod:`watermark.core.keys`). Never logged.
        old_keys: Earlier keys (same forms) that detection also tries; the p-value is corrected
            for the number of keys.
    Scheme:
        scaling: The scheme (:data:`watermark.core.schemes.SCHEMES`): ``tournament``,
            ``additive``, ``paper`` or ``floor``.
        layers, bias, delta: The strength of the tournament, additive, paper and floor schemes.
        alpha: Entropy threshold in nats: a step is watermarked iff H(P_MM) >= alpha.
        temperature, top_k, top_p: Sampling, applied with the scheme (generation only).
        sentence_bits: The sentence layer (:mod:`watermark.core.sentences`): keyed mapper
            outputs tested per sentence; 0 switches the layer off (the default). Generation
            then samples ``sentence_candidates`` (design) candidates per sentence.
    Detection:
        target_fpr: ``is_watermarked`` is ``p_value < target_fpr``.
        window_sizes: Windowed test sizes in tokens (e.g. ``[128, 256]``) for partly watermarked
            text; ``is_watermarked`` then uses the best window's p-value corrected for the
            number of windows (:func:`watermark.core.stats.windowed_test`). Empty: whole text.
    Runtime:
        compute_dtype: dtype of the MM and the SE (``float32``, ``bfloat16``, ``float16``); it
            moves entropies and embeddings slightly, so detect with the generation's dtype.
        embed_batch_size: Batch size of the sentence embedder.
        design: :class:`~watermark.core.design.Design`, the scheme's fixed switches.
    """

    generator: str = setting(SHARED, "smollm2-135m", section="models")
    measurement_model: str = setting(SHARED, "smollm2-135m", section="models")
    embedder: str = setting(SHARED, "minilm", section="models")
    mapper: str = setting(SHARED, DEFAULT_MAPPER, section="models")
    mapper_digest: str | None = setting(SHARED, None, section="models")
    embedder_digest: str | None = setting(SHARED, None, section="models")
    key: str = setting(SHARED, DEMO_KEY, secret=True, section="keys")
    old_keys: list[str] = setting(DETECTION, [], secret=True, section="keys")
    scaling: str = setting(SAMPLING, Tournament.name, choices=RULES, section="scheme")
    layers: int = setting(SHARED, 6, section="scheme")
    bias: float = setting(SAMPLING, 2.0, section="scheme")
    delta: float = setting(SAMPLING, 1.5, section="scheme")
    alpha: float = setting(SHARED, 2.0, section="scheme")
    temperature: float = setting(SAMPLING, 1.02, section="scheme")
    top_k: int = setting(SAMPLING, 50, section="scheme")
    top_p: float = setting(SAMPLING, 0.9, section="scheme")
    sentence_bits: int = setting(SHARED, 0, section="scheme")
    target_fpr: float = setting(DETECTION, 0.01, section="detection")
    window_sizes: list[int] = setting(DETECTION, [128, 256], section="detection")
    compute_dtype: str = setting(SHARED, "float32", choices=COMPUTE_DTYPES, section="runtime")
    embed_batch_size: int = setting(RUNTIME, 256, section="runtime")
    design: Design = field(default_factory=Design)
    source: str | None = field(default=None, repr=False, compare=False)

    def __getattr__(self, name: str) -> Any:
        """The design's fields read as the config's own (``cfg.fresh_only``)."""
        if name.startswith("_") or name == "design" or name not in DESIGN_NAMES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.design, name)

    def __post_init__(self) -> None:
        if isinstance(self.design, dict):  # from JSON: checked like the config's own fields
            object.__setattr__(self, "design", Design(**self.design))
        found = problems(self)
        if found:
            raise UserError("invalid watermark config: " + "; ".join(found))

    @property
    def scheme(self) -> Scheme:
        """The strength rule :attr:`scaling` names, with its strength
        (:func:`watermark.core.schemes.scheme_for`)."""
        return scheme_for(self)

    @property
    def repeat_policy(self) -> RepeatPolicy:
        """How repeats are treated, by generation and detection alike."""
        return RepeatPolicy.of(self)

    @property
    def strength(self) -> float:
        """The strength parameter of the configured rule (``delta``, ``bias`` or ``layers``)."""
        return self.scheme.strength

    @property
    def green_lists(self) -> int:
        """Green lists per step: ``layers`` for the tournament, 1 for the biasing rules."""
        return self.scheme.lists(self.layers)

    def to_dict(self) -> dict[str, Any]:
        """The flat view: every field by name, the design's included (and the secrets; keep a
        file of it private). The fingerprint and the cache keys are computed from it."""
        data = asdict(self)
        data.pop("source")
        design = data.pop("design")
        return {**data, **design}

    def public_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` without the secret fields (:func:`secret_fields`)."""
        hidden = secret_fields()
        return {k: v for k, v in self.to_dict().items() if k not in hidden}

    def sections(self) -> dict[str, Any]:
        """The JSON a config is saved as: the user's fields by section, then ``design`` with
        the values that differ from the shipped design (omitted when none do)."""
        out: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        for f in user_fields():
            out[f.metadata["section"]][f.name] = getattr(self, f.name)
        changed = {f.name: getattr(self, f.name) for f in fields(Design)}
        changed = {k: v for k, v in changed.items() if v != default_of(k)}
        return {**out, **({"design": changed} if changed else {})}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the config as JSON (:meth:`sections`) to ``path``."""
        path = Path(path)
        path.write_text(json.dumps(self.sections(), indent=2) + "\n")
        return path

    def evolve(self, **changes: Any) -> WatermarkConfig:
        """A copy with ``changes`` to any fields by their flat names (checked again)."""
        unknown = sorted(set(changes) - set(field_names()))
        if unknown:
            raise UserError(f"unknown watermark config keys {unknown}")
        own, design = split_design(changes)
        return replace(self, **own, design=replace(self.design, **design))

    @classmethod
    def of(cls, **flat: Any) -> WatermarkConfig:
        """A config from field values by their flat names, the design's included
        (``WatermarkConfig.of(scaling="additive", context_guard=0)``)."""
        return cls.from_dict(flat)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str | None = None) -> WatermarkConfig:
        """Builds a config from its sections (:meth:`sections`) or from flat fields (the files
        of 0.1-0.4); unknown keys are an error (they are usually typos)."""
        flat = dict(data)
        for name, known in SECTION_NAMES.items():
            part = flat.pop(name) if isinstance(flat.get(name), dict) else {}
            wrong = sorted(set(part) - set(known))
            if wrong:
                what = "design keys" if name == "design" else "keys"
                raise UserError(f"unknown {what} {wrong} in section {name!r}; known: {known}")
            flat.update(part)
        unknown = sorted(set(flat) - set(field_names()))
        if unknown:
            raise UserError(f"unknown watermark config keys {unknown}; known: {field_names()}")
        own, design = split_design(flat)
        return cls(**own, design=Design(**design), source=source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WatermarkConfig:
        """Reads a config from a JSON file.

        Raises:
            FileNotFoundError: If the file does not exist.
            ValueError: If it is not a JSON object of valid fields (the message names the file).
        """
        path = Path(path).expanduser().resolve()
        data = read_config_file(path)
        warn_if_0_1(path, data, default_of)
        try:
            return cls.from_dict(data, source=str(path))
        except (TypeError, ValueError) as err:
            raise UserError(f"{path}: {err}") from err

    @classmethod
    def default(cls) -> WatermarkConfig:
        """The configuration shipped with the package (``watermark/default_config.json``)."""
        return cls.load(DEFAULT_CONFIG_PATH)

    def resolve_path(self, value: str) -> str:
        """A path-valued field resolved by :func:`watermark.core.paths.resolve_path` (next to the
        config, the current directory, the package, a clone's root); short names and hub ids are
        unchanged."""
        return resolve_path(value, self._config_dir())

    def _config_dir(self) -> Path | None:
        return Path(self.source).parent if self.source else None

    def secret_keys(self) -> list[str]:
        """The keys themselves: ``key`` first (generation uses it), then ``old_keys``; a
        ValueError names an ``env:`` / ``file:`` reference that cannot be read, never a key."""
        return [resolve_key(ref, self.resolve_path) for ref in [self.key, *self.old_keys]]

    def mapper_dir(self) -> Path:
        """The mapper folder, resolved; raises a clear error if it does not exist."""
        resolved = Path(self.resolve_path(self.mapper))
        if not resolved.is_dir():
            looked = ", ".join(str(d) for d in search_dirs(self._config_dir()))
            raise FileNotFoundError(
                f"mapper folder {self.mapper!r} not found (looked in {looked}); train and export"
                " one with `python -m mapper.train` or point `mapper` at an exported folder"
            )
        return resolved


def as_config(config: WatermarkConfig | str | os.PathLike[str] | None) -> WatermarkConfig:
    """Accepts a config, a JSON path, or ``None`` (the shipped default)."""
    if config is None:
        return WatermarkConfig.default()
    if isinstance(config, WatermarkConfig):
        return config
    return WatermarkConfig.load(config)


DESIGN_NAMES = frozenset(f.name for f in fields(Design))
SECTION_NAMES = {
    **{n: tuple(f.name for f in user_fields() if f.metadata["section"] == n) for n in SECTIONS},
    "design": tuple(f.name for f in fields(Design)),
}


def split_design(flat: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Values by flat name, split into the config's own and the design's."""
    own = {k: v for k, v in flat.items() if k not in DESIGN_NAMES}
    return own, {k: v for k, v in flat.items() if k in DESIGN_NAMES}
