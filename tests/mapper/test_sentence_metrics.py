"""The figure of merit of a sentence key space (mapper.sentence_metrics.surviving_evidence) on
hand-made pools."""

from __future__ import annotations

import math

import torch

from mapper.sentence_metrics import surviving_evidence
from watermark.sentences.key import SentenceKey


def test_surviving_evidence_by_hand() -> None:
    """Two hand-made pools: the kept candidate's z and its expected z after the flip model."""
    plain = SentenceKey(
        torch.tensor([0, 1]), torch.tensor([], dtype=torch.long), torch.ones(1, 2).bool()
    )
    pool = torch.tensor([[1.0, -1.0, 0.5, 0.5], [2.0, 2.0, 2.0, 2.0]])  # the second hits both
    found = surviving_evidence([pool], [plain], (0.5, 0.6, 0.9, 1.0), candidates=2)
    # kept: row 1, margins 1.0 (bin 1-2: kept 0.9), z = 2 / sqrt(2), after: times 2 * 0.9 - 1
    assert math.isclose(found["z"], math.sqrt(2), rel_tol=1e-6)
    assert math.isclose(found["z_after"], 0.8 * math.sqrt(2), rel_tol=1e-6)
    assert math.isclose(surviving_evidence([pool], [plain], (1,) * 4, 1)["z"], 0.0, abs_tol=1e-9)
    own = SentenceKey(
        torch.tensor([0]), torch.tensor([1]), torch.tensor([[False], [True]]), own=True
    )
    one = torch.tensor([[3.0, 1.0, 1.0, 1.0]])  # group 1 (v_1 > 0), target +: a hit
    found = surviving_evidence([one], [own], (0.5, 0.6, 0.8, 0.95), candidates=8)
    # margins: v_0 at 2 (bin 2-inf: 0.95), v_1 at 2/3 (bin 0.5-1: 0.6): z 1, after 0.9 * 0.6
    assert math.isclose(found["z"], 1.0) and math.isclose(found["z_after"], 0.54, rel_tol=1e-6)


def test_the_survival_aware_choice_keeps_the_candidate_whose_evidence_lasts() -> None:
    """Two candidates that hit both outputs: the layer keeps the larger score, the survival
    choice the one whose signs sit in the bins a rewrite keeps."""
    key = SentenceKey(
        torch.tensor([0, 1]), torch.tensor([], dtype=torch.long), torch.ones(1, 2).bool()
    )
    pool = torch.tensor([[4.0, 4.0, 0.1, 0.1, 0.1, 0.1], [1.0] * 6])  # margins 2.86 and 1
    kept = (0.5, 0.5, 0.6, 0.95)
    layer = surviving_evidence([pool], [key], kept, 2)
    survival = surviving_evidence([pool], [key], kept, 2, choice="survival")
    assert math.isclose(layer["z_after"], 0.9 * math.sqrt(2), rel_tol=1e-6)  # row 0: bin 2-inf
    assert survival["z_after"] >= layer["z_after"]
    unkind = (0.5, 0.5, 0.95, 0.6)  # the large margins flip more: the survival choice moves
    assert (
        surviving_evidence([pool], [key], unkind, 2, choice="survival")["z_after"]
        > (surviving_evidence([pool], [key], unkind, 2)["z_after"])
    )


def test_a_power_of_the_margin_weights_leans_on_the_signs_far_from_zero() -> None:
    """One candidate hitting both margin-weighted outputs, one far from zero and one near it:
    power 1 is the test's z; a larger power moves z toward the far sign alone, whose survival
    (bin 2-inf) then sets most of the z after the rewrite."""
    from watermark.sentences.key import margin_weights

    key = SentenceKey(
        torch.tensor([0, 1]), torch.tensor([], dtype=torch.long), torch.ones(1, 2).bool(),
        margin=True,
    )  # fmt: skip
    pool = torch.tensor([[3.0, 0.2, 1.0, 1.0]])  # margins 2.31 and 0.15
    w = margin_weights(pool, key.dims).float()[0]
    kept = (0.5, 0.6, 0.9, 1.0)  # the near sign is a coin after the rewrite, the far one stays
    for power in (1.0, 3.0):
        found = surviving_evidence([pool], [key], kept, 1, power=power)
        wp = w**power
        assert math.isclose(found["z"], float(wp.sum() / wp.norm()), rel_tol=1e-6)
        assert math.isclose(found["z_after"], float(wp[0] / wp.norm()), rel_tol=1e-6)
    assert (
        surviving_evidence([pool], [key], kept, 1)["z"]
        == surviving_evidence([pool], [key], kept, 1, power=1.0)["z"]
    )
    light, heavy = (surviving_evidence([pool], [key], kept, 1, power=p) for p in (1.0, 3.0))
    assert heavy["kept_share"] > light["kept_share"]
