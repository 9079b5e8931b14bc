"""The sections of a watermark config, each a frozen dataclass with its own checks.

Every field declares its *kind* (:func:`setting`): whether generation and detection must agree
on it (``shared``), it is generation's alone (``sampling``), detection's alone (``detection``)
or changes speed only (``runtime``). The evaluation's cache keys and the config's fingerprint
read the kinds. A field has one name, its own (``sentences.bits`` is ``bits`` in
:meth:`~watermark.config.watermark_config.WatermarkConfig.evolve`); the names of earlier
versions' files are the upgrade's (:mod:`watermark.config.files`).
:class:`Section` checks types (as the annotations say) and declared choices; each section adds
its ranges in ``validate``. The scheme's section is in :mod:`watermark.config.schemes`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from watermark.base import KEYINGS, SENTENCE_CHOICES, SENTENCE_TESTS, WEIGHT_POWERS
from watermark.config.keys import DEMO_KEY, DEMO_OPENING
from watermark.config.paths import DEFAULT_MAPPER

SHARED = "shared"  # generation and detection must agree on it (models, secrets, green lists)
SAMPLING = "sampling"  # generation only: the strength rule and the sampling filters
DETECTION = "detection"  # detection only: the test and its decision
RUNTIME = "runtime"  # speed only: never changes a text or a result
KINDS = (SHARED, SAMPLING, DETECTION, RUNTIME)
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")  # torch.<name> of the MM and the SE
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")  # a pinned part (watermark.core.identity)
# JSON types of the annotations (bool is not an int here; an int is a float)
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (float, int),
    "bool": (bool,),
    "None": (type(None),),
}


def setting(
    kind: str,
    default: Any,
    *,
    choices: tuple[str, ...] = (),
    secret: bool = False,
    found: bool = False,
) -> Any:
    """A config field of ``kind``; ``choices``: the values it may take; ``secret``: never shown
    in ``repr``, logs or messages; ``found``: the fingerprint names what is loaded for it (a
    part's digest, the LM-head width), not it."""
    meta = {"kind": kind, "choices": choices, "secret": secret, "found": found}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), repr=not secret, metadata=meta)
    return field(default=default, repr=not secret, metadata=meta)


def json_types(annotation: str) -> tuple[type, ...]:
    """The JSON types a field annotated ``annotation`` accepts (``"int | None"``: int or null;
    ``"list[...]"``: a list, ``"dict[...]"``: an object)."""
    types: tuple[type, ...] = ()
    for part in annotation.split("|"):
        part = part.strip()
        containers = {"list": (list,), "dict": (dict,)}
        types += containers.get(part.split("[")[0]) or JSON_TYPES[part]
    return types


@dataclass(frozen=True)
class Section:
    """A config section: its fields and their checks."""

    name: ClassVar[str]

    def problems(self) -> list[str]:
        """Every type, choice or range problem (empty: valid)."""
        found = []
        for f in fields(self):
            value, types = getattr(self, f.name), json_types(f.type)
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
                got = type(value).__name__ if f.metadata["secret"] else repr(value)
                found.append(f"{self.name}.{f.name} must be {names}, got {got}")
            elif f.metadata["choices"] and value not in f.metadata["choices"]:
                found.append(
                    f"{self.name}.{f.name} must be one of {f.metadata['choices']}, got {value!r}"
                )
        return found or self.validate()

    def validate(self) -> list[str]:
        """The section's range problems, once its types are right."""
        return []

    def identity(self) -> dict[str, Any]:
        """What the fingerprint names of this section: its shared fields that are not secret
        and not replaced by what is loaded for them, by name."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.metadata["kind"] == SHARED and not (f.metadata["secret"] or f.metadata["found"])
        }


@dataclass(frozen=True)
class Models(Section):
    """The models and how they read the text (generation and detection share all of it).

    Attributes:
        generator: Generator tokenizer / model (short name, folder or hub id); detection
            tokenizes with it.
        measurement_model: Measurement model (MM) of the entropy gate.
        embedder: Sentence embedder (SE), see :func:`watermark.models.loaders.load_embedder`.
        mapper: Folder of an exported :class:`~watermark.models.semantic_mapper.SemanticMapper`.
        mapper_digest, embedder_digest: ``"sha256:..."`` of the tensors; loading refuses another
            part (:mod:`watermark.core.identity`). ``None``: the shipped digest for the shipped
            part, else unpinned (loading warns).
        vocab_size: LM-head width V; ``None`` reads it from the generator, a value is checked.
        mm_start_token: Token the MM conditions on before the first generated token; ``None``:
            the MM tokenizer's BOS, else its EOS.
        mm_window: W: the MM sees at most the last W-1 tokens, cut at multiples of W/2.
        embed_prefix_tokens: P: the SE embeds at most the first P generated tokens of a prefix.
        embed_window: W > 0: the SE embeds only the last W tokens (a local context that moves
            with a pasted passage); 0: the prefix from its start, cut at P.
    """

    name: ClassVar[str] = "models"
    generator: str = setting(SHARED, "smollm2-135m")
    measurement_model: str = setting(SHARED, "smollm2-135m")
    embedder: str = setting(SHARED, "minilm", found=True)
    mapper: str = setting(SHARED, DEFAULT_MAPPER, found=True)
    mapper_digest: str | None = setting(SHARED, None, found=True)
    embedder_digest: str | None = setting(SHARED, None, found=True)
    vocab_size: int | None = setting(SHARED, None, found=True)
    mm_start_token: str | None = setting(SHARED, None)
    mm_window: int = setting(SHARED, 2048)
    embed_prefix_tokens: int = setting(SHARED, 512)
    embed_window: int = setting(SHARED, 32)

    def validate(self) -> list[str]:
        found = []
        for part in ("mapper_digest", "embedder_digest"):
            value = getattr(self, part)
            if value is not None and not DIGEST.fullmatch(value):
                found.append(f"models.{part} must be 'sha256:' and 64 hex digits, got {value!r}")
        if self.vocab_size is not None and self.vocab_size < 1:
            found.append(f"models.vocab_size must be >= 1 or null, got {self.vocab_size}")
        if self.mm_window < 2 or self.embed_prefix_tokens < 1:
            found.append(
                "need models.mm_window >= 2 and models.embed_prefix_tokens >= 1, got "
                f"{self.mm_window}, {self.embed_prefix_tokens}"
            )
        if self.embed_window < 0:
            found.append(
                f"models.embed_window must be >= 0 (0: whole prefix), got {self.embed_window}"
            )
        return found


@dataclass(frozen=True)
class Keys(Section):
    """The secrets. Never logged.

    Attributes:
        key: Secret key of the token map and the sentence layer, or ``"env:NAME"`` /
            ``"file:PATH"`` (:mod:`watermark.config.keys`).
        old_keys: Earlier keys (same forms) that detection also tries, for both layers; the
            p-value is corrected for the number of keys.
        opening_sentence: Secret sentence embedded for the scheme's first ``opening_steps``.
    """

    name: ClassVar[str] = "keys"
    key: str = setting(SHARED, DEMO_KEY, secret=True)
    old_keys: list[str] = setting(DETECTION, [], secret=True)
    opening_sentence: str = setting(SHARED, DEMO_OPENING, secret=True)

    def validate(self) -> list[str]:
        found = [] if self.key else ["keys.key must be a non-empty string"]
        if not all(isinstance(k, str) and k for k in self.old_keys):
            found.append(
                "keys.old_keys must be a list of non-empty strings (keys, env:NAME or file:PATH)"
            )
        return found


@dataclass(frozen=True)
class Sentences(Section):
    """The sentence layer (:mod:`watermark.sentences`): a mark in the meaning of each
    sentence, chosen among candidate sentences. Off while ``bits`` is 0.

    Attributes:
        bits: Keyed mapper outputs tested per sentence (0: the layer is off).
        candidates: N: candidate sentences sampled per sentence, the best kept (generation).
        context_bits: c: the targets are keyed by the signs of c further outputs (0: one set).
        keying: Where the c signs are read: the ``previous`` sentence, or its ``own`` outputs.
        resample_every: k: every k tokens the candidates still being written are ranked by their
            partial sentence's score; the lower half continue copies of the upper half (0: off).
        choice: Candidates ranked by ``score`` (tanh) or by their z after a rewrite (``survival``).
        test: ``hits`` (count the keyed signs on their targets) or ``margin`` (weigh each hit by
            how far its output sits from zero; still exact over keys). Detection only.
        weight_power: The margin test's weights to this power, 1-4 (detection only).
        mapper: Folder of the layer's own mapper (``None``: the token level's).
        embedder: Folder of the layer's own SE, as ``SentenceTransformer.save`` writes it
            (``None``: the token level's); its width must be the layer's mapper's input width.
        mapper_digest, embedder_digest: ``"sha256:..."`` of their tensors; loading refuses
            another (``None``: warns).
    """

    name: ClassVar[str] = "sentences"
    bits: int = setting(SHARED, 0)
    candidates: int = setting(SAMPLING, 4)
    context_bits: int = setting(SHARED, 0)
    keying: str = setting(SHARED, "previous", choices=KEYINGS)
    resample_every: int = setting(SAMPLING, 0)
    choice: str = setting(SAMPLING, "score", choices=SENTENCE_CHOICES)
    test: str = setting(DETECTION, "hits", choices=SENTENCE_TESTS)
    weight_power: int = setting(DETECTION, 1, choices=WEIGHT_POWERS)
    mapper: str | None = setting(SHARED, None, found=True)
    mapper_digest: str | None = setting(SHARED, None, found=True)
    embedder: str | None = setting(SHARED, None, found=True)
    embedder_digest: str | None = setting(SHARED, None, found=True)

    @property
    def on(self) -> bool:
        return self.bits > 0

    def validate(self) -> list[str]:
        found = []
        if min(self.bits, self.candidates - 1, self.resample_every) < 0:
            found.append(
                "need sentences.bits >= 0, candidates >= 1, resample_every >= 0; "
                f"got {self.bits}, {self.candidates}, {self.resample_every}"
            )
        if not 0 <= self.context_bits <= 8:
            found.append(f"sentences.context_bits must be in 0..8, got {self.context_bits}")
        for part in ("mapper_digest", "embedder_digest"):
            value = getattr(self, part)
            if value is not None and not DIGEST.fullmatch(value):
                found.append(f"sentences.{part} is not sha256:<64 hex>: {value!r}")
        return found

    def identity(self) -> dict[str, Any]:
        """Named only when the layer is on, the keying only when it is not the first one, so
        that the fingerprints of earlier configs hold (the layer's own mapper and SE are named by
        their found digests: :func:`watermark.core.identity.fingerprint`)."""
        if not self.on:
            return {}
        named = {"sentence_bits": self.bits, "sentence_context": self.context_bits}
        return {**named, **({"sentence_keying": self.keying} if self.keying != "previous" else {})}


@dataclass(frozen=True)
class Detection(Section):
    """The test and its decision (detection only).

    Attributes:
        target_fpr: ``is_watermarked`` is the verdict's p-value below it.
        window_sizes: Windowed test sizes in tokens (e.g. ``[128, 256]``) for partly watermarked
            text (:func:`watermark.detect.stats.windowed_test`). Empty: the whole text only.
        unique_tokens: Count each token id once (its first scored occurrence).
        outputs_once: Count each mapper output once per tested span.
        allowed_scripts: Unicode scripts the detector scores; texts mostly in others are not.
    """

    name: ClassVar[str] = "detection"
    target_fpr: float = setting(DETECTION, 0.01)
    window_sizes: list[int] = setting(DETECTION, [128, 256])
    unique_tokens: bool = setting(DETECTION, True)
    outputs_once: bool = setting(DETECTION, True)
    allowed_scripts: list[str] = setting(DETECTION, ["LATIN"])

    def validate(self) -> list[str]:
        found = []
        if not 0 < self.target_fpr < 1:
            found.append(f"detection.target_fpr must be in (0, 1), got {self.target_fpr}")
        if not all(
            isinstance(w, int) and not isinstance(w, bool) and w >= 2 for w in self.window_sizes
        ):
            found.append(f"detection.window_sizes must be integers >= 2, got {self.window_sizes}")
        if not self.allowed_scripts or not all(isinstance(x, str) for x in self.allowed_scripts):
            found.append(
                "detection.allowed_scripts must be a non-empty list of strings, e.g. ['LATIN']"
            )
        return found


@dataclass(frozen=True)
class Runtime(Section):
    """How the models run.

    Attributes:
        compute_dtype: dtype of the MM and the SE; it moves entropies and embeddings slightly,
            so detect with the generation's dtype (hence shared).
        embed_batch_size: Batch size of the sentence embedder (speed only).
    """

    name: ClassVar[str] = "runtime"
    compute_dtype: str = setting(SHARED, "float32", choices=COMPUTE_DTYPES)
    embed_batch_size: int = setting(RUNTIME, 256)

    def validate(self) -> list[str]:
        if self.embed_batch_size < 1:
            return [f"runtime.embed_batch_size must be >= 1, got {self.embed_batch_size}"]
        return []
