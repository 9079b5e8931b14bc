"""The figure of merit of a sentence key space (mapper.sentence_metrics.surviving_evidence) on
hand-made pools."""

from __future__ import annotations

import math

import pytest
import torch

from mapper.sentence_metrics import surviving_evidence
from watermark.base import SENTENCE_CHOICES
from watermark.sentences.key import MARGIN_KEPT, SentenceKey, weight_table


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
    assert found["z_after_ci95"] == pytest.approx([found["z_after"]] * 2)  # one pool
    assert math.isclose(surviving_evidence([pool], [plain], (1,) * 4, 1)["z"], 0.0, abs_tol=1e-9)
    own = SentenceKey(
        torch.tensor([0]), torch.tensor([1]), torch.tensor([[False], [True]]), own=True
    )
    one = torch.tensor([[3.0, 1.0, 1.0, 1.0]])  # group 1 (v_1 > 0), target +: a hit
    found = surviving_evidence([one], [own], (0.5, 0.6, 0.8, 0.95), candidates=8)
    # margins: v_0 at 2 (bin 2-inf: 0.95), v_1 at 2/3 (bin 0.5-1: 0.6): z 1, after 0.9 * 0.6
    assert math.isclose(found["z"], 1.0) and math.isclose(found["z_after"], 0.54, rel_tol=1e-6)


def test_the_survival_choice_keeps_the_candidate_whose_evidence_lasts() -> None:
    """Candidate 0 hits one output far from zero and misses one near it; candidate 1 hits both
    at margin 2/3. The tanh score keeps 0; under the product's flip model (MARGIN_KEPT) the
    survival choice keeps 1, whose z after a rewrite is higher, and is never below the score's
    choice when the measured flips are the product's."""
    key = SentenceKey(
        torch.tensor([0, 1]),
        torch.tensor([], dtype=torch.long),
        torch.ones(1, 2).bool(),
        margin=True,
    )
    pool = torch.tensor([[4.0, -0.2, 1.0, 1.0], [0.5, 0.5, 1.0, 1.0]])
    groups = key.groups(pool, None)
    assert int(torch.argmax(key.scores(pool, groups))) == 0
    assert int(torch.argmax(key.survival(pool, groups))) == 1
    # by hand: candidate 1, margins 2/3 (bin 0.5-1, weight 12, kept 0.8235) on both outputs
    k1 = MARGIN_KEPT[1]
    survival = surviving_evidence([pool], [key], MARGIN_KEPT, 2, choice="survival")
    assert math.isclose(survival["z_after"], (2 * k1 - 1) * math.sqrt(2), rel_tol=1e-5)
    # candidate 0: margins 2.58 (weight 31) and 0.13 (weight 5), one hit and one miss
    w, k = torch.tensor([31.0, 5.0]), torch.tensor([MARGIN_KEPT[3], MARGIN_KEPT[0]])
    expected = float((w * torch.tensor([1.0, -1.0]) * (2 * k - 1)).sum() / w.norm())
    score = surviving_evidence([pool], [key], MARGIN_KEPT, 2)
    assert math.isclose(score["z_after"], expected, rel_tol=1e-5)
    assert survival["z_after"] > score["z_after"]
    pools = list(torch.randn(20, 6, 16, generator=torch.Generator().manual_seed(0)))
    both = [
        surviving_evidence(pools, [key], MARGIN_KEPT, 6, c)["z_after"] for c in SENTENCE_CHOICES
    ]
    assert both[1] >= both[0]
    low, high = surviving_evidence(pools, [key], MARGIN_KEPT, 6)["z_after_ci95"]
    assert low < both[0] < high  # 20 pools: an interval around the mean
    with pytest.raises(ValueError, match="choice"):
        surviving_evidence(pools, [key], MARGIN_KEPT, 6, "layer")


def test_a_power_of_the_margin_weights_leans_on_the_signs_far_from_zero() -> None:
    """One candidate hitting both margin-weighted outputs, one far from zero and one near it:
    power 1 is the test's z; a larger power moves z toward the far sign alone, whose survival
    (bin 2-inf) then sets most of the z after the rewrite. The weights stay whole eighths with
    the top at 31."""
    pool = torch.tensor([[3.0, 0.2, 1.0, 1.0]])  # margins 2.31 and 0.15
    kept = (0.5, 0.6, 0.9, 1.0)  # the near sign is a coin after the rewrite, the far one stays
    found = {}
    for power, table in ((1, [5, 12, 20, 31]), (3, [0, 2, 9, 31])):
        assert weight_table(power).tolist() == table
        key = SentenceKey(
            torch.tensor([0, 1]),
            torch.tensor([], dtype=torch.long),
            torch.ones(1, 2).bool(),
            margin=True,
            power=power,
        )
        w = torch.tensor([31.0, float(table[0])])
        found[power] = surviving_evidence([pool], [key], kept, 1)
        assert math.isclose(found[power]["z"], float(w.sum() / w.norm()), rel_tol=1e-6)
        assert math.isclose(found[power]["z_after"], float(31 / w.norm()), rel_tol=1e-6)
    assert found[3]["kept_share"] > found[1]["kept_share"]
    with pytest.raises(ValueError, match="power"):
        SentenceKey.of("k", 8, 2, test="margin", power=5)
