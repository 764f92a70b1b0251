"""Outages and leaks (issue 14, item 5), against a second, non-embedded server we can restart
and stop at will (see ``second_server`` in conftest.py)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import uuid
import weakref
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from shared_core import MemoryEngine
from shared_core.config import EngineConfig
from shared_core.errors import DatabaseUnavailableError
from tests.engines import sharing_models

from .conftest import SecondServer

pytestmark = pytest.mark.slow

CONNECT_TIMEOUT = 2.0


def _engine(engine: MemoryEngine, dsn: str, **config: Any) -> MemoryEngine:
    """An engine on ``dsn`` sharing the session engine's loaded models."""
    return sharing_models(engine, dsn, EngineConfig(connect_timeout=CONNECT_TIMEOUT, **config))


def _backends(server: SecondServer) -> int:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
            "'client backend' AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def _who(server: SecondServer) -> list[tuple[Any, ...]]:
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        return conn.execute(
            "SELECT pid, state, backend_start, left(query, 60) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        ).fetchall()


def _settle(server: SecondServer, expected: int) -> int:
    """The number of client backends once closing ones are gone (a close is asynchronous on the
    server side)."""
    deadline = time.monotonic() + 10
    while (n := _backends(server)) > expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return n


@pytest.fixture
def remote(engine: MemoryEngine, second_server: SecondServer) -> Iterator[MemoryEngine]:
    eng = _engine(engine, second_server.dsn)
    yield eng
    eng.close()


def test_a_restart_mid_loop_is_invisible_to_reads(remote: MemoryEngine, second_server: SecondServer) -> None:
    bank = f"restart-{uuid.uuid4().hex[:8]}"
    ids = remote.retain(
        ["Alice joined Google in March 2021.", "Bob moved to Paris."], bank=bank, progress=False
    )
    outcome: Counter[str] = Counter()
    for step in range(10):
        if step in (3, 7):
            second_server.stop("fast")
            second_server.start()
        assert remote.recall("Where does Alice work?", bank=bank).memories  # no error
        assert remote.get(ids[0], bank=bank) is not None
        assert remote.stats(bank).memories == len(ids)
        assert asyncio.run(remote.arecall("Bob", bank=bank)).memories
        try:
            ids += remote.retain([f"Step {step}: Carol fed the herons."], bank=bank, progress=False)
            outcome["retain ok"] += 1
        except DatabaseUnavailableError:  # typed and retryable, never a raw psycopg error
            outcome["retain unavailable"] += 1
    print(f"\nrestarts: 2, reads: 40 ok, writes: {dict(outcome)}")
    assert remote.stats(bank).memories == len(ids)


def test_an_outage_raises_one_typed_retryable_error_quickly(
    remote: MemoryEngine, second_server: SecondServer
) -> None:
    bank = f"outage-{uuid.uuid4().hex[:8]}"
    remote.retain(["Dana met Eli in Oslo."], bank=bank, progress=False)
    second_server.stop("fast")
    waits: list[float] = []
    try:
        for call in (
            lambda: remote.recall("Dana", bank=bank),
            lambda: remote.stats(bank),
            lambda: remote.retain(["x y z"], bank=bank, progress=False),
            lambda: asyncio.run(remote.arecall("Dana", bank=bank)),
        ):
            started = time.monotonic()
            with pytest.raises(DatabaseUnavailableError) as info:
                call()
            elapsed = time.monotonic() - started
            waits.append(round(elapsed, 1))
            assert info.value.retryable
            # Bounded by the connect timeout (2 s here, plus one retry of a read), not 30 s.
            assert elapsed < 4 * CONNECT_TIMEOUT + 2, elapsed
    finally:
        second_server.start()
    started = time.monotonic()
    assert remote.recall("Dana", bank=bank).memories  # recovers by itself
    print(
        f"\noutage: recall/stats/retain/arecall failed after {waits} s "
        f"(connect_timeout {CONNECT_TIMEOUT} s); first recall after restart "
        f"{time.monotonic() - started:.1f} s"
    )


def test_sync_use_of_async_methods_leaks_no_connection(
    engine: MemoryEngine, second_server: SecondServer
) -> None:
    bank = f"leak-{uuid.uuid4().hex[:8]}"
    with _engine(engine, second_server.dsn) as eng:
        eng.retain(["Fay sails."], bank=bank, progress=False)
    baseline = _settle(second_server, 0)
    for _ in range(5):
        eng = _engine(engine, second_server.dsn)
        asyncio.run(eng.arecall("Fay", bank=bank))
        asyncio.run(eng.astats(bank))
        eng.close()
    assert _settle(second_server, baseline) == baseline, _who(second_server)


def test_an_unclosed_engine_is_finalised(engine: MemoryEngine, second_server: SecondServer) -> None:
    bank = f"final-{uuid.uuid4().hex[:8]}"
    baseline = _settle(second_server, 0)
    eng = _engine(engine, second_server.dsn)
    eng.retain(["Gus rows."], bank=bank, progress=False)
    asyncio.run(eng.arecall("Gus", bank=bank))
    assert _backends(second_server) > baseline
    ref = weakref.ref(eng)
    with pytest.warns(ResourceWarning):
        del eng
        gc.collect()
    assert ref() is None, "the engine was never collected"
    assert _settle(second_server, baseline) == baseline


def test_no_progress_monitor_thread_outlives_an_engine(
    engine: MemoryEngine, second_server: SecondServer
) -> None:
    with _engine(engine, second_server.dsn, progress_threshold=1) as eng:
        eng.retain([f"Hal note {i}." for i in range(3)], bank="tqdm", progress=True)
    monitors = [t.name for t in threading.enumerate() if type(t).__name__ == "TMonitor"]
    assert monitors == []
