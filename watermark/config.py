"""The watermark configuration: everything generation and detection must share.

A :class:`WatermarkConfig` is a plain dataclass saved and loaded as JSON. Generation and detection
derive the entropy gate, the green lists and the statistics from the same fields, so a text can
only be checked with the configuration (and secret key) it was generated with.

Relative paths (the mapper folder, or model folders) follow the project's one rule,
:func:`watermark.paths.resolve_path`: next to the JSON file the config was loaded from, the
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

from watermark.config_checks import problems
from watermark.errors import UserError
from watermark.keys import DEMO_KEY, resolve_key
from watermark.paths import DEFAULT_MAPPER, PACKAGE_DIR, resolve_path, search_dirs
from watermark.rules import STRENGTH_FIELD

DEFAULT_CONFIG_PATH = PACKAGE_DIR / "default_config.json"

DEMO_OPENING = "The lighthouse keeper counted the ships that passed before dawn."

logger = logging.getLogger(__name__)

# rule fields whose default changed (to the tournament in 0.2.0) or that were added later, with the
# value every config of 0.1.x meant: a file that names its rule but not these fields takes today's
# defaults, so loading it warns (text made under 0.1's default: configs/watermark-additive.json)
RULE_FIELDS_BEFORE_0_2 = {
    "temperature": 1.0, "context_guard": 0, "repeats": "neutral", "outputs_once": False
}  # fmt: skip


@dataclass(frozen=True)
class WatermarkConfig:
    """Shared settings of watermarked generation and detection.

    Frozen: a changed config is made with ``dataclasses.replace(cfg, field=value)``, which runs
    the checks again.

    The defaults are the shipped defaults (``watermark/default_config.json`` holds the same
    values, including the public demo key and opening sentence: set your own secrets).

    Attributes:
        mapper: Folder of an exported :class:`mapper.semantic_mapper.SemanticMapper`.
        generator: Generator tokenizer / model name (short name, folder or hub id). Detection
            tokenizes texts with its tokenizer; ``python -m watermark generate`` also loads the
            model.
        vocab_size: LM-head width V of the generator (the token map's length). ``None`` reads it
            from the generator's model config at load time; a stored value is checked against it.
        measurement_model: Measurement model (MM) for the entropy gate (AWTI).
        mm_start_token: Token the MM conditions on before the first generated token (the empty
            prefix). ``None`` uses the MM tokenizer's BOS token, else its EOS token.
        embedder: Sentence embedder (SE) name, see :func:`watermark.models.load_embedder`.
        mapper_digest: ``"sha256:..."`` of the mapper's tensors: the mapper is key material, and
            loading refuses another one (:mod:`watermark.identity`). ``None``: the shipped
            mapper's digest when ``mapper`` is the shipped path, else unpinned (loading warns).
        embedder_digest: The same for the sentence embedder (``None``: the shipped digest when
            ``embedder`` is the shipped ``minilm``).
        key: Secret key of the token map: the key itself, ``"env:NAME"`` (an environment
            variable) or ``"file:PATH"`` (a key file), see :mod:`watermark.keys`. Never logged.
        old_keys: Earlier keys (same forms) that detection also tries, for key rotation; the
            p-value is corrected for the number of keys tried.
        opening_sentence: Secret opening sentence embedded for the first ``opening_steps`` steps.
        alpha: Entropy threshold in nats: steps t > M are watermarked iff H(P_MM) >= alpha.
        delta: Strength of the multiplicative rules ``paper`` and ``floor`` (AWTS).
        bias: Strength of the ``additive`` rule (added to green logits).
        layers: Green lists per step of the ``tournament`` rule (its strength); the biasing
            rules read one list whatever it says, as they ignore each other's strengths.
        opening_steps: M; generated steps t = 1..M use the opening sentence and skip the gate.
        temperature: Sampling temperature, applied to the logits before the filters and the rule
            at every step (1: the model's own distribution). Generation only.
        top_k: Top-k of sampling; also sets the floor of ``floor``.
        top_p: Nucleus mass of sampling.
        scaling: The strength rule (see :mod:`watermark.rules`): ``"paper"`` is the paper's
            ``l * (1 + delta * v_hat)``, ``"floor"`` the same measured from the smallest top-k
            logit, ``"additive"`` ``l + bias * v_hat``, ``"tournament"`` distribution-preserving
            tournament sampling over ``layers`` green lists.
        filter_first: Apply top-k / top-p before the rule (else after it, the paper's order).
        context_guard: h; a step whose last h generated tokens already occurred as a contiguous
            run earlier in the generated text is neither watermarked nor scored (0: off).
        fresh_only: The rule acts only on tokens that do not occur yet in the generated text;
            tokens already there (and EOS) get the neutral v_hat = 1/2, and detection tests each
            token at its first occurrence only (if that step is scored). Needs ``unique_tokens``.
        repeats: What ``fresh_only`` does with a token already in the generated text:
            ``"neutral"`` gives it v_hat = 1/2 and never tests it; ``"bigram"`` gives it the
            green bit of a dimension shifted by a keyed amount per previous token (see
            :mod:`watermark.token_map`); a pair (previous token, token) already in the text stays
            neutral, and detection also tests a repeat at its pair's first occurrence, if that
            step is scored. Needs ``fresh_only`` and the ``vocab`` null.
        token_map: ``"keyed"`` (balanced, keyed permutation of tokens onto the D mapper outputs)
            or ``"identity"`` (requires D == V).
        null_model: Probability gamma_t that a scored token is green under H0: ``"vocab"`` is the
            green fraction of the vocabulary, ``"mm"`` the MM's probability mass on green tokens
            (same-tokenizer MM only).
        unique_tokens: Count each token id once (its first scored occurrence) in the z-test.
        outputs_once: Count each mapper output once per tested span: a bit that reads an output
            already read earlier in the span (by another token, or another list) is left out of
            the test. Two reads of one output in one text agree more often than chance, which
            matters when many lists read the D outputs (``"tournament"``); see
            docs/evaluation.md, "Choosing a tournament default". Detection only.
        target_fpr: False-positive rate of ``is_watermarked`` (``p_value < target_fpr``).
        embed_batch_size: Batch size of the sentence embedder.
        mm_window: W: the MM sees at most the last W-1 generated tokens, cut at multiples of W/2
            (see :func:`watermark.measurement.window_start`); texts shorter than W are not cut.
        embed_prefix_tokens: P: the SE embeds at most the first P generated tokens of a prefix
            (MiniLM reads only 256 word pieces anyway), so long texts cost one embedding per
            step up to P and one for all later steps.
        embed_window: W: when > 0, the SE embeds only the last W generated tokens of the prefix
            (a local semantic context: a passage keeps its green lists wherever it is pasted,
            and each step costs one embedding of at most W tokens); 0 embeds the prefix from
            its start (cut at P).
        compute_dtype: dtype of the MM and the SE (``float32``, ``bfloat16``, ``float16``);
            bfloat16 roughly halves their CPU time on CPUs with bfloat16 units, and moves the
            entropies and embeddings slightly, so texts are detected with the dtype they were
            generated with. The mapper always runs in float32.
        window_sizes: Windowed detection (for text that is only partly watermarked): sizes in
            tokens, e.g. ``[128, 256]``; each window is tested as a text of its own and
            ``is_watermarked`` uses ``window_p_value``, the best window's p-value corrected for
            the number of windows by simulating the null (the whole text counts as one window;
            see :func:`watermark.stats.windowed_test`). Empty: off (the whole-text test only).
            Measured in docs/watermark.md ("Windowed test").
        allowed_scripts: Unicode scripts (first word of the character name) the detector accepts;
            texts whose letters are mostly in other scripts are not scored.
    """

    mapper: str = DEFAULT_MAPPER
    generator: str = "smollm2-135m"
    vocab_size: int | None = None
    measurement_model: str = "smollm2-135m"
    mm_start_token: str | None = None
    embedder: str = "minilm"
    mapper_digest: str | None = None
    embedder_digest: str | None = None
    key: str = field(default=DEMO_KEY, repr=False)
    old_keys: list[str] = field(default_factory=list, repr=False)
    opening_sentence: str = field(default=DEMO_OPENING, repr=False)
    alpha: float = 2.0
    delta: float = 1.5
    bias: float = 2.0
    layers: int = 6
    opening_steps: int = 0
    temperature: float = 1.02
    top_k: int = 50
    top_p: float = 0.9
    scaling: str = "tournament"
    filter_first: bool = True
    context_guard: int = 4
    fresh_only: bool = True
    repeats: str = "bigram"
    token_map: str = "keyed"
    null_model: str = "vocab"
    unique_tokens: bool = True
    outputs_once: bool = True
    target_fpr: float = 0.01
    embed_batch_size: int = 256
    mm_window: int = 2048
    embed_prefix_tokens: int = 512
    embed_window: int = 32
    compute_dtype: str = "float32"
    window_sizes: list[int] = field(default_factory=lambda: [128, 256])
    allowed_scripts: list[str] = field(default_factory=lambda: ["LATIN"])
    source: str | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        found = problems(self)
        if found:
            raise UserError("invalid watermark config: " + "; ".join(found))

    @property
    def strength(self) -> float:
        """The strength parameter of the configured rule (``delta``, ``bias`` or ``layers``)."""
        return getattr(self, STRENGTH_FIELD[self.scaling])

    @property
    def green_lists(self) -> int:
        """Green lists per step: ``layers`` for the tournament, 1 for the biasing rules."""
        return self.layers if self.scaling == "tournament" else 1

    def to_dict(self) -> dict[str, Any]:
        """Returns the JSON-able fields (including the secrets; keep the file private)."""
        data = asdict(self)
        data.pop("source")
        return data

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
                path, ", ".join(missing),
                ", ".join(f"{n}={getattr(cls, n)!r}" for n in missing),
                ", ".join(f"{n}={RULE_FIELDS_BEFORE_0_2[n]!r}" for n in missing),
            )  # fmt: skip
        try:
            return cls.from_dict(data, source=str(path))
        except (TypeError, ValueError) as err:
            raise UserError(f"{path}: {err}") from err

    @classmethod
    def default(cls) -> WatermarkConfig:
        """The configuration shipped with the package (``watermark/default_config.json``)."""
        return cls.load(DEFAULT_CONFIG_PATH)

    def resolve_path(self, value: str) -> str:
        """A path-valued field resolved by :func:`watermark.paths.resolve_path` (next to the
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
