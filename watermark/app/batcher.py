"""Batching of concurrent detection requests into detector calls, behind a bounded queue.

Each request's texts wait in one FIFO queue as (request, index) items. A single worker takes up
to ``max_batch`` items that share the request options' group (the windowed-test sizes), runs the
detector on them in one worker thread (so the event loop keeps accepting requests), and hands
each request its results once all of its texts are done. The queue holds at most ``max_queue``
texts and ``max_work`` units of work (each request states its own, e.g. tokens x tests): a request
that would go past either is refused at once (:class:`QueueFullError`), so memory and the wait
stay bounded whatever the load.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

# detect(texts, group) -> one result per text, in order
DetectFn = Callable[[list[str], Hashable], list[Any]]


class QueueFullError(Exception):
    """The queue has no room for a request; ``retry_after`` is a wait estimate in seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"detection queue full; retry after {retry_after} s")
        self.retry_after = retry_after


@dataclass
class _Request:
    texts: list[str]
    group: Hashable
    future: asyncio.Future
    work: float = 0.0  # per text
    results: list[Any] = field(init=False)
    left: int = field(init=False)  # texts not yet detected

    def __post_init__(self) -> None:
        self.results, self.left = [None] * len(self.texts), len(self.texts)


class Batcher:
    """Queues texts of concurrent requests and detects them in batches of ``max_batch``."""

    def __init__(
        self, detect: DetectFn, max_batch: int, max_queue: int, max_work: float = math.inf
    ) -> None:
        if max_batch < 1 or max_queue < 1 or max_work <= 0:
            raise ValueError("max_batch and max_queue must be >= 1, max_work > 0")
        self.detect, self.max_batch, self.max_queue = detect, max_batch, max_queue
        self.max_work = max_work
        self.work = 0.0  # work of the queued texts
        self.items: deque[tuple[_Request, int]] = deque()
        self.rate = 0.0  # texts per second of the last batch (for Retry-After)
        self._wake: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="detect")

    @property
    def waiting(self) -> int:
        """Texts in the queue (not yet taken into a batch)."""
        return len(self.items)

    def start(self) -> None:
        """Starts the worker on the running event loop."""
        self._wake = asyncio.Event()
        self._worker = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stops the worker; requests still queued get an error."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        for request, _ in self.items:
            if not request.future.done():
                request.future.set_exception(RuntimeError("the server is shutting down"))
        self.items.clear()
        self.work = 0.0
        self._pool.shutdown(wait=False)

    async def submit(
        self, texts: Sequence[str], group: Hashable = None, work: float = 0.0
    ) -> list[Any]:
        """The results of ``texts`` (in order), once detected; raises :class:`QueueFullError`.

        ``work``: the request's work, counted against ``max_work`` while its texts wait.
        """
        if self._wake is None:
            raise RuntimeError("Batcher.start() was not called")
        texts = list(texts)
        if not texts:
            return []
        if self.waiting + len(texts) > self.max_queue or self.work + work > self.max_work:
            raise QueueFullError(self.retry_after(len(texts)))
        loop = asyncio.get_running_loop()
        request = _Request(texts, group, loop.create_future(), work / len(texts))
        self.work += work
        self.items.extend((request, i) for i in range(len(texts)))
        self._wake.set()
        return await request.future

    def retry_after(self, extra: int = 0) -> int:
        """Seconds until the queue has likely drained enough for ``extra`` more texts."""
        if self.rate <= 0:
            return 1
        return max(1, math.ceil((self.waiting + extra - self.max_queue) / self.rate) + 1)

    def _take(self) -> list[tuple[_Request, int]]:
        """The next batch: queue order, up to ``max_batch`` items of the first item's group."""
        group = self.items[0][0].group
        batch, rest = [], deque()
        while self.items and len(batch) < self.max_batch:
            item = self.items.popleft()
            (batch if item[0].group == group else rest).append(item)
        self.items.extendleft(reversed(rest))
        self.work = max(0.0, self.work - sum(request.work for request, _ in batch))
        return batch

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.items:
                batch = [item for item in self._take() if not item[0].future.done()]
                if not batch:
                    continue
                texts = [request.texts[i] for request, i in batch]
                start = time.perf_counter()
                try:
                    results = await loop.run_in_executor(
                        self._pool, self.detect, texts, batch[0][0].group
                    )
                except Exception as err:  # noqa: BLE001 - handed to each waiting request
                    logger.exception("detection failed on a batch of %d texts", len(texts))
                    for request, _ in batch:
                        if not request.future.done():
                            request.future.set_exception(err)
                    continue
                self.rate = len(texts) / max(time.perf_counter() - start, 1e-6)
                for (request, i), result in zip(batch, results):
                    request.results[i] = result
                    request.left -= 1
                    if request.left == 0 and not request.future.done():
                        request.future.set_result(request.results)
