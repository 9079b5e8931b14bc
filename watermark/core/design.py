"""The kinds of config field, and the scheme's design: switches a user config does not set.

Every field of :class:`~watermark.core.config.WatermarkConfig` and of :class:`Design` declares
its kind (:func:`setting`): whether generation and detection must agree on it (``shared``), it
is generation's alone (``sampling``), detection's alone (``detection``) or changes speed only
(``runtime``). The evaluation's cache keys and the identity fingerprint read the kinds.

:class:`Design` holds what the shipped schemes fix and the evaluation's ablations vary: how
repeats are treated, the token map, the windows of the models, the order of the sampling
filters, the paper's opening list. Its defaults are the shipped ones; a config of 0.1-0.4
that set them (``configs/watermark-paper.json``, ``configs/watermark-0.4.json``) still loads,
and a saved config writes only the values that differ from the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from watermark.core.keys import DEMO_OPENING

# the kinds of field
SHARED = "shared"  # generation and detection must agree on it (models, secrets, green lists)
SAMPLING = "sampling"  # generation only: the strength rule and the sampling filters
DETECTION = "detection"  # detection only: the test and its decision
RUNTIME = "runtime"  # speed only: never changes a text or a result
KINDS = (SHARED, SAMPLING, DETECTION, RUNTIME)


def setting(
    kind: str,
    default: Any,
    *,
    choices: tuple[str, ...] = (),
    secret: bool = False,
    section: str = "design",
) -> Any:
    """A config field of ``kind``; ``choices``: the values it may take (checked when a config is
    made); ``secret``: never shown in ``repr``, logs or error messages; ``section``: where a
    saved config writes it. A list default is copied per config."""
    meta = {"kind": kind, "choices": choices, "secret": secret, "section": section}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), repr=not secret, metadata=meta)
    return field(default=default, repr=not secret, metadata=meta)


@dataclass(frozen=True)
class Design:
    """The scheme's design: fixed by the shipped schemes, varied by the evaluation.

    Attributes:
        vocab_size: LM-head width V (the token map's length); ``None`` reads it from the model
            config at load time, a stored value is checked against it.
        mm_start_token: Token the MM conditions on before the first generated token; ``None``:
            the MM tokenizer's BOS, else its EOS.
        opening_sentence: Secret sentence embedded for the first ``opening_steps`` steps.
        opening_steps: M: steps 1..M use the opening sentence and skip the gate (the paper's).
        context_guard: h: a step whose last h tokens already occurred as a run earlier in the
            text is neither watermarked nor scored (0: off).
        fresh_only: The rule acts only on tokens not yet in the text; detection tests a token at
            its first occurrence only. Needs ``unique_tokens``.
        repeats: A repeated token under ``fresh_only``: ``neutral`` (never tested) or ``bigram``
            (its bit read at a dimension shifted per previous token, tested at the pair's first
            occurrence; :mod:`watermark.core.token_map`).
        token_map: ``keyed`` (balanced keyed map of tokens onto the D mapper outputs) or
            ``identity`` (D == V).
        mm_window: W: the MM sees at most the last W-1 tokens, cut at multiples of W/2.
        embed_prefix_tokens: P: the SE embeds at most the first P generated tokens of a prefix.
        embed_window: W > 0: the SE embeds only the last W tokens (a local context that moves
            with a pasted passage); 0: the prefix from its start, cut at P.
        filter_first: Apply top-k / top-p before the rule (else after it, the paper's order).
        loop_penalty: lambda: at a step the context guard closes (its last h tokens already ran
            earlier in the text), each token that followed such an earlier run, and so would
            extend the repeat, loses lambda x (L - h + 1) in logit, L the length of the common run
            (at most 32); generation only, the detector's test is unchanged (0: off, 0.1-0.6;
            inert where ``context_guard`` is 0).
        neutral: Tokens the rule must not favour (a pair already in the text, EOS): ``kept``
            keeps their model probability (0.5.0), ``half`` gives them v_hat = 1/2 (0.2-0.4).
        null_model: gamma_t, the chance a scored token is green under H0: ``vocab`` (the green
            share of the vocabulary) or ``mm`` (the MM's green mass; same tokenizer only).
        unique_tokens: Count each token id once (its first scored occurrence).
        outputs_once: Count each mapper output once per tested span.
        allowed_scripts: Unicode scripts the detector scores; texts mostly in others are not.
        sentence_candidates: N: candidate sentences sampled per sentence, the best kept
            (generation only; with ``sentence_bits`` > 0).
        sentence_context_bits: c: the sentence layer's targets are keyed by the signs of c
            further outputs (0: one global set of targets).
        sentence_keying: Where those c signs are read: ``previous`` (the previous sentence) or
            ``own`` (the sentence itself, so a rewrite that reorders sentences keeps its group).
        sentence_test: ``hits`` (count the keyed signs that hit their targets) or ``margin``
            (weigh each hit by how far its output sits from zero; still exact over keys).
            Detection only: generation keeps the same candidates either way.
    """

    vocab_size: int | None = setting(SHARED, None)
    mm_start_token: str | None = setting(SHARED, None)
    opening_sentence: str = setting(SHARED, DEMO_OPENING, secret=True)
    opening_steps: int = setting(SHARED, 0)
    context_guard: int = setting(SHARED, 4)
    fresh_only: bool = setting(SHARED, True)
    repeats: str = setting(SHARED, "bigram", choices=("neutral", "bigram"))
    token_map: str = setting(SHARED, "keyed", choices=("keyed", "identity"))
    mm_window: int = setting(SHARED, 2048)
    embed_prefix_tokens: int = setting(SHARED, 512)
    embed_window: int = setting(SHARED, 32)
    filter_first: bool = setting(SAMPLING, True)
    neutral: str = setting(SAMPLING, "kept", choices=("kept", "half"))
    loop_penalty: float = setting(SAMPLING, 0.5)
    null_model: str = setting(DETECTION, "vocab", choices=("vocab", "mm"))
    unique_tokens: bool = setting(DETECTION, True)
    outputs_once: bool = setting(DETECTION, True)
    allowed_scripts: list[str] = setting(DETECTION, ["LATIN"])
    sentence_candidates: int = setting(SAMPLING, 4)
    sentence_context_bits: int = setting(SHARED, 0)
    sentence_keying: str = setting(SHARED, "previous", choices=("previous", "own"))
    sentence_test: str = setting(DETECTION, "hits", choices=("hits", "margin"))
