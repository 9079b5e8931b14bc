"""Seconds per stage of a loaded watermark, measured from outside: forward hooks on its models.

The runtime holds no timer. :class:`StageTimes` registers PyTorch forward hooks on the
measurement model (``mm``), the sentence embedder (``embed``) and the mapper (``map``) of a
:class:`~watermark.api.Watermark` while its ``with`` block runs, and adds each forward's
wall-clock seconds to its stage; it never changes a result. With ``sync`` (profiling on a GPU)
each forward waits for the device at its start and end, so queued kernels count where they were
launched. A model that is also the generator being timed (the MM fused into the generator's
forward) is left out: its forwards are the generator's. sentence-transformers' ``encode`` calls
its model's ``forward`` directly, which runs no hooks, so the embedder is timed on its modules
(transformer, pooling, ...), each called in turn.
"""

from __future__ import annotations

import time
from collections import defaultdict

import torch


class StageTimes:
    """Adds the forward time of a watermark's models per stage, inside ``with``.

    Args:
        wm: A loaded watermark.
        sync: Wait for CUDA at each forward's start and end.
        generator: The generator being timed, whose forwards are not a stage of their own.
    """

    def __init__(self, wm: object, sync: bool = False, generator: object | None = None) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.sync = sync
        embedder = wm.core.semantic.embedder
        parts = {
            "mm": [wm.core.measurement.model],
            "embed": list(embedder.children()) or [embedder],
            "map": [wm.core.semantic.mapper],
        }
        self.parts = {k: m for k, m in parts.items() if generator not in m}
        self._hooks: list = []
        self._started: dict[str, list[float]] = defaultdict(list)

    def _wait(self) -> None:
        if self.sync and torch.cuda.is_available():
            torch.cuda.synchronize()

    def _hooks_of(self, name: str) -> tuple:
        def before(*_: object) -> None:
            self._wait()
            self._started[name].append(time.perf_counter())

        def after(*_: object) -> None:
            self._wait()
            self.seconds[name] += time.perf_counter() - self._started[name].pop()

        return before, after

    def __enter__(self) -> StageTimes:
        for name, modules in self.parts.items():
            before, after = self._hooks_of(name)
            for module in modules:
                self._hooks.append(module.register_forward_pre_hook(before))
                self._hooks.append(module.register_forward_hook(after))
        return self

    def __exit__(self, *_: object) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()

    def totals(self) -> dict[str, float]:
        """Seconds per stage, as a plain dict (stages that ran)."""
        return dict(self.seconds)
