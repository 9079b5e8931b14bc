"""One answer on every thread count: the key and the statistic are computed at one intra-op thread.

A float product or sum may split its work by the number of threads, and where it does the last
bits of the result depend on that number (MKL's products on AVX-512 CPUs, torch's long sums
everywhere). Those bits reach decisions: a mapper output's sign picks a green list, an entropy
against ``alpha`` opens the gate, the expected green count is the test's null mean. So every
computation that carries the key or the statistic runs at exactly one intra-op thread, whatever
the process was given, and a text's result is the same on a laptop and on a 64-core host with
the same CPU kind (the guide's "Same answer on every machine" says what is and is not covered).

* :func:`one_thread`: a block at one intra-op thread. Entered by several threads at once it is
  held until the last one leaves, and only then is the process's thread count restored.
* :func:`spread`: independent jobs (texts) side by side on a pool of threads, one per thread
  the process was given, each at one intra-op thread: the cores work on several texts instead
  of splitting each product, which on 2 cores is faster than before, not slower.

On CUDA the thread count decides nothing that is computed there: both run the block as it is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import torch

T = TypeVar("T")
R = TypeVar("R")

_lock = threading.Lock()
_holders = 0  # threads inside one_thread now
_restore_to = 0  # the process's thread count when the first of them entered


def threads_given() -> int:
    """Intra-op threads the process runs with outside :func:`one_thread` (now, if no one is
    inside it)."""
    with _lock:
        return _restore_to if _holders else torch.get_num_threads()


@contextmanager
def one_thread(on: bool = True) -> Iterator[None]:
    """Runs the block at one intra-op thread (``on=False``: as it is, for CUDA)."""
    global _holders, _restore_to
    if not on:
        yield
        return
    with _lock:
        if _holders == 0:
            _restore_to = torch.get_num_threads()
        _holders += 1
        torch.set_num_threads(1)  # this thread's count, and the default of new threads
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _restore_to != 1:
                torch.set_num_threads(_restore_to)


def spread(run: Callable[[T], R], jobs: Sequence[T], on: bool = True) -> list[R]:
    """``[run(job) for job in jobs]``, each at one intra-op thread, on as many threads as the
    process was given (``on=False``: in this thread, as it is). ``run`` must be safe to call
    from several threads at once; results keep the order of ``jobs``."""
    if not on:
        return [run(job) for job in jobs]
    workers = min(threads_given(), len(jobs))
    with one_thread():
        if workers <= 1:
            return [run(job) for job in jobs]

        def job_at_one_thread(job: T) -> R:
            with one_thread():
                return run(job)

        with ThreadPoolExecutor(workers, thread_name_prefix="watermark") as pool:
            return list(pool.map(job_at_one_thread, jobs))
