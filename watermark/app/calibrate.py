"""Thresholds and power by length on a user's own texts (``python -m watermark calibrate``).

Human texts give the empirical false-positive rate at p < 0.001, 0.01 and 0.05, with 95% Wilson
intervals; watermarked texts give the true-positive rate at the same p-value cut-offs (0.1% and
1% nominal FPR). Watermarked texts (and, on request, human ones) are also cut to their first N
generator tokens for every length bin N they reach (texts shorter than N are left out of that
bin), so one set of long texts gives the whole table. With several keys (rotation), rates use
the p-value corrected for the keys tried; the expected key's own rates (as if it were the only
key) and the share of watermarked texts attributed to it are reported too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from watermark.base import UserError
from watermark.core.text import encode_text

CUTOFFS = (0.001, 0.01, 0.05)
LENGTHS = (50, 100, 150, 200, 300, 400)


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    """95% Wilson score interval [low, high] of a rate k / n (n >= 1)."""
    rate, scale = k / n, 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / scale
    spread = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / scale
    return [max(0.0, centre - spread), min(1.0, centre + spread)]


def rates(results: Sequence[object], prefix: str, key: int | None = None) -> dict:
    """``{prefix}@p<c`` share of results with p < c for each cut-off, with Wilson intervals;
    with ``key``, that key's own p-value instead of the (corrected) best one."""
    out: dict = {}
    for c in CUTOFFS:
        k = sum((r.p_value if key is None else r.key_p_values[key]) < c for r in results)
        out[f"{prefix}@p<{c}"] = k / len(results)
        out[f"{prefix}@p<{c}_ci95"] = wilson(k, len(results))
    return out


def calibrate(
    wm: object,
    human: Sequence[str],
    watermarked: Sequence[str] = (),
    lengths: Sequence[int] = LENGTHS,
    expect_key: int = 0,
    human_by_length: bool = False,
    progress: bool = False,
) -> list[dict]:
    """The calibration table: one row for the whole texts, then one per length bin.

    Args:
        wm: A loaded :class:`~watermark.api.Watermark`.
        human: Texts known to be unwatermarked.
        watermarked: Texts generated with the watermark (under key ``expect_key``).
        lengths: Length bins in generator tokens.
        expect_key: Index of the key the watermarked texts were made with (0: ``key``).
        human_by_length: Also cut the human texts to each length bin (else the FPR is measured
            on the whole human texts only).
        progress: Show progress bars on stderr.

    Raises:
        ValueError: If there are no human texts.
    """
    if not human:
        raise UserError("no human texts to calibrate on")
    ids = {
        name: [encode_text(wm.tokenizer, t) for t in texts]
        for name, texts in (("human", human), ("watermarked", watermarked))
    }
    rows = []
    for length in (None, *sorted(lengths)):
        row: dict = {"tokens": "all" if length is None else length}
        for name, prefix in (("human", "fpr"), ("watermarked", "tpr")):
            if name == "human" and length is not None and not human_by_length:
                continue
            cut = [x if length is None else x[:length] for x in ids[name]]
            cut = [x for x in cut if x and (length is None or len(x) == length)]
            row[f"{name}_texts"] = len(cut)
            if not cut:
                continue
            found = wm.detector.detect_ids(cut, progress=progress)
            row.update(rates(found, prefix))
            if wm.core.semantic.num_keys == 1:
                continue
            row.update(rates(found, f"{prefix}_key{expect_key}_alone", key=expect_key))
            if name == "watermarked":
                row["attributed_to_expected_key"] = sum(
                    r.key_index == expect_key for r in found
                ) / len(found)
        rows.append(row)
    return rows
