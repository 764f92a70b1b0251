"""Run one call in several threads at once, started together: the concurrency loop every
latency benchmark shares (``recall_latency.py`` for ours, ``_plain.py`` for the baseline)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["run_clients"]

T = TypeVar("T")


def run_clients(call: Callable[[int, int], T], calls_per_client: int, clients: int) -> tuple[list[T], float]:
    """Run ``call(client, i)`` ``calls_per_client`` times in each of ``clients`` threads, ``i``
    numbering the calls ``0 .. clients * calls_per_client - 1`` across clients. The threads
    start on one barrier, so the wall time covers only the calls. Returns the results (client
    by client, in call order) and the wall time in seconds; the first error of any thread is
    raised after all have finished.

    >>> run_clients(lambda c, i: (c, i), 2, 2)[0]
    [(0, 0), (0, 1), (1, 2), (1, 3)]
    """
    results: list[list[T]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(clients + 1)

    def worker(c: int) -> None:
        barrier.wait()
        try:
            for j in range(calls_per_client):
                results[c].append(call(c, c * calls_per_client + j))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if errors:
        raise errors[0]
    return [r for per in results for r in per], wall
