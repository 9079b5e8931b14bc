"""`DetectionResult`: what detection reports for one text, summary and per-token flags.

:class:`DetectionResult` is returned by :meth:`watermark.api.Watermark.detect` (made by
:mod:`watermark.detect.detector`); :meth:`DetectionResult.to_dict` gives the JSON line the command
line prints (:data:`SUMMARY_FIELDS`, plus the per-token lists with ``per_token``); its ``repr``
is the verdict and the few fields that explain it, never the per-token lists.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

SUMMARY_FIELDS = (
    "score",
    "green_fraction",
    "num_scored",
    "num_tokens",
    "awr",
    "num_tested",
    "num_green_tested",
    "expected_green",
    "z_score",
    "p_value",
    "is_watermarked",
    "window_p_value",
    "window",
    "key_index",
    "reason",
    "fingerprint",
    "key_id",
)
# the summary fields a result's repr shows, where they are set
REPR_FIELDS = (
    "is_watermarked",
    "p_value",
    "window_p_value",
    "combined_p_value",
    "z_score",
    "num_scored",
    "num_tokens",
    "reason",
    "key_index",
    "fingerprint",
    "key_id",
)
# the sentence layer's summary fields, in a summary only where the layer ran
SENTENCE_FIELDS = ("sentence_p_value", "num_sentences", "combined_p_value")


def verdict_p_value(p_value: float, window_p_value: float | None) -> float:
    """The p-value a verdict compares with ``target_fpr``: the windowed test's where the config
    tests windows (``window_p_value`` set), else the whole text's."""
    return p_value if window_p_value is None else window_p_value


@dataclass(repr=False)
class DetectionResult:
    """Detection result for one text.

    Attributes:
        score: Paper's score: mean of strength * v_hat over the scored tokens, with the rule's
            strength (``delta`` or ``bias``); under the tournament the mean green bit over its
            lists (0 if nothing is scored; see :meth:`watermark.config.schemes.Scheme.score`).
        green_fraction: Fraction of scored tokens that are green.
        num_scored: |W|, the number of scored tokens.
        num_tokens: T, the number of generator tokens of the text.
        awr: Adaptive watermark rate |W| / T.
        num_tested: Tokens entering the z-test (scored ones, each id once with
            ``unique_tokens``, repeats as the config's ``fresh_only`` and ``repeats`` say).
        num_green_tested: Green bits among them (G; one bit per token and green list).
        expected_green: sum of gamma over the tested bits (E[G] under H0).
        z_score: (G - E[G]) / sd(G) under H0.
        p_value: Exact one-sided p-value P(G' >= G) under H0.
        is_watermarked: :attr:`verdict_p_value` ``< target_fpr``: ``p_value``, or
            ``window_p_value`` with ``window_sizes``, or ``combined_p_value`` with the sentence
            layer.
        window_p_value: With ``window_sizes``: the best window's p-value, corrected for the
            number of windows (see :func:`watermark.detect.stats.windowed_test`; 1 when nothing is
            scored); else ``None``.
        window: With ``window_sizes``: first and last step of the best window.
        key_index: The key that matched best (0: the config's ``key``, k: ``old_keys[k-1]``).
            With several keys, ``p_value`` and ``window_p_value`` are that key's, multiplied by
            the number of keys (Bonferroni, capped at 1).
        key_p_values: Per key tried, its own uncorrected token-level verdict p-value
            (:attr:`token_verdict_p_value`); empty for a text that was not read.
        reason: Why the text was not scored, else ``None``.
        fingerprint: The detecting config's fingerprint (``"wm-..."``, see
            :func:`watermark.core.identity.fingerprint`): texts are tested under what it names.
        key_id: The public id of the key at ``key_index`` (``"key-..."``,
            :func:`watermark.config.keys.key_id`; empty where the caller did not set it).
        token_ids: Generator token ids s_1..s_T.
        tokens: Text piece of each token (concatenation = decoded text).
        scored: Per token, whether it is in W.
        green: Per token, whether it is green in the first green list (False when not scored).
        green_bits: Per token, in how many of the L green lists it is green (0 if not scored).
        tested: Per token, whether it entered the z-test.
        entropy: Per token, MM entropy of its step (None where not computed).
        gamma: Per scored token, its null probability of being green in the first green list
            (None if not scored).
        vocab_green: Per scored token, the green fraction of the vocabulary at its step in the
            first green list: the same values as ``gamma``, the one null.
        sentence_p_value: With the sentence layer (``sentences.bits`` > 0): the exact p-value
            of the sentence test (:mod:`watermark.sentences.significance`), else ``None``.
        sentence_hits, sentence_expected: Its hits T and their null mean.
        num_sentences: The distinct complete sentences it tested.
        sentences: ``[start, end, hits]`` per tested sentence (characters of the text).
        combined_p_value: With the sentence layer: Fisher's combination of the token-level
            verdict p-value and ``sentence_p_value``, which ``is_watermarked`` then compares
            with ``target_fpr``.
    """

    score: float = 0.0
    green_fraction: float = 0.0
    num_scored: int = 0
    num_tokens: int = 0
    awr: float = 0.0
    num_tested: int = 0
    num_green_tested: int = 0
    expected_green: float = 0.0
    z_score: float = 0.0
    p_value: float = 1.0
    is_watermarked: bool = False
    window_p_value: float | None = None
    window: list[int] | None = None
    key_index: int = 0
    key_p_values: list[float] = field(default_factory=list)
    reason: str | None = None
    fingerprint: str = ""
    key_id: str = ""
    token_ids: list[int] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    scored: list[bool] = field(default_factory=list)
    green: list[bool] = field(default_factory=list)
    green_bits: list[int] = field(default_factory=list)
    tested: list[bool] = field(default_factory=list)
    entropy: list[float | None] = field(default_factory=list)
    gamma: list[float | None] = field(default_factory=list)
    vocab_green: list[float | None] = field(default_factory=list)
    sentence_p_value: float | None = None
    sentence_hits: int = 0
    sentence_expected: float = 0.0
    num_sentences: int = 0
    sentences: list[list[int]] = field(default_factory=list)
    combined_p_value: float | None = None

    @property
    def token_verdict_p_value(self) -> float:
        """The token-level test's verdict p-value: the windowed one where the config tests
        windows, else the whole-text one."""
        return verdict_p_value(self.p_value, self.window_p_value)

    @property
    def verdict_p_value(self) -> float:
        """The p-value ``is_watermarked`` compares with ``target_fpr``: the combined one with the
        sentence layer, else :attr:`token_verdict_p_value`."""
        if self.combined_p_value is not None:
            return self.combined_p_value
        return self.token_verdict_p_value

    def __repr__(self) -> str:
        """The verdict and the fields that explain it (:data:`REPR_FIELDS`; ``to_dict()``
        gives every summary field, ``to_dict(per_token=True)`` the per-token lists too)."""
        shown = []
        for name in REPR_FIELDS:
            value = getattr(self, name)
            if value is None or (name == "key_id" and not value):
                continue
            shown.append(f"{name}={value:.3g}" if isinstance(value, float) else f"{name}={value!r}")
        return f"DetectionResult({', '.join(shown)})"

    def to_dict(self, per_token: bool = False) -> dict:
        """JSON-able dict: the summary fields, plus per-token lists if ``per_token``."""
        data = asdict(self)
        if self.sentence_p_value is None:  # no sentence layer: no sentence fields
            for name in (*SENTENCE_FIELDS, "sentence_hits", "sentence_expected", "sentences"):
                data.pop(name)
        if per_token:
            return data
        return {k: data[k] for k in SUMMARY_FIELDS + SENTENCE_FIELDS if k in data}
