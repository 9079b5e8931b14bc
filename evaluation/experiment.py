"""One full experiment: every method, attack, the spoofing test and the ablations -> results.

:func:`run_experiment` drives :class:`evaluation.run.Evaluation` stage by stage and
returns a JSON-able dict (written as ``results.json`` by the command line), with wall-clock
seconds per stage.
"""

from __future__ import annotations

import logging
import time

import torch

from evaluation.config import EvalConfig
from evaluation.config_fields import flat_view
from evaluation.curves import curve_units, run_curves
from evaluation.earlier_rows import earlier_rows
from evaluation.frontier import run_frontier
from evaluation.metrics import median
from evaluation.run import Evaluation, score_detections
from evaluation.security import (
    CONTEXT_WIDTH,
    OPENING_TOKENS,
    common_tokens,
    fixed_semantics,
    opening_green_share,
    spoofing,
)
from evaluation.stealing import steal_and_spoof
from watermark.config.watermark_config import secret_fields

logger = logging.getLogger(__name__)


def public_flat(wm_config: object) -> dict:
    """The watermark config by flat names, without its secrets (as earlier results hold it)."""
    hidden = set(secret_fields())
    return {k: v for k, v in flat_view(wm_config).items() if k not in hidden}


def _timed(timings: dict, name: str, fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    timings[name] = time.perf_counter() - start
    logger.info("stage %s: %.0f s", name, timings[name])
    return result


def run_experiment(cfg: EvalConfig, progress: bool = True) -> dict:
    """Run (or resume) the experiment of ``cfg``; return the results dict."""
    if cfg.models.threads:
        torch.set_num_threads(cfg.models.threads)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    ev = _timed(timings, "load", Evaluation, cfg, progress)
    results = {
        "config": cfg.to_dict(),
        "watermark_config": public_flat(ev.wm_config),
        "units": len(ev.units),
        "sources": sorted({u["source"] for u in ev.units}),
        "methods": {},
    }
    for name, method in ev.methods.items():
        results["methods"][name] = _timed(timings, f"method {name}", ev.evaluate_method, method)
    human = results["methods"].get("unwatermarked")
    results["human_quality"] = _timed(
        timings, "human quality", ev.quality, ev.units, _human_gens(ev)
    )
    if "ours" in ev.methods and cfg.table.green_share_texts:
        gens = ev.generations(ev.methods["ours"], ev.units[: cfg.table.green_share_texts])
        share = ev.green_share_all(ev.methods["ours"], [g["text"] for g in gens])
        results["methods"]["ours"]["green_share_all_tokens"] = share
        results["methods"]["ours"]["green_share_texts"] = len(gens)
    spoofing, frontier, curves = cfg.spoofing, cfg.frontier, cfg.curves
    if spoofing.texts and human is not None:
        results["spoofing"] = _timed(timings, "spoofing", spoof_all, ev)
    if spoofing.steal_texts:
        results["stealing"] = _timed(
            timings, "stealing", steal_and_spoof, ev, spoofing.steal_methods
        )
    if frontier.prompts and (frontier.cells or frontier.baselines):
        results["frontier"] = _timed(timings, "frontier", run_frontier, ev)
    if curves.prompts and curves.methods:
        earlier = earlier_rows(cfg)  # checked before hours of work
        results["curves"] = _timed(timings, "curves", run_curves, ev)
        results["curves"]["rows"] += earlier
    if cfg.ablations.vary and cfg.ablations.prompts:
        results["ablations"] = _timed(timings, "ablations", ablations, ev)
    timings["total"] = time.perf_counter() - start
    results["seconds"] = timings
    return results


def generate_only(cfg: EvalConfig, progress: bool = True) -> dict:
    """Makes (or finds cached) the generations of the main methods and of the curve methods,
    and nothing else: the part of a run that needs the generator, e.g. on a GPU machine
    (``device: cuda``) whose cache a CPU run then reads. Returns texts per method and stage."""
    if cfg.models.threads:
        torch.set_num_threads(cfg.models.threads)
    start = time.perf_counter()
    ev = Evaluation(cfg, progress)
    made: dict[str, int] = {}
    for name, method in ev.methods.items():
        made[name] = len(ev.generations(method, ev.units))
    if cfg.curves.prompts:
        units = curve_units(ev)
        for name in cfg.curves.methods:
            made[f"curves {name}"] = len(ev.generations(ev.method(name), units))
    return {"generated": made, "device": str(ev.device), "seconds": time.perf_counter() - start}


def _human_gens(ev: Evaluation) -> list[dict]:
    """Human continuations in the shape of generations (for the same quality metrics)."""
    from watermark.core.text import encode_text

    return [{"text": u["human"], "ids": encode_text(ev.tokenizer, u["human"])} for u in ev.units]


def spoof_prompts(ev: Evaluation) -> list[dict]:
    """``spoofing.texts`` units: the evaluation prompts, cycled, each copy with its own id."""
    n, base = ev.cfg.spoofing.texts, ev.units
    return [{**base[i % len(base)], "id": f"{base[i % len(base)]['id']}#{i}"} for i in range(n)]


def spoof_all(ev: Evaluation) -> dict:
    """Decryption rate of every watermarked method (and its unwatermarked control)."""
    cfg, units = ev.cfg.spoofing, spoof_prompts(ev)
    common = common_tokens(ev.tokenizer, [u["human"] for u in ev.units], cfg.common)
    clean = ev.generations(ev.methods["unwatermarked"], units, cfg.tokens, tag="spoof|")
    out = {"common_tokens": len(common), "texts": len(units), "tokens": cfg.tokens}
    for name, method in ev.methods.items():
        if name not in CONTEXT_WIDTH:  # unwatermarked; SynthID has no green list to guess
            continue
        target = fixed_semantics(method) if name == "ours" else method
        marked = ev.generations(target, units, cfg.tokens, tag="spoof|")
        out[name] = spoofing(
            target,
            ev.tokenizer,
            [g["ids"] for g in marked],
            [g["ids"] for g in clean],
            common,
            cfg.top,
        )
    if "ours" in ev.methods:  # no strengthening: the first tokens of the evaluation texts
        ours, m = ev.methods["ours"], OPENING_TOKENS
        marked = [g["ids"][:m] for g in ev.generations(ours, ev.units)]
        plain = [g["ids"][:m] for g in ev.generations(ev.methods["unwatermarked"], ev.units)]
        share = opening_green_share(ours.wm, marked)
        out["ours_opening"] = spoofing(
            ours, ev.tokenizer, marked, plain, common, cfg.top, green=share
        )
    return out


def ablations(ev: Evaluation) -> dict:
    """Vary one field of our watermark config at a time on the first ``ablations.prompts`` (a
    dict value sets several fields at once, e.g. a mapper and the embedder it was trained on)."""
    cfg = ev.cfg.ablations
    units = ev.units[: cfg.prompts]
    humans = [u["human"] for u in units]
    out: dict = {"attack": cfg.attack}
    for field_name, values in cfg.vary.items():
        rows = []
        for value in values:
            method = ev.ours_variant(**(value if isinstance(value, dict) else {field_name: value}))
            gens = ev.generations(method, units, cfg.tokens)
            pos = ev.detections(method, [g["text"] for g in gens])
            neg = ev.detections(method, humans)
            quality = ev.quality(units, gens)
            attacked = {}
            if cfg.attack:
                texts = ev.attacker.attacked(cfg.attack, [g["text"] for g in gens], humans)
                scores = score_detections(ev.detections(method, texts), neg)
                attacked = {f"attack_{k}": scores[k] for k in ("roc_auc", "best_f1", "tpr@1%fpr")}
            clean = score_detections(pos, neg)
            clean.pop("z")
            rows.append(
                {
                    "value": value,
                    **attacked,
                    **clean,
                    "human_awr": sum(d.awr for d in neg) / len(neg),
                    "ppl_median": median(quality["ppl"]),
                    "rep4": quality["rep4"],
                    "seconds_per_text": sum(g["seconds"] for g in gens) / len(gens),
                }
            )
            logger.info("ablation %s=%s: %s", field_name, value, rows[-1])
        out[field_name] = rows
    return out
