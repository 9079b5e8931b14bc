"""Reference implementation: the paper's Algorithm 2 and detection, one token at a time.

Slow and plain on purpose; it is the oracle the fast paths are tested against. It reads only the
raw components of a loaded :class:`~watermark.api.Watermark` (models, tokenizers, the token
map and the config) and re-derives everything else itself: no KV caches, no batching, one full
forward of the generator and of the measurement model per step, one embedding per prefix.

For step t (1-based) with generated prefix S_{0:t-1}:

0. Context guard (h > 0): if the last h tokens of S_{0:t-1} occur as a contiguous run starting
   earlier in S_{0:t-1}, leave the step alone.
1. t <= M: v_hat = SLSVE(opening sentence); watermark.
2. t > M: H = entropy of the MM after its context for S_{0:t-1} (cut by the window rule of
   ``mm_window``); if H >= alpha, v_hat = SLSVE(decode(first ``embed_prefix_tokens`` tokens of
   S_{0:t-1}), or of its last ``embed_window`` tokens when that is > 0) and watermark; else
   leave the logits alone.
3. Watermark = the strength rule on v_hat (one green list per layer; with ``fresh_only`` a
   token already in S_{0:t-1}, or EOS, has v_hat = 1/2 in every list, or with
   ``repeats="bigram"`` a token already there reads list l at mapper output
   ``(token_map[l, token] + shift[l, last token of S_{0:t-1}]) % D``, unless it already
   followed that last token in S_{0:t-1}, which leaves it at 1/2): ``paper``
   l * (1 + delta v_hat); ``floor`` the same measured from the smallest top-k logit;
   ``additive`` l + bias v_hat; ``tournament`` p <- p (1 + g_l - sum p g_l) per layer. Top-k and
   top-p come after the rule, or before it with ``filter_first``; then sampling (or argmax).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from watermark.core.measurement import window_start
from watermark.detect.stats import green_test, window_spans, windowed_test


@dataclass
class RefStep:
    """Reference decision for one step: gate, entropy (NaN if t <= M), v_hat (L, V) or None,
    the mapper signs (D,) it came from and, with ``repeats="bigram"`` after at least one token,
    what repeated tokens read."""

    gated: bool
    entropy: float
    green: torch.Tensor | None
    signs: torch.Tensor | None = None
    repeat_green: torch.Tensor | None = None  # (L, V) for repeated tokens, repeats="bigram"


@dataclass
class RefDetection:
    """Reference detection of one text."""

    ids: list[int]
    scored: list[bool] = field(default_factory=list)
    green: list[bool] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)
    score: float = 0.0
    z_score: float = 0.0
    p_value: float = 1.0
    window_p_value: float | None = None


def _decode(tokenizer: object, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)


@torch.inference_mode()
def mm_probs(wm: object, prefix: list[int]) -> torch.Tensor:
    """The MM's next-token distribution (float64, V_mm) after the (windowed) context of
    ``prefix``."""
    mm = wm.core.measurement
    if mm.same_tokenizer:
        body = list(prefix)
    else:
        body = mm.tokenizer(_decode(wm.tokenizer, prefix), add_special_tokens=False)["input_ids"]
    context = [mm.start_id, *body[window_start(len(body), wm.config.models.mm_window) :]]
    x = torch.tensor([context], device=mm.device)
    logits = mm.model(input_ids=x).logits[0, -1].double().cpu()
    return torch.softmax(logits, dim=-1)


def mm_entropy(wm: object, prefix: list[int]) -> float:
    """Entropy (nats) of the MM's next-token distribution after the context of ``prefix``."""
    p = mm_probs(wm, prefix)
    return float(-(p[p > 0] * p[p > 0].log()).sum())


@torch.inference_mode()
def mapper_signs(wm: object, text: str) -> torch.Tensor:
    """Mapper signs v > 0 of one text: bool tensor (D,)."""
    u = wm.embedder.encode([text], convert_to_tensor=True, normalize_embeddings=False).float()
    return wm.mapper(u.to(next(wm.mapper.parameters()).device))[0].cpu() > 0


def slsve(wm: object, text: str) -> torch.Tensor:
    """v_hat over the vocabulary for one text, one row per layer: bool tensor (L, V)."""
    return expand(wm, mapper_signs(wm, text))


def expand(wm: object, signs: torch.Tensor) -> torch.Tensor:
    """v_hat (L, V) of mapper signs (D,)."""
    return torch.stack([signs[token_map] for token_map in wm.token_maps.cpu()])


def repeat_green(wm: object, signs: torch.Tensor, previous: int) -> torch.Tensor:
    """v_hat (L, V) that repeated tokens read after the token ``previous``
    (``repeats="bigram"``): list l reads output ``(token_map[l, token] + shift[l, previous]) % D``
    of the mapper signs (D,)."""
    rows = zip(wm.token_maps.cpu(), wm.repeat_shifts.cpu())
    return torch.stack([signs[(m + int(shift[previous])) % len(signs)] for m, shift in rows])


def repeated(prefix: list[int], h: int) -> bool:
    """Whether the last h ids of ``prefix`` occur as a contiguous run starting earlier."""
    if h <= 0 or len(prefix) <= h:
        return False
    return any(prefix[j : j + h] == prefix[-h:] for j in range(len(prefix) - h))


def loop_penalty(prefix: list[int], h: int, penalty: float, cap: int = 32) -> dict[int, float]:
    """What each token loses for extending a repeated run: for every earlier run prefix[i:i+h]
    equal to the last h ids, the token after it loses penalty * (L - h + 1), L the length (at
    most ``cap``) of the longest common run ending there and at the end; the largest loss wins."""
    out: dict[int, float] = {}
    n = len(prefix)
    for i in range(n - h if h > 0 and penalty else 0):
        if prefix[i : i + h] != prefix[n - h :]:
            continue
        length = h
        while length < cap and i - (length - h) - 1 >= 0:
            if prefix[i - (length - h) - 1] != prefix[n - length - 1]:
                break
            length += 1
        token = prefix[i + h]
        out[token] = max(out.get(token, 0.0), penalty * (length - h + 1))
    return out


def step(wm: object, prefix: list[int]) -> RefStep:
    """Reference gate and v_hat for the step after ``prefix``."""
    decision = _step(wm, prefix)
    if decision.gated and wm.config.scheme.repeats == "bigram" and prefix:
        decision.repeat_green = repeat_green(wm, decision.signs, prefix[-1])
    return decision


def _step(wm: object, prefix: list[int]) -> RefStep:
    cfg = wm.config
    t = len(prefix) + 1
    if repeated(prefix, cfg.scheme.context_guard):
        h = mm_entropy(wm, prefix) if t > cfg.scheme.opening_steps else float("nan")
        return RefStep(False, h, None)
    if t <= cfg.scheme.opening_steps:
        signs = mapper_signs(wm, cfg.keys.opening_sentence)
        return RefStep(True, float("nan"), expand(wm, signs), signs)
    h = mm_entropy(wm, prefix)
    if h >= cfg.scheme.alpha:
        if cfg.models.embed_window > 0:  # a local context: the last W tokens
            context = prefix[max(0, len(prefix) - cfg.models.embed_window) :]
        else:
            context = prefix[: cfg.models.embed_prefix_tokens]
        signs = mapper_signs(wm, _decode(wm.tokenizer, context))
        return RefStep(True, h, expand(wm, signs), signs)
    return RefStep(False, h, None)


def rule(logits: torch.Tensor, green: torch.Tensor, cfg: object) -> torch.Tensor:
    """The strength rule on one logit vector (V,) with green values (L, V) in [0, 1]."""
    g = green[0].float()
    if cfg.scheme.rule == "paper":
        return logits * (1.0 + cfg.scheme.delta * g)
    if cfg.scheme.rule == "additive":
        return logits + cfg.scheme.bias * g
    probs = torch.softmax(logits.double(), dim=-1)
    for bits in green.double():  # one tournament layer per green list
        probs = (probs * (1.0 + bits - float((probs * bits).sum()))).clamp_min(0.0)
    return probs.log().float()


def keep_neutral(
    logits: torch.Tensor, green: torch.Tensor, cfg: object, neutral: list[int]
) -> torch.Tensor:
    """``neutral="kept"``: the neutral tokens keep their probability under ``logits``; the rule
    runs over the others alone and they share what is left, in its proportions."""
    probs = torch.softmax(logits.double(), dim=-1)
    others = logits.clone()
    others[neutral] = float("-inf")
    left = 1.0 - float(probs[neutral].sum())
    out = torch.zeros_like(probs)
    if torch.isfinite(others).any():
        out = torch.softmax(rule(others, green, cfg).double(), dim=-1) * left
    out[neutral] = probs[neutral]
    return out.log().float()


def sampling_logits(
    logits: torch.Tensor, decision: RefStep, cfg: object, prefix: list[int], eos: set[int]
) -> torch.Tensor:
    """What is sampled from at one step: the rule (if gated) and the filters, in config order
    (on the CPU)."""
    logits = logits.cpu().clone()
    for token, loss in loop_penalty(
        prefix, cfg.scheme.context_guard, cfg.scheme.loop_penalty
    ).items():
        logits[token] -= loss
    logits = logits / cfg.scheme.temperature
    if cfg.scheme.filter_first:
        logits = top_k_top_p(logits, cfg.scheme.top_k, cfg.scheme.top_p)
    if decision.gated:
        green = decision.green.double()
        neutral = set()
        if cfg.scheme.fresh_only:
            pairs = set(zip(prefix, prefix[1:]))
            for token in set(prefix):
                if decision.repeat_green is not None and (prefix[-1], token) not in pairs:
                    green[:, token] = decision.repeat_green[:, token].double()
                else:  # a token already there, or with "bigram" a pair already there
                    neutral.add(token)
            neutral |= set(eos)
        if cfg.scheme.neutral == "kept" and neutral:
            logits = keep_neutral(logits, green, cfg, sorted(neutral))
        else:
            for token in neutral:
                green[:, token] = 0.5
            logits = rule(logits, green, cfg)
    if not cfg.scheme.filter_first:
        logits = top_k_top_p(logits, cfg.scheme.top_k, cfg.scheme.top_p)
    return logits


def top_k_top_p(logits: torch.Tensor, k: int, p: float) -> torch.Tensor:
    """Keeps the top-k logits, then the smallest set of them with probability >= p."""
    out = logits.clone()
    if 0 < k < out.numel():
        kth = torch.topk(out, k).values[-1]
        out[out < kth] = float("-inf")
    if p < 1.0:
        order = torch.argsort(out, descending=True)
        probs = torch.softmax(out[order], dim=-1)
        before = torch.cumsum(probs, dim=0) - probs  # mass of strictly better tokens
        out[order[before >= p]] = float("-inf")
    return out


@torch.inference_mode()
def generate(
    wm: object,
    model: torch.nn.Module,
    prompt: str,
    max_new_tokens: int,
    greedy: bool = True,
    generator: torch.Generator | None = None,
) -> tuple[list[int], list[RefStep]]:
    """Algorithm 2 for one prompt: returns the generated ids (EOS excluded) and each step."""
    cfg, tok = wm.config, wm.tokenizer
    prompt_ids = tok(prompt)["input_ids"]
    config_eos = getattr(model.generation_config, "eos_token_id", None)
    eos = {tok.eos_token_id, *(config_eos if isinstance(config_eos, list) else [config_eos])}
    eos.discard(None)
    gen: list[int] = []
    steps: list[RefStep] = []
    for _ in range(max_new_tokens):
        x = torch.tensor([prompt_ids + gen], device=next(model.parameters()).device)
        logits = model(input_ids=x).logits[0, -1].float().cpu()
        decision = step(wm, gen)
        steps.append(decision)
        logits = sampling_logits(logits, decision, cfg, gen, eos)
        if greedy:
            token = int(torch.argmax(logits))
        else:
            token = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=generator))
        if token in eos:
            break
        gen.append(token)
    return gen, steps


def window_tested(
    cfg: object, ids: list[int], scored: list[bool], start: int, end: int
) -> list[tuple[int, bool]]:
    """Units tested in the token span ``[start, end)`` read as a text of its own (brute force):
    (step, whether it is tested as a repeat under ``repeats="bigram"``)."""
    found = []
    for t in range(start + 1, end + 1):
        before = ids[start : t - 1]
        before_scored = [ids[u - 1] for u in range(start + 1, t) if scored[u - 1]]
        if not scored[t - 1]:
            continue
        again = ids[t - 1] in before
        if cfg.scheme.fresh_only and again and cfg.scheme.repeats == "bigram":
            if tuple(ids[t - 2 : t]) not in set(zip(before, before[1:])):  # a new pair
                found.append((t, True))
            continue
        if cfg.detection.unique_tokens and ids[t - 1] in before_scored:
            continue
        if cfg.scheme.fresh_only and again:
            continue
        found.append((t, False))
    return found


@torch.inference_mode()
def detect(wm: object, text: str) -> RefDetection:
    """Reference detection of one text (gate, v_hat and greenness recomputed per token)."""
    cfg = wm.config
    ids = wm.tokenizer(text, add_special_tokens=False)["input_ids"]
    result = RefDetection(ids=list(ids))
    # per (scored step, as a repeat): its bits, their gammas and the mapper outputs they read
    unit_bits, unit_gammas, unit_dims = {}, {}, {}
    shown = {}  # per scored step, the bits it shows (as a repeat when it repeats a token)
    maps = wm.token_maps.cpu()
    shifts = None if wm.repeat_shifts is None else wm.repeat_shifts.cpu()
    for t in range(1, len(ids) + 1):
        decision = step(wm, ids[: t - 1])
        result.scored.append(decision.gated)
        result.entropy.append(decision.entropy)
        if not decision.gated:
            result.green.append(False)
            continue
        bits = decision.green[:, ids[t - 1]].tolist()  # one per layer
        unit_bits[t, False] = bits
        unit_dims[t, False] = [int(m[ids[t - 1]]) for m in maps]
        unit_gammas[t, False] = []
        for layer in range(len(bits)):
            unit_gammas[t, False].append(float(decision.green[layer].double().mean()))
        shown[t] = bits
        if decision.repeat_green is not None:
            unit_bits[t, True] = decision.repeat_green[:, ids[t - 1]].tolist()
            unit_gammas[t, True] = [float(decision.signs.double().mean())] * len(bits)
            unit_dims[t, True] = [
                (int(m[ids[t - 1]]) + int(sh[ids[t - 2]])) % len(decision.signs)
                for m, sh in zip(maps, shifts)
            ]
            if ids[t - 1] in ids[: t - 1]:
                shown[t] = unit_bits[t, True]
        result.green.append(shown[t][0])

    def reads(units: list) -> list[tuple]:
        """(unit, list) of the bits the units' test counts: with ``outputs_once`` the first
        read of each mapper output only."""
        found, seen = [], set()
        for u in units:
            for layer, d in enumerate(unit_dims[u]):
                if not (cfg.detection.outputs_once and d in seen):
                    found.append((u, layer))
                seen.add(d)
        return found

    tested = reads(window_tested(cfg, ids, result.scored, 0, len(ids)))  # the whole text
    tested_green = [unit_bits[u][layer] for u, layer in tested]
    gammas = [unit_gammas[u][layer] for u, layer in tested]
    n = sum(result.scored)
    if cfg.scheme.rule == "tournament":  # no logit scale: the mean green bit over all lists
        bits = [b for t in shown for b in shown[t]]
        result.score = sum(bits) / len(bits) if bits else 0.0
    else:  # strength (delta or bias) times the green share of the first list
        strength = cfg.scheme.bias if cfg.scheme.rule == "additive" else cfg.scheme.delta
        greens = sum(g for g, s in zip(result.green, result.scored) if s)
        result.score = strength * greens / n if n else 0.0
    result.z_score, result.p_value = green_test(tested_green, gammas)
    if cfg.detection.window_sizes:  # every (unit, list) bit is one candidate of the simulation
        flat = [(u, layer) for u in sorted(unit_bits) for layer in range(len(unit_bits[u]))]
        index = {b: i for i, b in enumerate(flat)}
        members = [
            [index[b] for b in reads(window_tested(cfg, ids, result.scored, start, end))]
            for start, end in window_spans(len(ids), cfg.detection.window_sizes)
        ]
        bits = [[unit_bits[u][layer]] for u, layer in flat]
        gammas_flat = [[unit_gammas[u][layer]] for u, layer in flat]
        result.window_p_value = windowed_test(bits, gammas_flat, members)[0]
    return result


def tail_table(probs: list[float]) -> list[float]:
    """``P(X >= k)`` for k = 0..n+1, X a sum of independent Bernoulli(probs): the recursion one
    Bernoulli at a time (the oracle of :func:`watermark.detect.stats.tail_table`)."""
    dist = [1.0] + [0.0] * len(probs)
    for i, p in enumerate(probs):
        for k in range(i + 1, 0, -1):
            dist[k] = dist[k] * (1.0 - p) + dist[k - 1] * p
        dist[0] *= 1.0 - p
    tails = [0.0] * (len(probs) + 2)
    for k in range(len(probs), -1, -1):
        tails[k] = tails[k + 1] + dist[k]
    return tails


def window_null_exact(
    green: list[list[bool]], gammas: list[list[float]], members: list[list[int]]
) -> float:
    """The windowed test's corrected p-value without simulation: P(min over windows of the
    window p-value <= the observed one) under the null, by enumerating every outcome of the
    N * L bits (small inputs only)."""
    import itertools

    flat = [(r, layer) for r in range(len(green)) for layer in range(len(green[r]))]
    tables = [
        tail_table([gammas[r][layer] for r in m for layer in range(len(green[r]))]) for m in members
    ]

    def smallest(bits: dict) -> float:
        counts = [sum(bits[r, layer] for r in m for layer in range(len(green[r]))) for m in members]
        return min(t[c] for t, c in zip(tables, counts))

    observed = smallest({(r, layer): green[r][layer] for r, layer in flat})
    total = 0.0
    for outcome in itertools.product([False, True], repeat=len(flat)):
        bits = dict(zip(flat, outcome))
        if smallest(bits) <= observed * (1.0 + 1e-9):
            chance = [gammas[r][k] if b else 1.0 - gammas[r][k] for (r, k), b in bits.items()]
            total += math.prod(chance)
    return total
