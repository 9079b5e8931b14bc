"""The paper's spoofing experiment: how much of a green list token frequencies give away.

An attacker who can query the watermarked model counts how often each of a set C of common
tokens (the most frequent generator tokens of human text) appears in a fixed context, takes the
``top`` most frequent ones as H, and guesses that they are green. The decryption rate is the share
of H that is truly green in that context (chance: the green fraction, 0.5).

Contexts: KGW-0 has one green list, so every position counts; KGW-1 / KGW-2 count the tokens
that follow the most frequent 1- / 2-token context of the watermarked texts (the paper fixes
"the"; the attacker's best context has the most observations); for our method the sentence
embedding is held fixed (the paper's strengthened attack: every watermarked step uses the opening
sentence's green list, the entropy gate is unchanged), so every position counts. Without any
strengthening, the first ``OPENING_TOKENS`` tokens of ordinary watermarked texts are counted too
(``ours_opening``): with opening steps M > 0 they share the opening sentence's green list; with
M = 0 each step has its own prefix's list, and a token's "greenness" is the share of those
steps' lists (over all texts) in which it is green (:func:`opening_green_share`; for a shared
list this is the list itself). The same count on unwatermarked generations of the same prompts
is the control.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch

from evaluation.methods import Method, OursMethod
from watermark.api import Watermark
from watermark.core.green_lists import GreenLists
from watermark.core.scoring import WatermarkCore
from watermark.core.text import encode_text

CONTEXT_WIDTH = {"kgw0": 0, "kgw1": 1, "kgw2": 2, "ours": 0}
OPENING_TOKENS = 50  # the first tokens of each text counted for ``ours_opening``


class FixedSemanticsCore(WatermarkCore):
    """A core whose green list is the opening sentence's at every step, gate unchanged: the
    paper's strengthened spoofing attack, with the sentence embedding held fixed."""

    def green_lists(
        self,
        steps: Sequence[int],
        texts: Sequence[Sequence[int]],
        progress: bool = False,
        fixed: bool = False,
    ) -> GreenLists:
        """The opening sentence's list at every step (``progress`` and ``fixed``, how the core
        embeds, do not matter here: nothing is embedded)."""
        signs = self.semantic.no_signs(len(steps))
        if len(steps):
            signs[:] = self.opening_signs()
        return self.semantic.from_signs(signs)


def fixed_semantics(method: OursMethod) -> OursMethod:
    """Our method with the sentence embedding held fixed (the strengthened spoofing attack)."""
    core = method.wm.core
    fixed = FixedSemanticsCore(core.config, core.tokenizer, core.measurement, core.semantic)
    return OursMethod(
        Watermark(core.config, fixed),
        method.model,
        method.key + "-fixedsem",
        method.detect_key + "-fixedsem",
    )


def common_tokens(tokenizer: object, texts: Sequence[str], size: int) -> list[int]:
    """The ``size`` most frequent generator tokens of ``texts`` that contain a letter."""
    counts = Counter(i for t in texts for i in encode_text(tokenizer, t))
    keep = [i for i, _ in counts.most_common() if any(c.isalpha() for c in tokenizer.decode([i]))]
    return keep[:size]


def most_common_context(ids_list: Sequence[Sequence[int]], width: int) -> list[int]:
    """The most frequent ``width``-token context (followed by a token) in ``ids_list``."""
    if width == 0:
        return []
    counts = Counter(tuple(ids[i - width : i]) for ids in ids_list for i in range(width, len(ids)))
    return list(counts.most_common(1)[0][0]) if counts else []


def follower_counts(ids_list: Sequence[Sequence[int]], context: Sequence[int]) -> Counter:
    """Counts of the tokens that follow ``context`` (every token if it is empty)."""
    c, counts = len(context), Counter()
    ctx = list(context)
    for ids in ids_list:
        for i in range(c, len(ids)):
            if list(ids[i - c : i]) == ctx:
                counts[ids[i]] += 1
    return counts


def decryption_rate(
    counts: Counter, common: Sequence[int], green: torch.Tensor, top: int
) -> tuple[float, int]:
    """Share of H (the ``top`` most frequent tokens of ``common`` seen in ``counts``) that is green.

    ``green`` is a bool (V,) green list, or a float (V,) share of lists in which each token is
    green (then the rate is H's mean share).

    Returns:
        (rate, |H|); rate is NaN if no token of ``common`` was seen.
    """
    seen = sorted((-counts[i], i) for i in common if counts[i] > 0)
    chosen = [i for _, i in seen[:top]]
    if not chosen:
        return float("nan"), 0
    return sum(float(green[i]) for i in chosen) / len(chosen), len(chosen)


def opening_green_share(wm: Watermark, ids_list: Sequence[Sequence[int]]) -> torch.Tensor:
    """Float (V,): per token, the share of the first ``OPENING_TOKENS`` steps' first green lists
    (all steps of all texts, whether gated or not) in which it is green."""
    steps = [t for ids in ids_list for t in range(1, min(len(ids), OPENING_TOKENS) + 1)]
    texts = [ids for ids in ids_list for _ in range(min(len(ids), OPENING_TOKENS))]
    if not steps:
        return torch.zeros(wm.core.vocab_size)
    return wm.core.green_lists(steps, texts).mask()[:, 0].float().mean(0)


def spoofing(
    method: Method,
    tokenizer: object,
    marked_ids: Sequence[Sequence[int]],
    clean_ids: Sequence[Sequence[int]],
    common: Sequence[int],
    top: int,
    width: int | None = None,
    green: torch.Tensor | None = None,
) -> dict:
    """Decryption rate on watermarked generations and on unwatermarked ones (control).

    ``green`` replaces the method's green list of the attacker's context (see
    :func:`decryption_rate`).
    """
    width = CONTEXT_WIDTH[method.name] if width is None else width
    context = most_common_context(marked_ids, width)
    green = method.green_mask(context) if green is None else green
    marked = follower_counts(marked_ids, context)
    rate, size = decryption_rate(marked, common, green, top)
    control, _ = decryption_rate(follower_counts(clean_ids, context), common, green, top)
    return {
        "context": tokenizer.decode(context) if context else "",
        "decryption_rate": rate,
        "control_rate": control,
        "H": size,
        "observations": sum(marked.values()),
        "green_fraction_of_C": sum(bool(green[i]) for i in common) / max(1, len(common)),
    }
