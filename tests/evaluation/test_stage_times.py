"""Stage times measured from outside the runtime (evaluation.stage_times): forward hooks on a
loaded watermark's models, removed afterwards, that change no result."""

from __future__ import annotations

from types import SimpleNamespace

from evaluation.stage_times import StageTimes
from tests.helpers import fused_watermark

TEXT = "river bank city water stone tree river bank city water stone tree " * 2


def test_detection_time_is_split_into_the_models_and_the_hooks_leave(tiny: SimpleNamespace) -> None:
    wm = tiny.make()
    before = wm.detect([TEXT])[0]
    with StageTimes(wm) as stages:
        during = wm.detect([TEXT])[0]
    assert set(stages.totals()) == {"mm", "embed", "map"}
    assert all(seconds > 0 for seconds in stages.totals().values())
    assert during.to_dict() == before.to_dict()  # timing changes nothing
    wm.detect([TEXT])
    assert set(stages.totals()) == {"mm", "embed", "map"}  # after the block: nothing added
    models = (wm.core.measurement.model, wm.core.semantic.mapper, wm.core.semantic.embedder)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in models)


def test_a_measurement_model_that_is_the_generator_is_not_a_stage(tiny: SimpleNamespace) -> None:
    wm = fused_watermark(tiny)
    with StageTimes(wm, generator=tiny.gen) as stages:
        wm.generate(tiny.gen, ["river bank"], max_new_tokens=4, seed=0)
    assert "mm" not in stages.totals() and "map" in stages.totals()
