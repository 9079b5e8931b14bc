"""`StageTimer`: wall-clock seconds spent per named stage (measurement model, embedder, mapper).

The core's parts add to one shared timer; benchmarks read and reset it. It never changes results.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager


class StageTimer:
    """Accumulates seconds per stage name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Adds the time spent inside the ``with`` block to stage ``name``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start

    def reset(self) -> None:
        """Forgets every stage's time."""
        self.seconds.clear()

    def totals(self) -> dict[str, float]:
        """Seconds per stage, as a plain dict."""
        return dict(self.seconds)
