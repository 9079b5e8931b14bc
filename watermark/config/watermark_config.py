"""The watermark configuration: what a user sets, in typed sections.

:class:`WatermarkConfig` holds six sections (:mod:`watermark.config.sections`,
:mod:`watermark.config.schemes`): ``models``, ``keys``, ``scheme`` (one class per strength rule),
``sentences`` (the sentence layer), ``detection`` and ``runtime``; read them as
``cfg.scheme.alpha``, ``cfg.sentences.bits``. Saved as JSON in the same sections. Files of
earlier versions load through :func:`watermark.config.files.upgrade`.

:meth:`WatermarkConfig.of` and :meth:`WatermarkConfig.evolve` name a field by its own name
(``alpha``, ``bits``) and the rule ``rule``; the evaluation's names for its variants and cache
keys are its own (:mod:`evaluation.config_fields`). Relative paths resolve by
:func:`watermark.config.paths.resolve_path` (next to the config file, the current directory,
the package, a clone's root). The secret key and opening sentence never appear in ``repr`` or
logs.
"""

from __future__ import annotations

import json
import os
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from watermark.base import UserError
from watermark.config.files import (
    PLAIN_SECTIONS,
    SECTIONS,
    build_scheme,
    build_section,
    from_flat,
    read_config_file,
    upgrade,
    warn_if_0_1,
)
from watermark.config.keys import resolve_key
from watermark.config.paths import resolve_path, search_dirs
from watermark.config.schemes import SCHEMES, RepeatPolicy, Scheme, Tournament
from watermark.config.sections import Detection, Keys, Models, Runtime, Sentences
from watermark.config.shipped import find_config, shipped_path

DEFAULT_CONFIG_PATH = shipped_path("default")


@dataclass(frozen=True)
class WatermarkConfig:
    """What a user sets, by section; the defaults are the shipped defaults
    (``watermark/default_config.json`` holds the same values, including the public demo key:
    set your own with ``python -m watermark keygen``).

    Frozen: a changed config is made with :meth:`evolve` (fields by name) or
    ``dataclasses.replace`` with whole sections; both run the checks again.

    Attributes:
        models: :class:`~watermark.config.sections.Models`, the models and their windows.
        keys: :class:`~watermark.config.sections.Keys`, the secrets.
        scheme: The strength rule (:class:`~watermark.config.schemes.Tournament`, ``Additive``
            or ``Paper``) with the gate, the sampling filters and the repeat policy.
        sentences: :class:`~watermark.config.sections.Sentences`, the sentence layer.
        detection: :class:`~watermark.config.sections.Detection`, the test.
        runtime: :class:`~watermark.config.sections.Runtime`, dtype and batch size.
        source: The file it was read from (paths resolve next to it), if any.
    """

    models: Models = field(default_factory=Models)
    keys: Keys = field(default_factory=Keys)
    scheme: Scheme = field(default_factory=Tournament)
    sentences: Sentences = field(default_factory=Sentences)
    detection: Detection = field(default_factory=Detection)
    runtime: Runtime = field(default_factory=Runtime)
    source: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        found = [p for part in self.parts() for p in part.problems()]
        if self.scheme.fresh_only and not self.detection.unique_tokens:
            found.append(
                "scheme.fresh_only needs detection.unique_tokens=true (repeats are never tested)"
            )
        if found:
            raise UserError("invalid watermark config: " + "; ".join(found))

    def parts(self) -> tuple:
        """The sections, in file order."""
        return tuple(getattr(self, name) for name in SECTIONS)

    @property
    def repeat_policy(self) -> RepeatPolicy:
        """How repeats are treated, by generation and detection alike."""
        return RepeatPolicy.of(self.scheme, self.detection.unique_tokens)

    @property
    def green_lists(self) -> int:
        """Green lists per step: the tournament's ``layers``, 1 for the biasing rules."""
        return self.scheme.lists()

    def sections(self) -> dict[str, Any]:
        """The JSON a config is saved as: every field, by section (the scheme names its rule)."""
        out = {}
        for part in self.parts():
            values = {f.name: getattr(part, f.name) for f in fields(part)}
            if part is self.scheme:  # the rule, then its strength, then the rest
                values = {"rule": part.rule, part.strength_field: part.strength, **values}
            out[part.name] = values
        return out

    def public_sections(self) -> dict[str, Any]:
        """:meth:`sections` without the secrets (the key, the old keys, the opening sentence):
        what a service may show."""
        hidden = set(secret_fields())
        out = {
            name: {k: v for k, v in part.items() if k not in hidden}
            for name, part in self.sections().items()
        }
        return {name: part for name, part in out.items() if part}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the config as JSON (:meth:`sections`) to ``path``."""
        path = Path(path)
        path.write_text(json.dumps(self.sections(), indent=2) + "\n")
        return path

    def evolve(self, **changes: Any) -> WatermarkConfig:
        """A copy with ``changes`` to fields by name (``evolve(alpha=3.0, bits=32)``; where two
        sections share a name it is the first's: the sentence layer's own ``mapper`` is set by
        :meth:`with_settings`; ``rule`` switches the rule, whose strength then takes its
        default unless changed), checked again; a name the rule does not have is refused."""
        data = self.sections()
        rule = changes.get("rule", self.scheme.rule)
        if rule != self.scheme.rule:
            del data["scheme"][self.scheme.strength_field]  # the old rule's strength goes with it
        for section, part in from_flat({**changes, "rule": rule}).items():
            data[section].update(part)
        return WatermarkConfig.build(data, self.source)

    def with_settings(self, settings: dict[str, Any]) -> WatermarkConfig:
        """A copy with settings by section and field (``{"scheme.alpha": 3.0}``, the CLI's
        ``--set``), checked again; ``scheme.rule`` switches the rule as :meth:`evolve` does."""
        data = self.sections()
        for name, value in settings.items():
            section, dot, key = name.partition(".")
            if not dot or not key or section not in SECTIONS:
                raise UserError(
                    f"setting {name!r}: expected SECTION.FIELD with SECTION one of "
                    f"{', '.join(SECTIONS)}"
                )
            data[section][key] = value
        strength = self.scheme.strength_field
        if data["scheme"]["rule"] != self.scheme.rule and f"scheme.{strength}" not in settings:
            del data["scheme"][strength]
        return WatermarkConfig.from_dict(data, self.source)

    @classmethod
    def of(cls, **flat: Any) -> WatermarkConfig:
        """A config from field values by name, as :meth:`evolve` takes them
        (``WatermarkConfig.of(rule="additive")``);
        a name the rule does not have is refused."""
        return cls.build(from_flat(flat))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str | None = None) -> WatermarkConfig:
        """A config from its sections (:meth:`sections`), or from a file of an earlier format
        (:func:`~watermark.config.files.upgrade`); an unknown key is an error."""
        return cls.build(upgrade(data), source)

    @classmethod
    def build(cls, parts: dict[str, dict[str, Any]], source: str | None = None) -> WatermarkConfig:
        """A config from today's sections of fields (what :func:`upgrade` returns)."""
        made = {name: build_section(name, part) for name, part in parts.items() if name != "scheme"}
        return cls(scheme=build_scheme(parts.get("scheme", {})), **made, source=source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WatermarkConfig:
        """Reads a config from a JSON file, or a shipped one by name (``"robust"``; an existing
        file of that name wins: :mod:`watermark.config.shipped`).

        Raises:
            FileNotFoundError: If it is neither a file nor a shipped name (the message lists
                the names).
            ValueError: If it is not a JSON object of valid fields (the message names the file).
        """
        path = find_config(path).resolve()
        data = read_config_file(path)
        if not any(k in SECTIONS or k == "design" for k in data):
            warn_if_0_1(path, data, defaults())
        try:
            return cls.from_dict(data, source=str(path))
        except (TypeError, ValueError) as err:
            raise UserError(f"{path}: {err}") from err

    @classmethod
    def default(cls) -> WatermarkConfig:
        """The configuration shipped with the package (``watermark/default_config.json``)."""
        return cls.load(DEFAULT_CONFIG_PATH)

    def resolve_path(self, value: str) -> str:
        """A path-valued field resolved by :func:`watermark.config.paths.resolve_path`; short
        names and hub ids are unchanged."""
        return resolve_path(value, self._config_dir())

    def _config_dir(self) -> Path | None:
        return Path(self.source).parent if self.source else None

    def secret_keys(self) -> list[str]:
        """The keys themselves: ``key`` first (generation uses it), then ``old_keys``; a
        ValueError names an ``env:`` / ``file:`` reference that cannot be read, never a key."""
        refs = [self.keys.key, *self.keys.old_keys]
        return [resolve_key(ref, self.resolve_path) for ref in refs]

    def mapper_dir(self) -> Path:
        """The mapper folder, resolved; raises a clear error if it does not exist."""
        resolved = Path(self.resolve_path(self.models.mapper))
        if not resolved.is_dir():
            looked = ", ".join(str(d) for d in search_dirs(self._config_dir()))
            raise FileNotFoundError(
                f"mapper folder {self.models.mapper!r} not found (looked in {looked}); train and "
                "export one with `python -m mapper.train` or point `models.mapper` at a folder"
            )
        return resolved


def as_config(config: WatermarkConfig | str | os.PathLike[str] | None) -> WatermarkConfig:
    """Accepts a config, a JSON path, a shipped config's name, or ``None`` (the shipped
    default)."""
    if config is None:
        return WatermarkConfig.default()
    if isinstance(config, WatermarkConfig):
        return config
    return WatermarkConfig.load(config)


def all_fields() -> list[tuple[str, Field]]:
    """``(section, field)`` of every field of every section and rule, in file order."""
    found: dict[tuple[str, str], Field] = {}
    for cls in (*PLAIN_SECTIONS.values(), *SCHEMES.values()):
        for f in fields(cls):
            found.setdefault((cls.name, f.name), f)
    return list(found.items())


def secret_fields() -> tuple[str, ...]:
    """Names of the fields never shown: the key, the old keys and the opening sentence."""
    return tuple(name for (_, name), f in all_fields() if f.metadata["secret"])


def defaults() -> dict[str, Any]:
    """Every field's shipped default by its own name (the first section's where two share
    one)."""
    found: dict[str, Any] = {}
    for (_, name), f in all_fields():
        found.setdefault(name, f.default_factory() if callable(f.default_factory) else f.default)
    return found
