"""What detection reads of a chunk of texts with the models: each text's gate, its scored steps
and the reads of those steps under every key the config tests (:func:`read_texts`); the
detector then assembles each key's result from them (:mod:`watermark.detect.assembly`).

A text's reads do not depend on the other texts of its chunk: batched (``fixed``) the texts
share the models' forwards in fixed shapes (:mod:`watermark.core.fixed_shapes`), otherwise
each text is read alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from watermark.core.green_lists import TokenReads
from watermark.core.scoring import WatermarkCore


@dataclass
class TextReads:
    """What one text of T tokens was read as.

    Attributes:
        ids: Its generator token ids s_1..s_T.
        entropy: Float (T,): the gate entropy of each step (NaN where not computed).
        steps: Its scored steps (1-based, increasing).
        reads: Per key, the reads of its scored steps (:meth:`GreenLists.read`).
    """

    ids: list[int]
    entropy: torch.Tensor
    steps: list[int]
    reads: list[TokenReads]


def read_texts(
    core: WatermarkCore, ids_list: Sequence[list[int]], fixed: bool, progress: bool = False
) -> list[TextReads]:
    """The reads of texts with some tokens each, in order.

    Args:
        core: The scoring core (models, keys, config).
        ids_list: Each text's generator token ids.
        fixed: The texts share the models' forwards in fixed shapes.
        progress: Show progress within each text (not with ``fixed``).
    """
    if progress and not fixed:
        gates = [core.text_gate(ids, progress=True) for ids in ids_list]
    else:
        gates = core.text_gates(ids_list, fixed)
    steps = [torch.nonzero(gate.gated).flatten().add(1).tolist() for gate in gates]
    reads: dict[int, list[TokenReads]] = {}  # per text: its steps' reads per key
    todo = range(len(ids_list))
    for group in [todo] if fixed else [[n] for n in todo]:
        found = core.green_lists(
            [t for n in group for t in steps[n]],
            [ids_list[n] for n in group for _ in steps[n]],
            progress=progress and not fixed,
            fixed=fixed,
        )
        drawn = [
            (ids_list[n][t - 1], ids_list[n][t - 2] if t >= 2 else 0)
            for n in group
            for t in steps[n]
        ]
        tokens, previous = torch.tensor(drawn, dtype=torch.long).reshape(-1, 2).T
        per_key = core.reads(found, tokens, previous)
        at = 0
        for n in group:
            rows = slice(at, at + len(steps[n]))
            reads[n] = [key_reads.select(rows) for key_reads in per_key]
            at += len(steps[n])
    return [TextReads(ids_list[n], gates[n].entropy, steps[n], reads[n]) for n in todo]
