"""Every benchmark runs as a module of the ``benchmarks`` package (``python -m
benchmarks.NAME``) and answers ``--help``; the GPU suite calls them that way."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import benchmarks

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    m.name
    for m in pkgutil.iter_modules(benchmarks.__path__)
    if hasattr(importlib.import_module(f"benchmarks.{m.name}"), "main")
)


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_benchmark_answers_help(name: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as done:
        importlib.import_module(f"benchmarks.{name}").main(["--help"])
    assert done.value.code == 0 and "usage:" in capsys.readouterr().out


def test_the_gpu_suite_runs_the_benchmarks_as_modules() -> None:
    assert len(SCRIPTS) == 15
    suite = (ROOT / "benchmarks" / "gpu_suite.sh").read_text(encoding="utf-8")
    assert "-m benchmarks.bench_gpu" in suite and "benchmarks/bench_" not in suite
