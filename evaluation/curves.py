"""Detection against measured attack strength: every method's robustness curve on the same texts.

For each method of ``curves.methods``: ``curves.prompts`` generations (the frontier's units
first, so they are shared with it), detected against the human texts of the same units; then the
first ``curves.attacked`` of them under each attack of ``curves.attacks``. Per attack and method:

* strength, as the mean share of each original's distinct words still in its attacked text;
* meaning kept, as the mean cosine similarity of original and attacked text under an embedder
  that is not the watermark's (``models.similarity_embedder``, MPNet by default);
* ROC-AUC and TPR at 1% FPR against the human texts.

The report draws ROC-AUC and TPR against words kept and against meaning kept, one line per
method (:mod:`evaluation.curve_report`).
"""

from __future__ import annotations

import logging
import statistics

from evaluation.meaning import cosines, rewrite_figures
from evaluation.run import score_detections, text_hash, words_kept

logger = logging.getLogger(__name__)
PPL_LIMIT, REP4_LIMIT = 1.10, 1.25  # matched quality: at most these times unwatermarked


def attack_label(attack: dict) -> str:
    """``paraphrase@1.0``, ``paraphrase@1.0x2`` (two passes), ``llm_forced@1.0t1`` (sampled
    at temperature 1), ``...+facts`` (its prompt lists the facts), ``...+llm_paraphrase`` (a
    paraphrase after), ``none`` for no attack."""
    passes = int(attack.get("passes", 1))
    label = f"{attack['kind']}@{attack['strength']}" + (f"x{passes}" if passes > 1 else "")
    label += f"t{float(attack['temperature']):g}" if attack.get("temperature") else ""
    label += "+facts" if attack.get("list_facts") else ""
    return label + ("+llm_paraphrase" if attack.get("paraphrase_after") else "")


def similarities(ev, originals: list[str], attacked: list[str]) -> list[float]:
    """Cosine similarity of each pair under ``models.similarity_embedder`` (cached; each distinct
    text is embedded once per process, so an original shared by several attacks is embedded
    once)."""
    name = ev.cfg.models.similarity_embedder
    table = ev.store.table("similarity")
    keys = [f"{name}|{text_hash(a)}|{text_hash(b)}" for a, b in zip(originals, attacked)]
    todo = [i for i, k in enumerate(keys) if k not in table]
    if todo:
        sims = cosines(name, [originals[i] for i in todo], [attacked[i] for i in todo])
        ev.store.put("similarity", [{"key": keys[i], "cos": s} for i, s in zip(todo, sims)])
    return [table[k]["cos"] for k in keys]


def curve_units(ev) -> list[dict]:
    """The units whose prompts the curve methods continue."""
    cfg = ev.cfg.curves
    return ev.all_units[cfg.offset : cfg.offset + cfg.prompts]


def run_curves(ev) -> dict:
    """All rows (method x attack, ``none`` first) on the curve units."""
    cfg = ev.cfg.curves
    units = curve_units(ev)
    if len(units) < cfg.prompts:
        logger.warning("only %d curve units after offset %d", len(units), cfg.offset)
    humans = [u["human"] for u in units]
    more = ev.all_units[cfg.offset + len(units) : cfg.offset + cfg.negatives]
    negatives = humans + [u["human"] for u in more]
    if len(negatives) < cfg.negatives:
        logger.warning("only %d of %d curve negatives", len(negatives), cfg.negatives)
    rows = []
    for name in cfg.methods:
        method = ev.method(name)
        gens = ev.generations(method, units)
        texts = [g["text"] for g in gens]
        quality = ev.quality(units, gens)
        quality = {
            "ppl_median": statistics.median(quality["ppl"]),
            "rep4": quality["rep4"],
            "ppl_texts": quality["ppl"],
            "rep4_texts": quality["rep4_texts"],
            "generated_on": sorted({g.get("device", "cpu") for g in gens}),
        }
        if name == "unwatermarked" or not cfg.detect:  # quality rows only
            rows.append({"method": name, "attack": "none", **quality})
            continue
        neg = ev.detections(method, negatives)
        scores = score_detections(ev.detections(method, texts), neg)
        z_median = statistics.median(scores["z"])
        rows.append(
            {
                **_row(name, "none", scores, 1.0, 1.0),
                **quality,
                "z_median": z_median,
                "human_z": [d.z_score for d in neg],
            }
        )
        ref = reference(rows)
        if cfg.matched_only and ref is not None and not within_limits(rows[-1], ref):
            logger.info("curve %s: outside the quality limits, not attacked", name)
            continue
        n = min(cfg.attacked, len(texts))
        for attack in cfg.attacks:
            attacked = ev.attacker.attacked(attack, texts[:n], humans[:n])
            sims = similarities(ev, texts[:n], attacked)
            dets = ev.detections(method, attacked)
            scores = score_detections(dets, neg)
            kept = words_kept(texts[:n], attacked)
            rows.append(_row(name, attack_label(attack), scores, kept, sum(sims) / len(sims)))
            done = rewritten(ev, attack, texts[:n], humans[:n], attacked)
            rows[-1].update(rewrite_figures(texts[:n], attacked, sims, done))
            rows[-1].update(rewritten_scores(dets, neg, done))
            if attack.get("retries") and not attack.get("paraphrase_after"):  # each draw's checks
                rows[-1]["draws"] = ev.attacker.draw_log(attack, texts[:n])
            summary = {k: v for k, v in rows[-1].items() if not isinstance(v, list)}
            logger.info("curve %s %s: %s", name, rows[-1]["attack"], summary)  # no z lists
    for row in rows:
        row["family"] = ev.cfg.methods.base_method(row["method"])
    return {"prompts": len(units), "attacked": min(cfg.attacked, len(units)), "rows": rows}


def rewritten(ev, attack: dict, texts: list[str], humans: list[str], attacked: list[str]):
    """Per text, whether the attack's rewrite happened: the text changed, and after a
    paraphrase (``paraphrase_after``) the rewrite before it did (the cache gives it)."""
    if attack.get("paraphrase_after"):
        first = {k: v for k, v in attack.items() if k != "paraphrase_after"}
        attacked = ev.attacker.attacked(first, texts, humans)
    return [a.strip() != t.strip() for a, t in zip(attacked, texts)]


def rewritten_scores(dets: list, neg: list, done: list[bool]) -> dict:
    """``rewritten_mask`` and, where some texts were left as they were, ROC-AUC and TPR at 1%
    FPR over the rewritten ones alone."""
    found: dict = {"rewritten_mask": done}
    if any(done) and not all(done):
        scores = score_detections([d for d, ok in zip(dets, done) if ok], neg)
        found |= {"roc_auc_rewritten": scores["roc_auc"], "tpr_rewritten": scores["tpr@1%fpr"]}
    return found


def reference(rows: list[dict]) -> dict | None:
    """The ``unwatermarked`` quality row of the curves, if any."""
    return next((r for r in rows if r["method"] == "unwatermarked"), None)


def within_limits(
    row: dict, ref: dict, ppl_limit: float = PPL_LIMIT, rep4_limit: float = REP4_LIMIT
) -> bool:
    """Whether a method's unattacked row is within the quality limits of the reference row."""
    return (
        row["ppl_median"] <= ppl_limit * ref["ppl_median"]
        and row["rep4"] <= rep4_limit * ref["rep4"]
    )


def matched_quality(curves: dict, ppl_limit: float = PPL_LIMIT, rep4_limit: float = REP4_LIMIT):
    """Each family's strongest setting within the quality limits (the matched comparison).

    A method is within the limits when its median oracle perplexity is at most ``ppl_limit``
    times the unwatermarked texts' and its rep-4 at most ``rep4_limit`` times theirs (same
    prompts); the strongest is the one with the highest median z on unattacked text.

    Returns:
        ``{family: method}``; empty without an ``unwatermarked`` row.
    """
    rows = curves["rows"]
    ref = reference(rows)
    if ref is None:
        return {}
    chosen: dict[str, dict] = {}
    for r in rows:
        if r["attack"] != "none" or r["method"] == "unwatermarked" or "z_median" not in r:
            continue
        best = chosen.get(r["family"])
        stronger = best is None or r["z_median"] > best["z_median"]
        if stronger and within_limits(r, ref, ppl_limit, rep4_limit):
            chosen[r["family"]] = r
    return {family: r["method"] for family, r in chosen.items()}


def _row(method: str, attack: str, scores: dict, kept: float, similarity: float) -> dict:
    return {
        "method": method,
        "attack": attack,
        "words_kept": kept,
        "similarity": similarity,
        "roc_auc": scores["roc_auc"],
        "tpr@1%fpr": scores["tpr@1%fpr"],
        "tpr@p<0.01": scores["tpr@p<0.01"],
        "fpr@p<0.01": scores["fpr@p<0.01"],
        "positives": scores["positives"],
        "negatives": scores["negatives"],
        "z": scores["z"],
    }
