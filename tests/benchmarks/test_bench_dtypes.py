"""The dtype profile ranks the profiler's events by the time asked for, per step."""

from __future__ import annotations

from types import SimpleNamespace

from benchmarks.bench_dtypes import top_events


def test_top_events_rank_by_the_field_and_divide_by_steps() -> None:
    events = [
        SimpleNamespace(key="aten::mm", self_device_time_total=8000, self_cpu_time_total=100),
        SimpleNamespace(key="aten::copy_", self_device_time_total=2000, self_cpu_time_total=900),
        SimpleNamespace(key="x" * 120, self_device_time_total=4000, self_cpu_time_total=0),
    ]
    found = top_events(events, "self_device_time_total", steps=4, count=2)
    assert found == [["aten::mm", 2.0], ["x" * 90, 1.0]]
    assert top_events(events, "self_cpu_time_total", steps=1)[0] == ["aten::copy_", 0.9]
