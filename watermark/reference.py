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
   token already in S_{0:t-1}, or EOS, has v_hat = 1/2 in every list): ``paper``
   l * (1 + delta v_hat); ``floor`` the same measured from the smallest top-k logit;
   ``additive`` l + bias v_hat; ``tournament`` p <- p (1 + g_l - sum p g_l) per layer. Top-k and
   top-p come after the rule, or before it with ``filter_first``; then sampling (or argmax).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from watermark.measurement import window_start
from watermark.stats import green_test, window_spans, windowed_test


@dataclass
class RefStep:
    """Reference decision for one step: gate, entropy (NaN if t <= M), v_hat (L, V) or None."""

    gated: bool
    entropy: float
    green: torch.Tensor | None


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
    context = [mm.start_id, *body[window_start(len(body), wm.config.mm_window) :]]
    x = torch.tensor([context], device=mm.device)
    logits = mm.model(input_ids=x).logits[0, -1].double().cpu()
    return torch.softmax(logits, dim=-1)


def mm_entropy(wm: object, prefix: list[int]) -> float:
    """Entropy (nats) of the MM's next-token distribution after the context of ``prefix``."""
    p = mm_probs(wm, prefix)
    return float(-(p[p > 0] * p[p > 0].log()).sum())


@torch.inference_mode()
def slsve(wm: object, text: str) -> torch.Tensor:
    """v_hat over the vocabulary for one text, one row per layer: bool tensor (L, V)."""
    u = wm.embedder.encode([text], convert_to_tensor=True, normalize_embeddings=False).float()
    v = wm.mapper(u.to(next(wm.mapper.parameters()).device))[0].cpu()
    return torch.stack([(v > 0)[token_map] for token_map in wm.token_maps.cpu()])


def repeated(prefix: list[int], h: int) -> bool:
    """Whether the last h ids of ``prefix`` occur as a contiguous run starting earlier."""
    if h <= 0 or len(prefix) <= h:
        return False
    return any(prefix[j : j + h] == prefix[-h:] for j in range(len(prefix) - h))


def step(wm: object, prefix: list[int]) -> RefStep:
    """Reference gate and v_hat for the step after ``prefix``."""
    cfg = wm.config
    t = len(prefix) + 1
    if repeated(prefix, cfg.context_guard):
        h = mm_entropy(wm, prefix) if t > cfg.opening_steps else float("nan")
        return RefStep(False, h, None)
    if t <= cfg.opening_steps:
        return RefStep(True, float("nan"), slsve(wm, cfg.opening_sentence))
    h = mm_entropy(wm, prefix)
    if h >= cfg.alpha:
        if cfg.embed_window > 0:  # a local context: the last W tokens
            context = prefix[max(0, len(prefix) - cfg.embed_window) :]
        else:
            context = prefix[: cfg.embed_prefix_tokens]
        return RefStep(True, h, slsve(wm, _decode(wm.tokenizer, context)))
    return RefStep(False, h, None)


def rule(logits: torch.Tensor, green: torch.Tensor, cfg: object) -> torch.Tensor:
    """The strength rule on one logit vector (V,) with green values (L, V) in [0, 1]."""
    g = green[0].float()
    if cfg.scaling == "paper":
        return logits * (1.0 + cfg.delta * g)
    if cfg.scaling == "floor":
        top = sorted((x for x in logits.tolist() if math.isfinite(x)), reverse=True)
        floor = top[: cfg.top_k if cfg.top_k > 0 else len(top)][-1]
        return (logits - floor) * (1.0 + cfg.delta * g) + floor
    if cfg.scaling == "additive":
        return logits + cfg.bias * g
    probs = torch.softmax(logits.double(), dim=-1)
    for bits in green.double():  # one tournament layer per green list
        probs = (probs * (1.0 + bits - float((probs * bits).sum()))).clamp_min(0.0)
    return probs.log().float()


def sampling_logits(
    logits: torch.Tensor, decision: RefStep, cfg: object, prefix: list[int], eos: set[int]
) -> torch.Tensor:
    """What is sampled from at one step: the rule (if gated) and the filters, in config order
    (on the CPU)."""
    logits = logits.cpu() / cfg.temperature
    if cfg.filter_first:
        logits = top_k_top_p(logits, cfg.top_k, cfg.top_p)
    if decision.gated:
        green = decision.green.double()
        if cfg.fresh_only:
            for token in set(prefix) | eos:
                green[:, token] = 0.5
        logits = rule(logits, green, cfg)
    if not cfg.filter_first:
        logits = top_k_top_p(logits, cfg.top_k, cfg.top_p)
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
) -> list[int]:
    """Steps tested in the token span ``[start, end)`` read as a text of its own (brute force)."""
    found = []
    for t in range(start + 1, end + 1):
        before = ids[start : t - 1]
        before_scored = [ids[u - 1] for u in range(start + 1, t) if scored[u - 1]]
        if not scored[t - 1]:
            continue
        if cfg.unique_tokens and ids[t - 1] in before_scored:
            continue
        if cfg.fresh_only and ids[t - 1] in before:
            continue
        found.append(t)
    return found


@torch.inference_mode()
def detect(wm: object, text: str) -> RefDetection:
    """Reference detection of one text (gate, v_hat and greenness recomputed per token)."""
    cfg = wm.config
    ids = wm.tokenizer(text, add_special_tokens=False)["input_ids"]
    result = RefDetection(ids=list(ids))
    step_bits, step_gammas = {}, {}  # per scored step, its bits and gammas (all layers)
    for t in range(1, len(ids) + 1):
        decision = step(wm, ids[: t - 1])
        result.scored.append(decision.gated)
        result.entropy.append(decision.entropy)
        if not decision.gated:
            result.green.append(False)
            continue
        bits = decision.green[:, ids[t - 1]].tolist()  # one per layer
        result.green.append(bits[0])
        step_bits[t] = bits
        step_gammas[t] = []
        for layer in range(len(bits)):
            green = decision.green[layer].double()
            if cfg.null_model == "mm":
                step_gammas[t].append(float((mm_probs(wm, ids[: t - 1]) * green).sum()))
            else:
                step_gammas[t].append(float(green.mean()))
    tested = window_tested(cfg, ids, result.scored, 0, len(ids))  # the whole text
    tested_green = [b for t in tested for b in step_bits[t]]
    gammas = [g for t in tested for g in step_gammas[t]]
    n = sum(result.scored)
    if cfg.scaling == "tournament":  # no logit scale: the mean green bit over all lists
        bits = [b for t in step_bits for b in step_bits[t]]
        result.score = sum(bits) / len(bits) if bits else 0.0
    else:  # strength (delta or bias) times the green share of the first list
        strength = cfg.bias if cfg.scaling == "additive" else cfg.delta
        greens = sum(g for g, s in zip(result.green, result.scored) if s)
        result.score = strength * greens / n if n else 0.0
    result.z_score, result.p_value = green_test(tested_green, gammas)
    if cfg.window_sizes:
        scored = sorted(step_bits)
        index = {t: i for i, t in enumerate(scored)}
        members = [
            [index[t] for t in window_tested(cfg, ids, result.scored, start, end)]
            for start, end in window_spans(len(ids), cfg.window_sizes)
        ]
        bits = [step_bits[t] for t in scored]
        result.window_p_value = windowed_test(bits, [step_gammas[t] for t in scored], members)[0]
    return result
