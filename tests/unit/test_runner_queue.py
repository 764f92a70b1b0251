"""A statement handed to the sync runner's executor waits there for a thread; that wait is taken
off the pool's timeout, so a call queued behind many callers fails with the pool's timeout
instead of waiting it again for a connection (a fake pool records the timeout it is asked for)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from psycopg_pool import PoolTimeout

from shared_core.storage import runner
from shared_core.storage.plan import Query


class _BusyPool:
    """A pool whose connections are all in use: every request times out at once, recorded."""

    timeout = 1.0

    def __init__(self) -> None:
        self.asked: list[float | None] = []

    @contextlib.contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Any]:
        self.asked.append(timeout)
        raise PoolTimeout(f"couldn't get a connection after {timeout} sec")
        yield  # pragma: no cover


def test_a_statement_run_in_the_calling_thread_waits_the_pools_own_timeout() -> None:
    pool = _BusyPool()
    assert isinstance(runner._one_off_sync(pool, Query("SELECT 1")), PoolTimeout)  # type: ignore[arg-type]
    assert pool.asked == [None]


@pytest.mark.parametrize(("queued_s", "most"), [(0.0, 1.0), (0.6, 0.4), (5.0, runner._LAST_WAIT_S)])
def test_time_queued_in_the_executor_is_taken_off_the_pools_timeout(queued_s: float, most: float) -> None:
    pool = _BusyPool()
    result = runner._one_off_sync(pool, Query("SELECT 1"), time.monotonic() - queued_s)  # type: ignore[arg-type]
    assert isinstance(result, PoolTimeout)
    (asked,) = pool.asked
    assert asked is not None and runner._LAST_WAIT_S <= asked <= most


def test_statements_queued_behind_a_busy_executor_ask_for_what_is_left_of_the_timeout() -> None:
    pool = _BusyPool()
    with ThreadPoolExecutor(max_workers=1) as executor:
        executor.submit(time.sleep, 0.3)  # the executor's one thread is busy for a while
        results = runner._concurrently_sync(pool, executor, (Query("SELECT 1"), Query("SELECT 2")))  # type: ignore[arg-type]
    assert all(isinstance(r, PoolTimeout) for r in results)
    # The last statement runs at once in the calling thread, with the pool's timeout; the first
    # waited ~0.3 s for the executor's thread, which its wait for a connection does not repeat.
    own, queued = pool.asked
    assert own is None
    assert queued is not None and queued < pool.timeout - 0.2
