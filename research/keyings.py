"""The keyings :mod:`research.position_key` simulates: which target set each sentence is read
in (today's groups, one set, a place, a place and a secret output's sign), how it is read
(cells fixed by the text, an oracle alignment, or a calibrated alignment,
:class:`research.alignment.Moves`), and how K keys per text combine (K min p).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from research.alignment import Moves, probit, sf
from research.text_pairs import Text
from watermark.sentences.key import SentenceKey

KS = (1, 2, 4, 8, 16)
START0 = Moves(start=0, skip=1, splits=True, inserts=1)
ALIGN = Moves(penalty=0.5)  # the aligned reading the table leads with
EXCERPT = Moves(start=8, penalty=0.5)


@dataclass(frozen=True)
class Keying:
    """A simulated keying: its ``cells`` (``group``: today's own groups; ``one``: one set;
    ``position``; ``position+bit``: a position and the sign of a secret output), its
    ``reading`` (``fixed``, ``oracle`` or :class:`Moves`), whose choice strength it has
    (``choice``: ``robust``, ``c0`` one set, ``c1`` two sets) and its K keys per text."""

    name: str
    cells: str
    reading: str | Moves = "fixed"
    choice: str = "c0"
    ks: tuple[int, ...] = (1,)


KEYINGS = [
    Keying("today, targets redrawn (the simulation's check)", "group", choice="robust"),
    Keying("one target set (per-text keys: K sets)", "one", ks=KS),
    Keying("position, read in order", "position", ks=KS),
    Keying("position, oracle alignment", "position", "oracle"),
    Keying("position, aligned from the start", "position", START0),
    Keying("position, aligned, no splits or inserts", "position", Moves(0, 1, False, 0)),
    Keying("position, aligned, penalty 0.5", "position", ALIGN, ks=KS),
    Keying("position, aligned, penalty 0.5, start <= 8", "position", EXCERPT, ks=(1, 16)),
    Keying("position, aligned, penalty 1", "position", Moves(penalty=1.0)),
    Keying("position, aligned, penalty 0.5, no splits", "position", Moves(0, 1, False, 1, 0.5)),
    Keying("position + secret output, read in order", "position+bit", choice="c1", ks=KS),
    Keying("position + secret output, oracle", "position+bit", "oracle", choice="c1"),
    Keying("position + secret output, aligned", "position+bit", ALIGN, choice="c1", ks=KS),
]


def table_size(keying: Keying, key: SentenceKey, positions: int) -> int:
    """The number of target sets a key of ``keying`` needs over ``positions`` positions."""
    return {
        "group": len(key.targets),
        "one": 1,
        "position": positions,
        "position+bit": 2 * positions,
    }[keying.cells]


def fixed_cells(keying: Keying, text: Text, at: np.ndarray | None = None) -> np.ndarray:
    """Each sentence's cell (n,), read at positions ``at`` (default: in order; -1: none)."""
    at = np.arange(len(text)) if at is None else at
    found = {
        "group": text.groups,
        "one": np.zeros(len(text), dtype=int),
        "position": at,
        "position+bit": 2 * at + text.bits,
    }[keying.cells]
    return np.where(at >= 0, found, -1)


def aligned_cells(keying: Keying, text: Text, positions: int) -> np.ndarray:
    """Each sentence's cell at each position (n, P)."""
    p = np.arange(positions)[None].repeat(len(text), 0)
    return 2 * p + text.bits[:, None] if keying.cells == "position+bit" else p


def corrected(z: np.ndarray, k: int) -> np.ndarray:
    """The probit of 1 - (1 - min p)^k over the first k columns of z (keys, K): the chance that
    the best of k independent keys' tests reaches the text's least p (Bonferroni's k min p to
    first order, without its cap at 1, so the mean of the probit stays finite)."""
    least = sf(z[:, :k]).min(1)
    return probit(np.minimum(-np.expm1(k * np.log1p(-np.minimum(least, 1 - 1e-15))), 1 - 1e-15))


def flagged(z: np.ndarray, k: int, level: float = 0.01) -> np.ndarray:
    """Whether k min p < ``level`` (Bonferroni, as key rotation tests) per row of z (keys, K)."""
    return k * sf(z[:, :k]).min(1) < level
