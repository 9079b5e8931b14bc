"""`StageTimer`: wall-clock seconds spent per named stage (measurement model, embedder, mapper).

The core's parts add to one shared timer; benchmarks read and reset it. It never changes results.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager


class StageTimer:
    """Accumulates seconds per stage name.

    With ``sync`` (profiling on a GPU) each stage waits for the device at its start and end, so
    queued kernels count where they were launched; the default never synchronises.
    """

    def __init__(self, sync: bool = False) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.sync = sync

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Adds the time spent inside the ``with`` block to stage ``name``."""
        self._wait()
        start = time.perf_counter()
        try:
            yield
        finally:
            self._wait()
            self.seconds[name] += time.perf_counter() - start

    def _wait(self) -> None:
        if self.sync:
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()

    def reset(self) -> None:
        """Forgets every stage's time."""
        self.seconds.clear()

    def totals(self) -> dict[str, float]:
        """Seconds per stage, as a plain dict."""
        return dict(self.seconds)
