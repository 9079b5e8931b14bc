"""Calibration stage: per-token detection records of human and watermarked text, and their FPR/TPR.

Records keep every token's flags (scored, tested, green bits, the green fraction of the
vocabulary at its step), so :func:`calibration_report` recomputes the p-value of each stored text
with and without counting each token once, without re-running detection. With several green
lists per step (tournament layers) the first list's green fraction stands for every layer (the
lists' fractions differ by at most D / V).
Records of ``repeats="bigram"`` keep the bits each token shows in the whole text, not the ones a
span that starts after its first occurrence would read, so their windowed test is not
recomputed: the report takes the detector's own ``window_p_value`` instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from watermark.detect.result import DetectionResult
from watermark.detect.stats import green_test, window_spans, windowed_test
from watermark.detect.units import tested_indices

PER_TOKEN = ("token_ids", "scored", "tested", "green", "green_bits", "gamma", "vocab_green")


def record(result: DetectionResult, config: object) -> dict:
    """A JSON-able detection record with the per-token flags the report needs."""
    return {
        **result.to_dict(),
        **{k: getattr(result, k) for k in PER_TOKEN},
        "layers": config.green_lists,
        "fresh_only": config.scheme.fresh_only,
        "repeats": config.scheme.repeats,
    }


def variant_p_value(rec: dict, unique: bool, window_sizes: Sequence[int] = ()) -> float:
    """p-value of a stored text over its tested tokens (unique) or all scored; with
    ``window_sizes``, the windowed test's corrected p-value (windows read as texts of their own,
    as the detector does)."""
    green, gammas, layers = [], [], rec.get("layers", 1)
    use = rec["scored"] if window_sizes or not unique else rec["tested"]
    for s, bits, gamma in zip(use, rec["green_bits"], rec["vocab_green"]):
        if not s:
            continue
        green.append([True] * bits + [False] * (layers - bits))
        gammas.append([gamma] * layers)
    if window_sizes and rec.get("repeats", "neutral") != "neutral":
        raise ValueError(
            "the windowed test of repeats='bigram' records is not recomputed; "
            "read their window_p_value"
        )
    if window_sizes:
        ids, fresh = rec["token_ids"], bool(rec.get("fresh_only"))
        steps = [t for t, s in enumerate(rec["scored"], start=1) if s]
        spans = window_spans(len(ids), window_sizes)
        members = [tested_indices(ids, steps, span, unique, fresh) for span in spans]
        return windowed_test(green, gammas, members)[0]
    return green_test([b for t in green for b in t], [g for t in gammas for g in t])[1]


def _mean(records: Sequence[dict], key: str) -> float:
    return sum(r[key] for r in records) / len(records)


def calibration_report(
    human: Sequence[dict], marked: Sequence[dict] = (), window_sizes: Sequence[int] = ()
) -> dict:
    """FPR on human records (and TPR on watermarked ones) per counting rule, and for the
    windowed test over the tested tokens when ``window_sizes`` is given (rows named
    ``vocab/<counting>``, the null they are tested under)."""
    if not human:
        raise ValueError("no human records to calibrate on")
    out: dict = {"human_texts": len(human), "watermarked_texts": len(marked)}
    if marked:
        out["retokenization_match_rate"] = _mean(marked, "retokenization_matches")
        out["positions_match_rate"] = _mean(marked, "positions_match")
        out["awr_mean"] = _mean(marked, "awr")
        out["green_fraction_mean"] = _mean(marked, "green_fraction")
    counting = (True,) if human[0].get("fresh_only") else (True, False)
    variants = [(unique, ()) for unique in counting]
    stored = any(r.get("repeats", "neutral") != "neutral" for r in [*human, *marked])
    if window_sizes:
        variants.append((True, tuple(window_sizes)))

    def p_value(r: dict, unique: bool, sizes: tuple) -> float:
        if sizes and stored:  # the detector's own windowed p-value
            if r.get("window_p_value") is None:
                raise ValueError("repeats='bigram' records need the detector's window_p_value")
            return r["window_p_value"]
        return variant_p_value(r, unique, sizes)

    for unique, sizes in variants:
        hp = sorted(p_value(r, unique, sizes) for r in human)
        row = {
            "human_texts": len(hp),
            "fpr@p<0.01": sum(p < 0.01 for p in hp) / len(hp),
            "fpr@p<0.05": sum(p < 0.05 for p in hp) / len(hp),
        }
        if marked:
            wp = [p_value(r, unique, sizes) for r in marked]
            cut = hp[max(0, int(0.01 * len(hp)) - 1)]  # empirical 1% FPR threshold
            row["tpr@p<0.01"] = sum(p < 0.01 for p in wp) / len(wp)
            row["tpr@1%fpr_empirical"] = sum(p < cut for p in wp) / len(wp)
        name = f"vocab/{'unique' if unique else 'all'}"
        out[name + (f"/windows{list(sizes)}" if sizes else "")] = row
    return out
