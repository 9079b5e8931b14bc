"""The watermark configuration: everything generation and detection must share.

A :class:`WatermarkConfig` is a plain dataclass saved and loaded as JSON. Generation and detection
derive the entropy gate, the green lists and the statistics from the same fields, so a text can
only be checked with the configuration (and secret key) it was generated with.

Relative paths (the mapper folder, or model folders) follow the project's one rule,
:func:`watermark.core.paths.resolve_path`: next to the JSON file the config was loaded from, the
current directory, the installed package, then the repository root of a clone. The default mapper
``checkpoints/mapper-minilm`` is package data of ``watermark``, so the shipped config finds it
from an installed wheel or a clone, wherever it is run from.

The secret key and opening sentence never appear in ``repr`` or logs.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from watermark.core.config_checks import COMPUTE_DTYPES, problems
from watermark.core.errors import UserError
from watermark.core.keys import DEMO_KEY, resolve_key
from watermark.core.paths import DEFAULT_MAPPER, PACKAGE_DIR, resolve_path, search_dirs
from watermark.core.schemes import RULES, RepeatPolicy, Scheme, Tournament, scheme_for

DEFAULT_CONFIG_PATH = PACKAGE_DIR / "default_config.json"

DEMO_OPENING = "The lighthouse keeper counted the ships that passed before dawn."

logger = logging.getLogger(__name__)

# rule fields whose default changed (to the tournament in 0.2.0) or that were added later, with the
# value every config of 0.1.x meant: a file that names its rule but not these fields takes today's
# defaults, so loading it warns (text made under 0.1's default: configs/watermark-additive.json)
RULE_FIELDS_BEFORE_0_2 = {
    "temperature": 1.0,
    "context_guard": 0,
    "repeats": "neutral",
    "outputs_once": False,
}


# the kinds of field: each field of WatermarkConfig declares one (``field_kind``)
SHARED = "shared"  # generation and detection must agree on it (models, secrets, green lists)
SAMPLING = "sampling"  # generation only: the strength rule and the sampling filters
DETECTION = "detection"  # detection only: the test and its decision
RUNTIME = "runtime"  # speed only: never changes a text or a result
KINDS = (SHARED, SAMPLING, DETECTION, RUNTIME)


def setting(kind: str, default: Any, *, choices: tuple[str, ...] = (), secret: bool = False) -> Any:
    """A config field of ``kind``; ``choices``: the values it may take (checked when a config is
    made); ``secret``: never shown in ``repr``, logs or error messages. A list default is copied
    per config."""
    meta = {"kind": kind, "choices": choices, "secret": secret}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), repr=not secret, metadata=meta)
    return field(default=default, repr=not secret, metadata=meta)


def fields_of(kind: str) -> tuple[str, ...]:
    """Names of the config fields of one kind, in declaration order."""
    if kind not in KINDS:
        raise ValueError(f"unknown field kind {kind!r}; known: {KINDS}")
    return tuple(f.name for f in fields(WatermarkConfig) if f.metadata.get("kind") == kind)


def secret_fields() -> tuple[str, ...]:
    """Names of the fields never shown: the key, the old keys and the opening sentence."""
    return tuple(f.name for f in fields(WatermarkConfig) if f.metadata.get("secret"))


@dataclass(frozen=True)
class WatermarkConfig:
    """Shared settings of watermarked generation and detection.

    Frozen: a changed config is made with ``dataclasses.replace(cfg, field=value)``, which runs
    the checks again. Each field declares its kind (:data:`SHARED`, :data:`SAMPLING`,
    :data:`DETECTION`, :data:`RUNTIME`; :func:`fields_of`); the type checks read the annotations
    and the declared choices, and the evaluation's cache keys read the kinds.

    The defaults are the shipped defaults (``watermark/default_config.json`` holds the same
    values, including the public demo key and opening sentence: set your own secrets).

    Shared (generation and detection must agree):
        mapper: Folder of an exported :class:`~watermark.core.semantic_mapper.SemanticMapper`.
        generator: Generator tokenizer / model (short name, folder or hub id); detection
            tokenizes with it, ``python -m watermark generate`` also loads the model.
        vocab_size: LM-head width V (the token map's length); ``None`` reads it from the model
            config at load time, a stored value is checked against it.
        measurement_model: Measurement model (MM) of the entropy gate.
        mm_start_token: Token the MM conditions on before the first generated token; ``None``:
            the MM tokenizer's BOS, else its EOS.
        embedder: Sentence embedder (SE), see :func:`watermark.core.models.load_embedder`.
        mapper_digest, embedder_digest: ``"sha256:..."`` of the tensors; loading refuses another
            mapper or embedder (:mod:`watermark.core.identity`). ``None``: the shipped digest
            for the shipped part, else unpinned (loading warns).
        key: Secret key of the token map, or ``"env:NAME"`` / ``"file:PATH"``
            (:mod:`watermark.core.keys`). Never logged.
        opening_sentence: Secret sentence embedded for the first ``opening_steps`` steps.
        alpha: Entropy threshold in nats: a step is watermarked iff H(P_MM) >= alpha.
        layers: Green lists per step of the ``tournament`` rule (its strength).
        opening_steps: M: steps 1..M use the opening sentence and skip the gate.
        context_guard: h: a step whose last h tokens already occurred as a run earlier in the
            text is neither watermarked nor scored (0: off).
        fresh_only: The rule acts only on tokens not yet in the text; detection tests a token at
            its first occurrence only. Needs ``unique_tokens``.
        repeats: A repeated token under ``fresh_only``: ``"neutral"`` (never tested) or
            ``"bigram"`` (the green bit of a dimension shifted per previous token, tested at
            the pair's first occurrence; see :mod:`watermark.core.token_map`).
        token_map: ``"keyed"`` (balanced keyed map of tokens onto the D mapper outputs) or
            ``"identity"`` (D == V).
        mm_window: W: the MM sees at most the last W-1 tokens, cut at multiples of W/2
            (:func:`watermark.core.measurement.window_start`).
        embed_prefix_tokens: P: the SE embeds at most the first P generated tokens of a prefix.
        embed_window: W > 0: the SE embeds only the last W tokens (a local context that moves
            with a pasted passage); 0: the prefix from its start, cut at P.
        compute_dtype: dtype of the MM and the SE (``float32``, ``bfloat16``, ``float16``); it
            moves entropies and embeddings slightly, so detect with the generation's dtype.
    Sampling (generation only):
        scaling: The scheme, one of :data:`watermark.core.schemes.SCHEMES`: ``paper``
            ``l * (1 + delta * v_hat)``, ``floor`` the same from the smallest top-k logit,
            ``additive`` ``l + bias * v_hat``, ``tournament`` tournament sampling over
            ``layers`` green lists.
        delta: Strength of ``paper`` and ``floor``.
        bias: Strength of ``additive``.
        temperature: Sampling temperature, applied before the filters and the rule.
        top_k: Top-k of sampling (also the floor of ``floor``).
        top_p: Nucleus mass of sampling.
        filter_first: Apply top-k / top-p before the rule (else after it, the paper's order).
        neutral: Tokens the rule must not favour (``fresh_only``: a pair already in the text,
            EOS): ``"kept"`` keeps their model probability exactly and runs the rule over the
            other tokens (no loops; 0.5.0), ``"half"`` gives them v_hat = 1/2 (0.2-0.4).
    Detection policy:
        old_keys: Earlier keys (same forms as ``key``) that detection also tries; the p-value is
            corrected for the number of keys.
        null_model: gamma_t, the chance a scored token is green under H0: ``"vocab"`` (the green
            share of the vocabulary) or ``"mm"`` (the MM's green mass; same tokenizer only).
        unique_tokens: Count each token id once (its first scored occurrence).
        outputs_once: Count each mapper output once per tested span (two reads of one output
            agree more often than chance; docs/evaluation.md, "Choosing a tournament default").
        target_fpr: ``is_watermarked`` is ``p_value < target_fpr``.
        window_sizes: Windowed test sizes in tokens (e.g. ``[128, 256]``) for partly watermarked
            text; ``is_watermarked`` then uses the best window's p-value corrected for the
            number of windows (:func:`watermark.core.stats.windowed_test`). Empty: whole text only.
        allowed_scripts: Unicode scripts the detector scores; texts mostly in others are not.
    Runtime:
        embed_batch_size: Batch size of the sentence embedder.
    """

    # what generation and detection must share: the models, the secrets and the green lists
    mapper: str = setting(SHARED, DEFAULT_MAPPER)
    generator: str = setting(SHARED, "smollm2-135m")
    vocab_size: int | None = setting(SHARED, None)
    measurement_model: str = setting(SHARED, "smollm2-135m")
    mm_start_token: str | None = setting(SHARED, None)
    embedder: str = setting(SHARED, "minilm")
    mapper_digest: str | None = setting(SHARED, None)
    embedder_digest: str | None = setting(SHARED, None)
    key: str = setting(SHARED, DEMO_KEY, secret=True)
    opening_sentence: str = setting(SHARED, DEMO_OPENING, secret=True)
    alpha: float = setting(SHARED, 2.0)
    layers: int = setting(SHARED, 6)
    opening_steps: int = setting(SHARED, 0)
    context_guard: int = setting(SHARED, 4)
    fresh_only: bool = setting(SHARED, True)
    repeats: str = setting(SHARED, "bigram", choices=("neutral", "bigram"))
    token_map: str = setting(SHARED, "keyed", choices=("keyed", "identity"))
    mm_window: int = setting(SHARED, 2048)
    embed_prefix_tokens: int = setting(SHARED, 512)
    embed_window: int = setting(SHARED, 32)
    compute_dtype: str = setting(SHARED, "float32", choices=COMPUTE_DTYPES)
    # sampling: the rule and the filters (generation only)
    scaling: str = setting(SAMPLING, Tournament.name, choices=RULES)
    delta: float = setting(SAMPLING, 1.5)
    bias: float = setting(SAMPLING, 2.0)
    temperature: float = setting(SAMPLING, 1.02)
    top_k: int = setting(SAMPLING, 50)
    top_p: float = setting(SAMPLING, 0.9)
    filter_first: bool = setting(SAMPLING, True)
    neutral: str = setting(SAMPLING, "kept", choices=("kept", "half"))
    # detection policy: how the bits are tested and what counts as watermarked
    old_keys: list[str] = setting(DETECTION, [], secret=True)
    null_model: str = setting(DETECTION, "vocab", choices=("vocab", "mm"))
    unique_tokens: bool = setting(DETECTION, True)
    outputs_once: bool = setting(DETECTION, True)
    target_fpr: float = setting(DETECTION, 0.01)
    window_sizes: list[int] = setting(DETECTION, [128, 256])
    allowed_scripts: list[str] = setting(DETECTION, ["LATIN"])
    # runtime: speed only, never the result
    embed_batch_size: int = setting(RUNTIME, 256)
    source: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
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
        """Returns the JSON-able fields (including the secrets; keep the file private)."""
        data = asdict(self)
        data.pop("source")
        return data

    def public_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` without the secret fields (:func:`secret_fields`)."""
        hidden = secret_fields()
        return {k: v for k, v in self.to_dict().items() if k not in hidden}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes the config as JSON to ``path``."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str | None = None) -> WatermarkConfig:
        """Builds a config from a dict; unknown keys are an error (they are usually typos)."""
        known = {f.name for f in fields(cls)} - {"source"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"unknown watermark config keys {unknown}; known: {sorted(known)}")
        return cls(**data, source=source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WatermarkConfig:
        """Reads a config from a JSON file.

        Raises:
            FileNotFoundError: If the file does not exist.
            ValueError: If it is not a JSON object of valid fields (the message names the file).
        """
        path = Path(path).expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(
                f"watermark config {path} not found; give a JSON file written by "
                "WatermarkConfig.save (watermark/default_config.json is the shipped one)"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as err:
            raise UserError(f"watermark config {path} is not UTF-8 text") from err
        except json.JSONDecodeError as err:
            raise UserError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from err
        if not isinstance(data, dict):
            raise UserError(f"watermark config {path} must hold a JSON object of fields")
        missing = [name for name in RULE_FIELDS_BEFORE_0_2 if name not in data]
        if "scaling" in data and missing:
            logger.warning(
                "watermark config %s names a rule but not %s: they take the shipped defaults "
                "(%s); a config written for version 0.1 meant %s",
                path,
                ", ".join(missing),
                ", ".join(f"{n}={getattr(cls, n)!r}" for n in missing),
                ", ".join(f"{n}={RULE_FIELDS_BEFORE_0_2[n]!r}" for n in missing),
            )
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
        """The keys themselves: ``key`` first (generation uses it), then ``old_keys``.

        Raises:
            ValueError: If an ``env:`` / ``file:`` key cannot be read (the message names the
                variable or file, not a key).
        """
        return [resolve_key(ref, self.resolve_path) for ref in [self.key, *self.old_keys]]

    def mapper_dir(self) -> Path:
        """The mapper folder, resolved; raises a clear error if it does not exist."""
        resolved = Path(self.resolve_path(self.mapper))
        if not resolved.is_dir():
            looked = ", ".join(str(d) for d in search_dirs(self._config_dir()))
            raise FileNotFoundError(
                f"mapper folder {self.mapper!r} not found (looked in {looked}); "
                "train and export one with "
                "`python -m mapper.train` or point `mapper` at an exported folder"
            )
        return resolved


def as_config(config: WatermarkConfig | str | os.PathLike[str] | None) -> WatermarkConfig:
    """Accepts a config, a JSON path, or ``None`` (the shipped default)."""
    if config is None:
        return WatermarkConfig.default()
    if isinstance(config, WatermarkConfig):
        return config
    return WatermarkConfig.load(config)
