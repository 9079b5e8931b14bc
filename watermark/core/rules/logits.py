"""The strength rules on logits: how a step's green lists change the sampling distribution.

:func:`apply_rule` turns next-token logits (B, V) into the logits that are sampled from, given
each row's mapper signs (B, D), the keyed token maps (L, V) that turn them into ``L`` green lists
(1 for the biasing rules, ``layers`` for the tournament) and the rows whose gate is open. The
rule itself is the scheme's (:meth:`watermark.config.schemes.Scheme.mark`: ``paper``, ``additive``
or ``tournament``); this module runs it on a batch. The sampling filters of the config (top-k,
then top-p) are part of the output, so the processor returns exactly what is sampled.

``repeated`` tokens (``repeats="bigram"``: tokens already in the generated text) read each list
at their dimension shifted by the row's ``repeat_shift`` (the keyed shift of its previous
token), so their bits differ from their first occurrence's and follow the token before them.

``neutral`` tokens (the config's ``fresh_only``: with ``repeats="bigram"`` the tokens whose pair
with the previous token is already in the generated text, and EOS) are handled by the config's
``neutral``:

* ``"kept"``: they keep the probability the model gives them, exactly; the rule runs over the
  other tokens only, within the mass those leave. The chance of repeating a pair is then the
  unwatermarked model's at every step, whatever the green lists, and the tournament stays
  distribution-preserving.
* ``"half"``: v_hat = 1/2 in every list, the mean of a random green bit. On average over keys
  the rule neither favours nor disfavours them, but at a given step the tournament moves mass
  onto them when the fresh tokens are red, and a text whose context repeats meets the same
  lists again, so it can fall into loops.

``filter_first`` applies top-k / top-p before the rule instead of after it. The rule then only
re-weights tokens the model itself would sample: a boost cannot pull a tail token into
the nucleus. The tournament is distribution-preserving only with ``filter_first``, and then runs
on each row's top-k candidates only.

The sampling temperature divides every row's logits first, as transformers' temperature warper
does before top-k / top-p. Rows whose gate is closed get the temperature and the filters only;
-inf logits stay -inf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from watermark.config.schemes import Scheme


def filter_logits(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Top-k, then top-p (nucleus) filtering; removed entries become -inf.

    Top-p keeps the smallest set of most likely tokens whose probability reaches ``top_p`` (at
    least one token), as transformers' ``TopPLogitsWarper`` does.

    Args:
        logits: Float tensor (B, V).
        top_k: k (0 disables).
        top_p: Nucleus mass in (0, 1] (1 disables).
    """
    out = logits
    if 0 < top_k < out.shape[-1]:
        top = torch.topk(out, top_k, dim=-1)
        out = out.masked_fill(out < top.values[:, -1:], float("-inf"))
        if top_p < 1.0 and bool((torch.isfinite(out).sum(-1) == top_k).all()):
            # no tie at the k-th value: the k candidates, already sorted, are every finite logit
            kept = top.values.masked_fill(_past_nucleus(top.values, top_p), float("-inf"))
            return out.scatter(-1, top.indices, kept)
    if top_p < 1.0:
        ordered, order = torch.sort(out, dim=-1, descending=True)
        drop = _past_nucleus(ordered, top_p)
        out = out.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return out


def _past_nucleus(ordered: torch.Tensor, top_p: float) -> torch.Tensor:
    """Bool, the shape of ``ordered`` (logits sorted in descending order per row): the entries
    outside the top-p nucleus (never the first)."""
    probs = torch.softmax(ordered, dim=-1)
    before = torch.cumsum(probs, dim=-1) - probs  # mass of strictly more likely tokens
    drop = before >= top_p
    drop[:, 0] = False
    return drop


def green_values(
    green_dims: torch.Tensor, maps: torch.Tensor, neutral: torch.Tensor | None
) -> torch.Tensor:
    """v_hat of some tokens per list: (B, L, N) floats, 1/2 where ``neutral`` (B, N) is set.

    Args:
        green_dims: Bool (B, D) mapper signs.
        maps: Long (L, B, N) dimension of each row's tokens in each list.
        neutral: Bool (B, N) or None.
    """
    dims = maps.permute(1, 0, 2)  # (B, L, N)
    bits = green_dims.gather(1, dims.reshape(dims.shape[0], -1)).reshape(dims.shape).float()
    return bits if neutral is None else bits.masked_fill(neutral[:, None, :], 0.5)


def shift_repeats(
    maps: torch.Tensor, repeated: torch.Tensor | None, shift: torch.Tensor | None, dims: int
) -> torch.Tensor:
    """Row maps (L, B, N) with the ``repeated`` (B, N) entries read at ``(dim + shift) % D``,
    ``shift`` (L, B) being each row's repeat shift per list."""
    if repeated is None or shift is None:
        return maps
    moved = (maps + shift[:, :, None]) % dims
    return torch.where(repeated[None], moved, maps)


def keep_mass(base: torch.Tensor, marked: torch.Tensor, kept: torch.Tensor) -> torch.Tensor:
    """Log-probabilities (B, N) where the ``kept`` tokens (bool (B, N)) have their probability
    under ``base`` and the others share the rest of the mass as under ``marked`` (logits of a
    rule that ran with the kept tokens at -inf). A row with no other token is ``base``'s."""
    probs = torch.softmax(base.double(), dim=-1)
    rest = 1.0 - (probs * kept).sum(-1, keepdim=True)
    free = torch.softmax(marked.double(), dim=-1).nan_to_num(0.0)
    return torch.where(kept, probs, rest.clamp_min(0.0) * free).log().to(base.dtype)


def _mark_candidates(
    scheme: Scheme,
    base: torch.Tensor,
    green_dims: torch.Tensor,
    token_maps: torch.Tensor,
    neutral: torch.Tensor | None,
    repeated: torch.Tensor | None,
    repeat_shift: torch.Tensor | None,
) -> torch.Tensor:
    """The scheme on each row's top-k tokens only (the others are -inf after filtering)."""
    cand = torch.topk(base, scheme.top_k, dim=-1).indices  # (B, k)
    mask = None if neutral is None else neutral.gather(1, cand)
    again = None if repeated is None else repeated.gather(1, cand)
    maps = shift_repeats(token_maps[:, cand], again, repeat_shift, green_dims.shape[1])
    logits = base.gather(1, cand)
    if scheme.keep_neutral and mask is not None:
        free = logits.masked_fill(mask, float("-inf"))
        marked = scheme.mark(free, green_values(green_dims, maps, None))
        logp = keep_mass(logits, marked, mask)
    else:
        logp = scheme.mark(logits, green_values(green_dims, maps, mask))
    return torch.full_like(base, float("-inf")).scatter(1, cand, logp)


def _mark_vocabulary(
    scheme: Scheme,
    base: torch.Tensor,
    green_dims: torch.Tensor,
    token_maps: torch.Tensor,
    neutral: torch.Tensor | None,
    repeated: torch.Tensor | None,
    repeat_shift: torch.Tensor | None,
) -> torch.Tensor:
    """The scheme on every token of each row."""
    kept = neutral if scheme.keep_neutral else None
    free = base if kept is None else base.masked_fill(kept, float("-inf"))
    neutral = None if scheme.keep_neutral else neutral
    n_lists = token_maps.shape[0] if scheme.multi_list else 1
    maps = token_maps[:n_lists, None, :].expand(-1, base.shape[0], -1)
    shift = None if repeat_shift is None else repeat_shift[:n_lists]
    maps = shift_repeats(maps, repeated, shift, green_dims.shape[1])
    green = green_values(green_dims, maps, neutral)
    marked = scheme.mark(free, green)
    return marked if kept is None else keep_mass(base, marked, kept)


def apply_rule(
    logits: torch.Tensor,
    scheme: Scheme,
    green_dims: torch.Tensor,
    token_maps: torch.Tensor,
    gated: torch.Tensor,
    neutral: torch.Tensor | None = None,
    repeated: torch.Tensor | None = None,
    repeat_shift: torch.Tensor | None = None,
) -> torch.Tensor:
    """The sampling logits of a batch under ``scheme``: its temperature, its rule with its
    strength on the gated rows, and its top-k / top-p filters (before the rule with
    ``filter_first``, else after it), its ``neutral`` tokens at v_hat = 1/2 or keeping their
    probability (``neutral="kept"``).

    Args:
        logits: Float tensor (B, V) of next-token logits.
        scheme: The strength rule and its sampling settings (:mod:`watermark.config.schemes`).
        green_dims: Bool tensor (B, D): the mapper signs of each row's step.
        token_maps: Long tensor (L, V): token -> dimension, per green list; token i is green in
            list l iff ``green_dims[:, token_maps[l, i]]`` (biasing rules read list 0).
        gated: Bool tensor (B,): rows to watermark.
        neutral: Bool (B, V) of tokens the rule must not favour, or None.
        repeated: Bool (B, V) of tokens read at a shifted dimension, or None.
        repeat_shift: Long (L, B): each row's shift per list (with ``repeated``).

    Returns:
        New float tensor (B, V).
    """
    if scheme.temperature != 1.0:
        logits = logits / scheme.temperature
    top_k, top_p, first = scheme.top_k, scheme.top_p, scheme.filter_first
    base = filter_logits(logits, top_k, top_p) if first else logits
    on_candidates = scheme.on_candidates and first and 0 < top_k < logits.shape[-1]
    mark = _mark_candidates if on_candidates else _mark_vocabulary
    marked = mark(scheme, base, green_dims, token_maps, neutral, repeated, repeat_shift)
    out = torch.where(gated.to(logits.device)[:, None], marked, base)
    return out if first else filter_logits(out, top_k, top_p)
